#!/usr/bin/env bash
# Checks that scripts/torch_reference.py builds gpuz's workloads: for each
# workload and task at small scale in cpu mode, it runs `gpuz plan … --json
# -`, a gpuz run (--json) and the PyTorch script (--json), and requires the
# same sizes (batch, samples, batches), parameters and their bytes (the
# plan's, the run header's and the script's), and the same matrix-product
# FLOPs per epoch, kind by kind. The losses differ (the initial weights and
# data come from different generators) and are only shown, with both
# medians.
#
#   scripts/test-torch-reference.sh [GPUZ_BIN]      (default bin/gpuz)
#
# gpuz's plan counts each kernel's FLOPs by its cost rule (internal/ops:
# 2mnk per product, one per bias element for Linear and Conv2d, and 5 and 4
# per attention probability for the softmax in AttentionProbs and its
# gradient); the script counts the products and reports the bias elements
# and probabilities apart, so the comparison takes those out of gpuz's
# count. Needs python3 with torch (Debian: apt-get install python3-torch;
# PYTHON names another interpreter). About 30 s on 2 cores.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=${1:-bin/gpuz}
python=${PYTHON:-/usr/bin/python3}
[[ -x $bin ]] || { echo "test-torch-reference: $bin is not an executable file (make build)" >&2; exit 2; }
"$python" -c 'import torch' 2>/dev/null ||
	{ echo "test-torch-reference: $python cannot import torch: apt-get install python3-torch (or set PYTHON)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
for model in linear resnet attention; do
	for task in train eval; do
		"$bin" plan "$model" "$task" cpu --scale small --json "$tmp/plan.json" >/dev/null 2>"$tmp/plan.err" ||
			{ cat "$tmp/plan.err" >&2; echo "test-torch-reference: gpuz plan $model $task failed" >&2; exit 1; }
		"$bin" "$model" "$task" cpu --scale small --epochs 3 --json "$tmp/run.json" >"$tmp/run.out" 2>&1 ||
			{ cat "$tmp/run.out" >&2; echo "test-torch-reference: gpuz $model $task cpu failed" >&2; exit 1; }
		"$python" scripts/torch_reference.py "$model" "$task" --scale small --device cpu --epochs 3 --json "$tmp/torch.json" >"$tmp/torch.out" 2>&1 ||
			{ cat "$tmp/torch.out" >&2; echo "test-torch-reference: torch_reference.py $model $task failed" >&2; exit 1; }
		/usr/bin/python3 - "$model" "$task" "$tmp" <<'EOF' || failed=$((failed + 1))
import json, sys
model, task, tmp = sys.argv[1:]
plan = json.load(open(f"{tmp}/plan.json"))
run = json.load(open(f"{tmp}/run.json"))
ref = json.load(open(f"{tmp}/torch.json"))
fl = ref["flops_per_epoch"]
batches = plan["batches"]
gk = {k["name"]: k["flops"] * batches for k in plan["work_per_batch"]["kernels"]}
g = lambda *names: sum(gk.get(n, 0) for n in names)
probs = fl["attention_probs"]
# gpuz's kernels, less what their cost rule adds to the products.
gpuz = {
    "linear_forward": g("Linear") - fl["bias_elements"]["linear"],
    "linear_input_grad": g("LinearInputGrad"),
    "linear_weight_grad": g("LinearWeightGrad"),
    "conv_forward": g("Conv2d") - fl["bias_elements"]["conv"],
    "conv_input_grad": g("Conv2dInputGrad"),
    "conv_weight_grad": g("Conv2dWeightGrad"),
    "attention_scores": g("AttentionProbs") - 5 * probs if gk.get("AttentionProbs") else 0,
    "attention_scores_grad": g("AttentionProbsGrad") - 4 * probs if gk.get("AttentionProbsGrad") else 0,
    "attention_mix": g("AttentionMix"),
    "attention_mix_grad": g("AttentionMixProbsGrad", "AttentionMixValueGrad"),
}
checks = [
    ("batch", plan["header"]["batch"], ref["batch"]),
    ("samples", plan["header"]["samples"], ref["samples"]),
    ("batches", batches, ref["batches"]),
    ("parameters (plan)", plan["header"]["params"], ref["params"]),
    ("parameter bytes (plan)", plan["bytes"]["parameters"], ref["param_bytes"]),
    ("parameter bytes (run)", run["header"]["param_bytes"], ref["param_bytes"]),
    ("matmul FLOPs per epoch", sum(gpuz.values()), fl["matmul"]),
] + [(f"{k} FLOPs per epoch", gpuz[k], fl["by_kind"][k]) for k in gpuz]
bad = [f"{what}: gpuz {a}, torch {b}" for what, a, b in checks if a != b]
cpu = next(m for m in run["modes"] if m["mode"] == "cpu")
gm = (cpu.get("stats") or {}).get("median_seconds")
gv = (cpu.get("epochs") or [{}])[0].get("value")
gv = f"{gv:.4g}" if isinstance(gv, (int, float)) else "-"
print(f"{model} {task}: {ref['params']} parameters ({ref['param_bytes']} B), {fl['matmul']} matmul FLOPs per epoch "
      f"({len(checks)} figures compared): {'same' if not bad else 'DIFFERENT'}; median s/epoch gpuz cpu {gm:.4g}, "
      f"torch cpu {ref['median_seconds']:.4g}; first {ref['value']} gpuz {gv}, torch {ref['values'][0]:.4g}")
for b in bad:
    print(f"  differs: {b}", file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
	done
done
if ((failed)); then
	echo "test-torch-reference: FAIL: $failed of 6 runs differ from gpuz" >&2
	exit 1
fi
echo "test-torch-reference: ok (torch_reference.py and gpuz agree at small scale: sizes, parameter bytes, FLOPs)"
