#!/usr/bin/env bash
# Checks docs/llm.md's table "Saved activations against PyTorch": for each
# family (scripts/testdata/llm-llama-gqa.json, a Llama with grouped-query
# attention and a tied embedding, and scripts/testdata/llm-gpt2.json) in
# fp32, bf16 and with --recompute blocks, at --seq-len 24 --batch 2, it
# runs `gpuz plan llm train cpu … --json -` (saved_activations and arena),
# go run ./scripts/llmsaved (gpuz's saved values one by one, which must add
# up to the plan's figure) and scripts/torch_llm.py saved (the bytes
# PyTorch's autograd keeps), and requires the doc's rows, between its
# markers, to be the rows the current code prints, so that the doc cannot
# drift.
#
#   scripts/test-llm-saved.sh [--print] [--list] [GPUZ_BIN]   (default bin/gpuz)
#
# --print prints the rows (to paste into the doc) instead of checking;
# --list prints both lists, tensor by tensor, before each row. Needs
# python3 with torch (Debian: apt-get install python3-torch; PYTHON names
# another interpreter) and go. About 20 s on 2 cores.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
print= list=
while (($# > 0)); do
	case $1 in
	--print) print=1; shift ;;
	--list) list=1; shift ;;
	-h | --help) sed -n '2,18p' "$0"; exit 0 ;;
	-*) echo "test-llm-saved: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
bin=${1:-bin/gpuz}
python=${PYTHON:-/usr/bin/python3}
doc=docs/llm.md
[[ -x $bin ]] || { echo "test-llm-saved: $bin is not an executable file (make build)" >&2; exit 2; }
"$python" -c 'import torch' 2>/dev/null ||
	{ echo "test-llm-saved: $python cannot import torch: apt-get install python3-torch (or set PYTHON)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/llmsaved" ./scripts/llmsaved
# PyTorch 1.13's attention here is eager (it has no
# scaled_dot_product_attention): gpuz's eager attention is compared.
sizes=(--seq-len 24 --batch 2)
for family in llama-gqa gpt2; do
	cfg=scripts/testdata/llm-$family.json
	for lever in "precision fp32" "precision bf16" "recompute blocks"; do
		read -r flag value <<<"$lever"
		"$bin" plan llm train cpu --model "$cfg" "${sizes[@]}" --attention eager "--$flag" "$value" --json "$tmp/plan.json" >/dev/null 2>"$tmp/plan.err" ||
			{ cat "$tmp/plan.err" >&2; echo "test-llm-saved: gpuz plan $family --$flag $value failed" >&2; exit 1; }
		"$tmp/llmsaved" -model "$cfg" -seq-len 24 -batch 2 -attention eager "-$flag" "$value" -json >"$tmp/gpuz.json"
		"$python" scripts/torch_llm.py saved "$cfg" "${sizes[@]}" "--$flag" "$value" >"$tmp/torch.json"
		if [[ -n $list ]]; then
			echo "== $family --$flag $value: gpuz" >&2
			"$tmp/llmsaved" -model "$cfg" -seq-len 24 -batch 2 -attention eager "-$flag" "$value" >&2
			echo "== $family --$flag $value: PyTorch" >&2
			"$python" scripts/torch_llm.py saved "$cfg" "${sizes[@]}" "--$flag" "$value" --list >&2
		fi
		/usr/bin/python3 - "$family" "--$flag $value" "$tmp" >>"$tmp/rows" <<'PY'
import json, sys
family, lever, tmp = sys.argv[1:]
plan = json.load(open(f"{tmp}/plan.json"))["bytes"]
listed = json.load(open(f"{tmp}/gpuz.json"))
torch = json.load(open(f"{tmp}/torch.json"))
if sum(v["bytes"] for v in listed["values"]) != plan["saved_activations"] or listed["saved_bytes"] != plan["saved_activations"]:
    sys.exit(f"test-llm-saved: {family} {lever}: llmsaved's values add up to "
             f"{sum(v['bytes'] for v in listed['values'])}, the plan says {plan['saved_activations']}")
g, t = plan["saved_activations"], torch["saved_bytes"]
print(f"| {family} | `{lever}` | {g} | {len(listed['values'])} | {plan['arena']} | {t} | {len(torch['tensors'])} | {t - g:+d} |")
PY
	done
done
if [[ -n $print ]]; then
	cat "$tmp/rows"
	exit 0
fi
awk '/^<!-- test-llm-saved: end -->/ { on = 0 } on && /^\| [^|]* \| `/ { print } /^<!-- test-llm-saved: begin -->/ { on = 1 }' "$doc" >"$tmp/doc"
if ! diff -u "$tmp/doc" "$tmp/rows" >"$tmp/diff"; then
	cat "$tmp/diff" >&2
	echo "test-llm-saved: FAIL: $doc's table (-) is not what the code gives (+): run scripts/test-llm-saved.sh --print and explain the change" >&2
	exit 1
fi
echo "test-llm-saved: ok ($(wc -l <"$tmp/rows") rows of $doc's saved activations agree with gpuz and PyTorch $("$python" -c 'import torch; print(torch.__version__)'))"
