#!/usr/bin/env bash
# compare-runs.sh OLD_BIN NEW_BIN [--quick] [--scale SCALE] [--keep DIR]
#
# Checks that a refactoring left gpuz's results as they were: runs the same
# small runs and plans with two gpuz binaries (build them from the two
# commits: go build -o /tmp/gpuz-old ./cmd/gpuz at the old one) and diffs
# what they wrote, less what differs from one run to the next.
#
# Runs (--json): linear, resnet, attention and llm (two layers of
# SmolLM2-135M's shape, sequences of 32), train and eval (and llm's
# generate), at --scale small
# on sim:1GiB in the cuda, cache (window, window-paged, auto with the
# optimizer on the device and on the host), hybrid, managed (both advice
# settings) and cpu modes, and in the cpu mode under --device cpu. Each run's
# JSON is compared with the times, the setup phases, the peak RSS, the start
# time, the command line and a plan's host memory found available left out:
# the losses, the copies each way, the
# peaks, the placements, the statuses and the predictions must be equal.
# A field the new binary writes and the old one did not (a key added to
# the document) is listed as such, once, and left out of the comparison;
# a field the old one wrote and the new one lacks is a difference.
# Plans (gpuz plan): the same workloads and modes, as JSON (with the host's
# available memory, which moves between two runs, left out) and as the
# text table (its host columns blanked).
#
# --scale demo runs at demo scale instead (on sim:4GiB; some modes may not
# fit there, and their rows are compared as they are). --quick runs linear
# and llm only. --keep DIR keeps the outputs there
# (default: a temporary directory, removed). Exit status 0 when everything
# is equal, 1 when something differs (the diffs are printed), 2 on bad use.
# Needs python3.
set -euo pipefail

usage() { echo "usage: $0 OLD_BIN NEW_BIN [--quick] [--scale small|demo] [--keep DIR]" >&2; exit 2; }
[[ $# -ge 2 ]] || usage
old=$(realpath "$1") new=$(realpath "$2")
shift 2
quick=0 keep="" scale=small
while [[ $# -gt 0 ]]; do
	case "$1" in
	--quick) quick=1 ;;
	--scale)
		scale=${2:?--scale needs small or demo}
		[[ $scale == small || $scale == demo ]] || usage
		shift
		;;
	--keep) keep=${2:?--keep needs a directory}; shift ;;
	*) usage ;;
	esac
	shift
done
[[ -x $old && -x $new ]] || { echo "$0: $old and $new must be executables" >&2; exit 2; }

if [[ -n $keep ]]; then
	out=$keep
	mkdir -p "$out"
else
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi

workloads=(linear resnet attention llm)
[[ $quick == 1 ]] && workloads=(linear llm)

# flags of each workload beyond --scale.
flags_of() {
	case "$1" in
	llm) echo "--layers 2 --seq-len 32" ;;
	esac
}
place_of() { # WORKLOAD FLAGS...: a block on the host, one resident on the device, the rest paged
	local n
	n=$("$new" plan "$@" train cuda --device sim:1GiB | sed -n '1s/.*: \([0-9]*\) blocks.*/\1/p')
	[[ -n $n && $n -ge 3 ]] || { echo "$0: cannot count the blocks of $1" >&2; exit 2; }
	echo "host:0,cuda:1,cache:2-$((n - 1))"
}

# normalize json OLD NEW OLD_OUT NEW_OUT: both files less what differs
# between two runs, and less the fields only NEW has (each such field's
# name printed once, as "ADDED"). normalize text FILE: the table less the
# host's figures, to standard output.
normalize() {
	python3 - "$@" <<'EOF'
import json, re, sys

kind = sys.argv[1]
if kind == "json":
    dropped = re.compile(r"(^|_)seconds$|^setup$|^stats$|^start$|^command_line$|^peak_rss_bytes$|^host_available$")
    added = set()
    def strip(v, old):
        if isinstance(v, dict):
            host = v.get("device") == "host"
            # a plan's header: the host memory this process found available
            # (not a --host-memory target) moves between two runs.
            available = v.get("host_memory_source", "--host-memory") != "--host-memory"
            out = {}
            for k, x in v.items():
                if dropped.search(k) or (host and k in ("device_free", "device_total")) or (available and k == "host_memory"):
                    continue
                if isinstance(old, dict) and k not in old:
                    added.add(k)
                    continue
                out[k] = strip(x, old.get(k) if isinstance(old, dict) else None)
            return out
        if isinstance(v, list):
            return [strip(x, old[i] if isinstance(old, list) and i < len(old) else None) for i, x in enumerate(v)]
        return v
    old, new = (json.load(open(p)) for p in sys.argv[2:4])
    with open(sys.argv[4], "w") as f:
        print(json.dumps(strip(old, None), indent=1, sort_keys=True), file=f)
    with open(sys.argv[5], "w") as f:
        print(json.dumps(strip(new, old), indent=1, sort_keys=True), file=f)
    for k in sorted(added):
        print("ADDED " + k)
else:
    text = open(sys.argv[2]).read()
    # A table's columns are the dashed rule's runs; blank the host's
    # figures: the available column, and the free column of the cpu row.
    lines, blank = text.splitlines(), {}
    for i, line in enumerate(lines):
        if i > 0 and re.fullmatch(r"[- ]+", line) and "-" in line:
            spans = [m.span() for m in re.finditer(r"-+", line)]
            names = []
            for a, b in spans:
                names.append(lines[i-1][a:b].strip())
            blank = {n: s for n, s in zip(names, spans) if n in ("available", "free")}
            continue
        if not line.strip():
            blank = {}
            continue
        for name, (a, b) in blank.items():
            if name == "available" or line.startswith("cpu "):
                line = line[:a] + "#" * (b - a) + line[b:]
        lines[i] = line
    print("\n".join(lines))
EOF
}

