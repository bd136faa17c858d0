#!/usr/bin/env bash
# One command that checks gpuz on a GPU and keeps everything it saw:
#
#   scripts/gpu-check.sh [--device D] [--bin BIN] [--out DIR] [--full|--small]
#
#   --device D   cuda[:N] (default), or sim[:SIZE] / cpu to check the default
#                build the same way on a machine without a GPU
#   --bin BIN    the gpuz binary to check; by default it is built: the GPU
#                binary (scripts/cuda-build.sh --fetch, bin/gpuz-cuda) for
#                cuda, the default one (make build, bin/gpuz) otherwise
#   --out DIR    where everything goes (default gpu-check-YYYYmmdd-HHMMSS)
#   --full       the full-scale workloads (the default on cuda)
#   --small      --scale small (the default on sim and cpu)
#
# It runs `gpuz version`, `gpuz selftest --device D`, `gpuz devices`, then
# each workload's train and eval with cuda,cache,cpu, --epochs 3 and --json,
# and `nvidia-smi -q` when there is an nvidia-smi. DIR holds each command's
# output (NAME.txt, NAME.json for the runs) and SUMMARY.md: every check's
# command, exit status and result, and each run's medians per mode. A check
# passes with status 0; status 3 (a mode did not complete, e.g. out of
# memory) is reported in the summary but is not a failure. Exits 1 when any
# check failed, 0 otherwise.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=$PATH:/usr/local/go/bin

device=cuda
bin=
out=
scale=
usage() {
	echo "usage: scripts/gpu-check.sh [--device D] [--bin BIN] [--out DIR] [--full|--small]" >&2
	exit 2
}
while (($#)); do
	case $1 in
	--device) device=${2:-}; shift ;;
	--bin) bin=${2:-}; shift ;;
	--out) out=${2:-}; shift ;;
	--full) scale=full ;;
	--small) scale=small ;;
	*) usage ;;
	esac
	shift
done
[[ -n $device ]] || usage
gpu=0
case $device in cuda | cuda:* | gpu | auto) gpu=1 ;; esac
[[ -n $scale ]] || { if ((gpu)); then scale=full; else scale=small; fi; }
out=${out:-gpu-check-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"

if [[ -z $bin ]]; then
	if ((gpu)); then
		bash scripts/cuda-build.sh --fetch
		bin=bin/gpuz-cuda
	else
		make -s build
		bin=bin/gpuz
	fi
fi
case $bin in */*) ;; *) bin=./$bin ;; esac
[[ -x $bin ]] || { echo "gpu-check: $bin is not an executable file" >&2; exit 2; }

checks=()   # NAME|exit status|result
failed=0
# check NAME CMD...: runs CMD with stdout and stderr in $out/NAME.txt, shows
# its last lines, and records its result.
check() {
	local name=$1 rc=0 result
	shift
	echo "== $name: $*"
	printf '$ %s\n' "$*" >"$out/$name.txt"
	"$@" >>"$out/$name.txt" 2>&1 || rc=$?
	tail -n 12 "$out/$name.txt"
	case $rc in
	0) result=passed ;;
	3) result="passed; a mode did not complete (status 3, see $name.txt)" ;;
	*) result="**FAILED**"; failed=$((failed + 1)) ;;
	esac
	checks+=("$name|$*|$rc|$result")
}

if command -v nvidia-smi >/dev/null 2>&1; then
	nvidia-smi -q >"$out/nvidia-smi.txt" 2>&1 || true
fi
check version "$bin" version
check selftest "$bin" selftest --device "$device"
check devices "$bin" devices
for workload in linear resnet attention; do
	for task in train eval; do
		check "$workload-$task" "$bin" "$workload" "$task" cuda,cache,cpu --device "$device" \
			--epochs 3 --scale "$scale" --json "$out/$workload-$task.json"
	done
done

# medians NAME: one table row per mode of run NAME's JSON.
medians() {
	local json=$out/$1.json
	[[ -s $json ]] || { echo "| $1 | - | - | no JSON written | |"; return; }
	if ! command -v python3 >/dev/null 2>&1; then
		echo "| $1 | - | - | see $1.json (no python3 to read it) | |"
		return
	fi
	python3 - "$1" "$json" <<'EOF'
import json, sys
name, path = sys.argv[1], sys.argv[2]
try:
    modes = json.load(open(path)).get("modes") or []
except Exception as e:
    print(f"| {name} | - | - | unreadable JSON: {e} | |")
    sys.exit()
for m in modes:
    st = m.get("stats") or {}
    med = st.get("median_seconds")
    med = f"{med:.6g}" if isinstance(med, (int, float)) and st.get("n") else "-"
    reason = (m.get("reason") or "").replace("|", "/").replace("\n", " ")
    print(f"| {name} | {m.get('mode', '?')} | {m.get('device', '?')} | {m.get('status', '?')} {reason} | {med} |")
EOF
}

{
	echo "# gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo
	echo "- binary: \`$bin\` ($(head -2 "$out/version.txt" | tail -1))"
	echo "- device: \`$device\`, scale: $scale, epochs: 3 (1 warm-up)"
	echo "- host: $(uname -srm), $(nproc) cores"
	if [[ -f $out/nvidia-smi.txt ]]; then
		echo "- nvidia-smi -q: nvidia-smi.txt"
	else
		echo "- nvidia-smi: not found"
	fi
	echo
	echo "## Checks"
	echo
	echo "| check | command | exit | result |"
	echo "|---|---|---|---|"
	for c in "${checks[@]}"; do
		IFS='|' read -r name cmd rc result <<<"$c"
		echo "| $name | \`$cmd\` | $rc | $result |"
	done
	echo
	echo "## Medians per run (seconds per timed epoch)"
	echo
	echo "| run | mode | device | status | median (s) |"
	echo "|---|---|---|---|---|"
	for workload in linear resnet attention; do
		for task in train eval; do
			medians "$workload-$task"
		done
	done
	echo
	if ((failed == 0)); then
		echo "All ${#checks[@]} checks passed."
	else
		echo "FAILED: $failed of ${#checks[@]} checks."
	fi
} >"$out/SUMMARY.md"

echo
echo "gpu-check: $out/SUMMARY.md"
tail -n 1 "$out/SUMMARY.md"
((failed == 0))
