#!/usr/bin/env bash
# The two-shell scenario at small scale: `gpuz take-mem` holds memory of a
# small simulated GPU in the background while `gpuz linear train` runs all
# three modes on the same device. cuda must report OOM; cache and cpu must
# complete. Then the holder is interrupted and must release its memory.
#
#   scripts/two-shell.sh [BIN]     (default BIN: bin/gpuz)
set -euo pipefail

BIN=${1:-bin/gpuz}
case $BIN in */*) ;; *) BIN=./$BIN ;; esac
tmp=$(mktemp -d)
export GPUZ_SIM_LEDGER=$tmp/ledger # a ledger of our own: no other run interferes
holder=
cleanup() {
	[[ -n $holder ]] && kill "$holder" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# The small linear model's training needs 1.29 MiB with every block
# resident and 1.03 MiB under the window policy with a window of one block
# (DictCache's: all of Adam's state stays on the device, only weights and
# activations page): on a 2 MiB device with 900 KiB taken (1.12 MiB free),
# cuda cannot fit and cache can.
device=sim:2MiB
echo "+ $BIN take-mem 900KiB --device $device &"
"$BIN" take-mem 900KiB --device "$device" >"$tmp/holder.out" 2>&1 &
holder=$!
for _ in $(seq 100); do
	grep -q holding "$tmp/holder.out" 2>/dev/null && break
	sleep 0.1
done
cat "$tmp/holder.out"
grep -q holding "$tmp/holder.out" || { echo "two-shell: take-mem did not start holding" >&2; exit 1; }

echo "+ $BIN linear train cuda,cache,cpu --scale small --device $device --win-size 1"
run_status=0
"$BIN" linear train cuda,cache,cpu --scale small --device "$device" --win-size 1 >"$tmp/run.out" 2>&1 || run_status=$?
cat "$tmp/run.out"

fail=0
# 3: the run completed but a mode (cuda, out of memory) did not.
((run_status == 3)) || { echo "two-shell: the run exited with status $run_status, want 3 (a mode did not complete)" >&2; fail=1; }
# A row of the Analyze table starts with its mode; its status is the last
# cell, a reason going to a note "[N] MODE: …" below the table.
row() { grep -E "^$1[[:space:]]" "$tmp/run.out" || true; }
{ row cuda | grep -Eq '[[:space:]]OOM \[[0-9]+\]$' && grep -q '^\[[0-9]*\] cuda: OOM: ' "$tmp/run.out"; } ||
	{ echo "two-shell: the cuda row does not report OOM" >&2; fail=1; }
for mode in cache cpu; do
	row "$mode" | grep -Eq '[[:space:]]ok$' || { echo "two-shell: the $mode row is not ok" >&2; fail=1; }
done

echo "+ kill -INT take-mem"
kill -INT "$holder"
status=0
wait "$holder" || status=$?
holder=
cat "$tmp/holder.out"
# 130: stopped by SIGINT, after releasing its memory.
((status == 130)) || { echo "two-shell: take-mem exited with status $status after SIGINT, want 130" >&2; fail=1; }
exit $fail
