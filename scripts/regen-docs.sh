#!/usr/bin/env bash
# Regenerates the outputs that the docs record from real runs, so that no
# pasted table is older than the binary:
#
#   docs/sweeps/linear-train.{txt,csv,json,svg}   the reference sweep at full scale (docs/sweeps.md; about 10 minutes)
#   docs/sweeps/demo-W-T.{txt,csv,json,svg}       the demo scale's six sweeps (docs/sweeps.md; about a minute each)
#   docs/levers/resnet-train-cuda-*.svg           the recompute lever's memory pictures (docs/levers.md)
#   docs/fit/crossover.svg                        the cuda/cpu crossover (docs/fit.md, go run ./scripts/crossover)
#   docs/llm/llama-3.2-1b-*.svg                   the memory pictures of docs/llm.md (its tables: scripts/test-llm-saved.sh)
#
# and splices each table into its page: a line
#   <!-- regen-docs: sweeps/demo-linear-train.txt -->
# in a doc is followed by a ``` block, which gets that file's lines from
# its env: line on: the binary's commit, the devices and the table. A
# binary built without its revision stamped gets the checkout's commit
# written there (with -dirty when the tree has changes): build it from a
# clean checkout (make build) first.
#
#   scripts/regen-docs.sh [--scale small] [--skip-full] [--out DIR] [BIN]
#
# BIN is bin/gpuz unless given. --scale small runs every command at the
# small scale (seconds in all), to check that the script and the commands
# still work, and writes to DIR (a new temporary folder unless --out is
# given), never into docs/: the pages with markers are copied there and
# spliced. The runs use a private sim ledger, so that memory another
# process holds does not change the tables. --skip-full leaves out the
# full-scale reference sweep (the demo sweeps and pictures take minutes).
set -euo pipefail

die() { echo "regen-docs: error: $*" >&2; exit 1; }

scale= out= full=1
while (($# > 0)); do
	case $1 in
	--scale) [[ $# -ge 2 ]] || die "--scale needs a value"; scale=$2; shift 2 ;;
	--skip-full) full=; shift ;;
	--out) [[ $# -ge 2 ]] || die "--out needs a folder"; out=$2; shift 2 ;;
	-h | --help) sed -n '2,26p' "$0"; exit 0 ;;
	-*) die "unknown option $1" ;;
	*) break ;;
	esac
done
BIN=${1:-bin/gpuz}
[[ -x $BIN ]] || die "$BIN is not an executable file; run make build first"
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
case $scale in
'') ;;
small) [[ -n $out ]] || out=$(mktemp -d) ;;
*) die "--scale takes small (or nothing: the docs' own scales)" ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
docs=$root/docs
out=${out:-$docs}
mkdir -p "$out/sweeps" "$out/levers" "$out/fit"
out=$(cd "$out" && pwd)

GPUZ_SIM_LEDGER=$(mktemp -d)/ledger
export GPUZ_SIM_LEDGER
trap 'rm -rf "$(dirname "$GPUZ_SIM_LEDGER")"' EXIT

# at SCALE: the --scale arguments of a command the docs run at SCALE
# (full: none).
at() {
	if [[ -n $scale ]]; then
		echo --scale "$scale"
	elif [[ $1 != full ]]; then
		echo --scale "$1"
	fi
}

# sweep NAME ARGS...: a sweep whose table goes to NAME.txt, its CSV to
# NAME.csv, its JSON to NAME.json and its plot to NAME.svg; exit status 3
# (some mode out of memory: the curve's point) counts as done.
sweep() {
	local name=$out/sweeps/$1
	shift
	echo "regen-docs: gpuz $*" >&2
	local rc=0
	"$BIN" "$@" --format csv --json "$name.json" --plot "$name.svg" >"$name.csv" 2>"$name.txt" || rc=$?
	((rc == 0 || rc == 3)) || die "gpuz $* exited $rc (see $name.txt)"
	sed -i "s/^\(env: gpuz [^ ]*\) (revision unknown)/\1 $rev/" "$name.txt"
}

# rev is the commit the tables name where the binary does not know its own.
rev=$(git -C "$root" rev-parse --short=12 HEAD)
git -C "$root" diff --quiet HEAD || rev+=-dirty
echo "regen-docs: $("$BIN" version | head -1), checkout at $rev, writing to $out" >&2

if [[ -n $full ]]; then
	# shellcheck disable=SC2046 # at's words are meant to split
	sweep linear-train linear train cuda,cache,cpu --take 0,4,8,12,16,20 --device sim:8GiB $(at full)
fi
for w in linear resnet attention; do
	for t in train eval; do
		# shellcheck disable=SC2046
		sweep "demo-$w-$t" "$w" "$t" cuda,cache,cpu $(at demo) --device sim:256MiB --take 0,64MiB,128MiB,192MiB,224MiB
	done
done
for r in none blocks; do
	echo "regen-docs: gpuz plan resnet train cuda --recompute $r" >&2
	# shellcheck disable=SC2046
	"$BIN" plan resnet train cuda --recompute "$r" --device sim:rtx4060-laptop --take 20 $(at full) \
		--plot "$out/levers/resnet-train-cuda-$r.svg" >/dev/null
done
mkdir -p "$out/llm"
for pic in "train cache --policy auto --win-size 1 --optimizer-on host --recompute blocks --precision bf16:train-cache-auto" \
	"train cuda:train-cuda" "eval cache --policy auto --win-size 1 --precision bf16:eval-cache-auto"; do
	echo "regen-docs: gpuz plan llm ${pic%%:*} --model llama-3.2-1b" >&2
	# shellcheck disable=SC2046,SC2086 # the words of pic and at are meant to split
	"$BIN" plan llm ${pic%%:*} --model llama-3.2-1b --seq-len 1024 --batch 1 --device sim:rtx4060-laptop $(at full) \
		--plot "$out/llm/llama-3.2-1b-${pic##*:}.svg" >/dev/null
done
echo "regen-docs: go run ./scripts/crossover" >&2
(cd "$root" && go run ./scripts/crossover -o "$out/fit/crossover.svg" >/dev/null)

# splice PAGE: replaces the ``` block after each regen-docs marker of PAGE
# with its file's lines from env: on.
splice() {
	local page=$1 tmp
	tmp=$(mktemp)
	awk -v dir="$out" -v docs="$docs" '
		function table(name,   file, line, on, n) {
			on = 0
			file = dir "/" name
			if ((getline line < file) <= 0) file = docs "/" name # not made this time (--skip-full)
			close(file)
			while ((getline line < file) > 0) {
				if (line ~ /^env: /) on = 1
				if (on) { print line; n++ }
			}
			close(file)
			if (n == 0) { print "regen-docs: no table in " file > "/dev/stderr"; exit 1 }
		}
		/^<!-- regen-docs: .* -->$/ { print; file = $3; next }
		file != "" && /^```/ && !inblock { print; inblock = 1; table(file); next }
		inblock && /^```/ { print; inblock = 0; file = ""; next }
		inblock { next }
		{ print }
	' "$page" >"$tmp"
	mv "$tmp" "$page"
}

for page in "$docs"/*.md; do
	grep -q '^<!-- regen-docs: ' "$page" || continue
	if [[ $out != "$docs" ]]; then
		cp "$page" "$out/"
		page=$out/$(basename "$page")
	fi
	splice "$page"
	echo "regen-docs: spliced $page" >&2
done
echo "regen-docs: done; the tables' env: lines name the commit" >&2
