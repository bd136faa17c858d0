#!/usr/bin/env bash
# Smoke test of a built gpuz binary: a small linear train and eval, a small
# attention train and eval, version, and the bad-input contract (exit
# status 2, one line on stderr).
#
#   scripts/smoke.sh [BIN]     (default BIN: bin/gpuz)
set -euo pipefail

BIN=${1:-bin/gpuz}
[[ -x $BIN ]] || { echo "smoke: $BIN is not an executable file; run make build first" >&2; exit 1; }
case $BIN in */*) ;; *) BIN=./$BIN ;; esac

# Each command gets at most this many seconds (they take about a second each).
LIMIT=${SMOKE_TIMEOUT:-300}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
	echo "smoke: FAIL: $*" >&2
	failures=$((failures + 1))
}

# run NAME CMD...: prints CMD, runs it with stdout in $tmp/NAME.out and stderr
# in $tmp/NAME.err, shows both, and sets rc to its exit status.
run() {
	local name=$1
	shift
	echo "+ $*"
	rc=0
	timeout "$LIMIT" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
	cat "$tmp/$name.out"
	if [[ -s $tmp/$name.err ]]; then
		sed 's/^/stderr: /' "$tmp/$name.err"
	fi
	if ((rc == 124)); then
		fail "$* did not finish within ${LIMIT} s"
	fi
}

# expect_ok NAME CMD...: runs CMD and requires exit status 0.
expect_ok() {
	local name=$1
	shift
	run "$name" "$@"
	((rc == 0)) || fail "$* exited with status $rc, want 0"
}

# row MODE FILE: the Analyze table rows of MODE in FILE; the first cell of
# such a row is the mode name, followed by blanks (the section line
# "cuda: OOM: …" and the notes "[1] cuda: …" are not rows).
row() {
	grep -E "^[|[:space:]]*$1([[:space:]]|\|)" "$2" || true
}

# check_table NAME: the output of NAME has an Analyze table with an ok cpu row.
check_table() {
	local all=$tmp/$1.all
	cat "$tmp/$1.out" "$tmp/$1.err" >"$all"
	grep -q 'Analyze' "$all" || fail "$1: no line with \"Analyze\" in the output"
	grep -Eq '[|[:space:]]ok([[:space:]]|\||$)' <<<"$(row cpu "$all")" \
		|| fail "$1: no cpu row with status ok in the Analyze table"
}

echo "== train: cuda,cache,cpu at small scale"
expect_ok train "$BIN" linear train cuda,cache,cpu --scale small
check_table train
for mode in cuda cache; do
	grep -Eq '[|[:space:]]ok([[:space:]]|\||$)' <<<"$(row "$mode" "$tmp/train.all")" \
		|| fail "train: no $mode row with status ok (on the simulated device) in the Analyze table"
done

echo "== eval: cpu at small scale"
expect_ok eval "$BIN" linear eval cpu --scale small
check_table eval

echo "== attention: train and eval, cpu at small scale"
expect_ok attention_train "$BIN" attention train cpu --scale small
check_table attention_train
expect_ok attention_eval "$BIN" attention eval cpu --scale small
check_table attention_eval

echo "== resnet: train and eval, cpu at small scale"
expect_ok resnet_train "$BIN" resnet train cpu --scale small
check_table resnet_train
expect_ok resnet_eval "$BIN" resnet eval cpu --scale small
check_table resnet_eval

echo "== version"
expect_ok version "$BIN" version
[[ -s $tmp/version.out ]] || fail "version printed nothing on stdout"

echo "== bad input: unknown mode"
run bogus "$BIN" linear train bogus --scale small
((rc == 2)) || fail "an unknown mode exited with status $rc, want 2"
lines=$(awk 'END { print NR }' "$tmp/bogus.err")
((lines == 1)) || fail "an unknown mode printed $lines lines on stderr, want exactly 1"

echo "== bad input: unknown model"
run nosuchmodel "$BIN" nosuchmodel
((rc == 2)) || fail "an unknown model exited with status $rc, want 2"
[[ -s $tmp/nosuchmodel.err ]] || fail "an unknown model printed nothing on stderr"

if ((failures > 0)); then
	echo "smoke: $failures check(s) failed" >&2
	exit 1
fi
echo "smoke: all checks passed"