failed=0
# check NAME ARGS...: runs ARGS with both binaries, JSON to NAME.{old,new}.json.
check() {
	local name=$1
	shift
	for which in old new; do
		local bin=$old
		[[ $which == new ]] && bin=$new
		"$bin" "$@" --json "$out/$name.$which.json" >"$out/$name.$which.txt" 2>&1 || true
		if [[ ! -s $out/$name.$which.json ]]; then
			echo "NO JSON   $name from $bin:"
			cat "$out/$name.$which.txt"
			failed=1
			return
		fi
	done
	normalize json "$out/$name.old.json" "$out/$name.new.json" "$out/$name.old.norm" "$out/$name.new.norm" >>"$out/added"
	if diff -u "$out/$name.old.norm" "$out/$name.new.norm" >"$out/$name.diff"; then
		echo "same      $name"
	else
		echo "DIFFERENT $name"
		cat "$out/$name.diff"
		failed=1
	fi
}

# plantext NAME ARGS...: the plan's text table from both binaries.
plantext() {
	local name=$1
	shift
	"$old" "$@" >"$out/$name.old.txt" 2>&1 || true
	"$new" "$@" >"$out/$name.new.txt" 2>&1 || true
	if diff -u <(normalize text "$out/$name.old.txt") <(normalize text "$out/$name.new.txt") >"$out/$name.diff"; then
		echo "same      $name"
	else
		echo "DIFFERENT $name"
		cat "$out/$name.diff"
		failed=1
	fi
}

modes=cuda,cache,hybrid,managed,cpu
for w in "${workloads[@]}"; do
	read -ra extra <<<"$(flags_of "$w")" || true
	for task in train eval; do
		device=sim:1GiB
		[[ $scale == demo ]] && device=sim:4GiB
		common=(--scale "$scale" --device "$device" --epochs 2 "${extra[@]}")
		place=(--place "$(place_of "$w" --scale "$scale" "${extra[@]}")")
		check "run-$w-$task" "$w" "$task" "$modes" "${common[@]}" "${place[@]}"
		check "run-$w-$task-paged" "$w" "$task" cache "${common[@]}" --policy window-paged
		check "run-$w-$task-auto" "$w" "$task" cache "${common[@]}" --policy auto --optimizer-on device,host
		check "run-$w-$task-advise" "$w" "$task" managed "${common[@]}" --managed-advise host
		check "run-$w-$task-cpu" "$w" "$task" cpu --scale "$scale" --device cpu --epochs 2 "${extra[@]}"
		check "plan-$w-$task" plan "$w" "$task" "$modes" "${common[@]}" "${place[@]}"
		plantext "plantext-$w-$task" plan "$w" "$task" "$modes" "${common[@]}" "${place[@]}"
	done
	if [[ $w == llm ]]; then # generation: a prompt, then tokens one at a time
		# its sizes are the prompt's and the tokens' (no --seq-len)
		gen=(--scale "$scale" --device "$device" --epochs 2 --layers 2 --prompt 8 --tokens 4)
		check "run-$w-generate" "$w" generate "$modes" "${gen[@]}" "${place[@]}"
		check "plan-$w-generate" plan "$w" generate "$modes" "${gen[@]}" "${place[@]}"
	fi
done
if [[ -s $out/added ]]; then
	sort -u "$out/added" | sed 's/^ADDED /only the new binary writes the field /'
fi
if [[ $failed == 0 ]]; then
	echo "compare-runs: $old and $new wrote the same results"
else
	echo "compare-runs: the results differ (outputs in ${keep:-a removed temporary directory})" >&2
fi
exit $failed
