#!/usr/bin/env bash
# The generation sitting of docs/benchmarks.md (issue 41 item 7): gpuz's
# greedy generation on the host against PyTorch's (scripts/torch_llm.py
# generate: the same model with its own static KV cache) and llama.cpp's
# (scripts/llamacpp_generate.mjs), one after the other at each thread count,
# with the load average before each. Prints one markdown row per program
# and thread count: prefill and decode tokens/s, and decode's bytes per
# token (every weight the decode reads, and the caches at their mean
# length) over its time as a share of TRIAD (GB/s, from
# scripts/machine-peaks.sh), prefill's FLOPs as a share of FMA (GFLOP/s).
#
#   scripts/bench-generate.sh MODEL [LAYERS [PROMPT [TOKENS]]]
#
# llama.cpp runs when node-llama-cpp is installed (in .peer, or the folder
# GPUZ_NODE_LLAMA_CPP names: .ci/run installs it), on gpuz's own weights
# written by gpuz llm export --gguf as GGUF_TYPE (f32, the default, or
# f16). WEIGHTS (q8_0, q4_0 or q4_k) quantizes the projections and the
# embedding in gpuz's run (--weights) and in the exported file alike, and
# leaves PyTorch out (it has no such CPU kernels).
#
#   MODEL   a preset (smollm2-135m, llama-3.2-1b); LAYERS its decoder
#           layers (default all); PROMPT and TOKENS default 512 and 128.
#   THREADS  thread counts (default "1 2"); TRIAD, FMA the machine's peaks
#            (GB/s, GFLOP/s; without them no share is printed);
#            GPUZ_BIN the binary (default bin/gpuz).
#
# Runs under flock /tmp/gpuz-bench.lock so that two benchmarks never
# overlap. Speed is measured here, never asserted: read the load averages.
set -euo pipefail

model=${1:?usage: bench-generate.sh MODEL [LAYERS [PROMPT [TOKENS]]]}
layers=${2:-}
prompt=${3:-512}
tokens=${4:-128}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${GPUZ_BIN:-$root/bin/gpuz}
config=$root/internal/hfconfig/presets/$model.json
[[ -f $config ]] || { echo "bench-generate: no preset $model ($config)" >&2; exit 2; }
for n in "$prompt" "$tokens" ${layers:+"$layers"}; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "bench-generate: '$n' is not a positive integer" >&2; exit 2; }
done
# Debian's torch multiplies through the system's libblas.so.3; the peer
# runs with OpenBLAS's OpenMP build instead, as shared/peer/README.md
# sets it up (PEER_BLAS: the folder of its libblas.so.3).
blas=${PEER_BLAS:-/tmp/peer_obl/root/usr/lib/x86_64-linux-gnu/openblas-openmp}
[[ -n ${WEIGHTS:-} || -d $blas ]] || { echo "bench-generate: no OpenBLAS for the peer in $blas (shared/peer/README.md; PEER_BLAS)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
depth=()
[[ -n $layers ]] && depth=(--layers "$layers")
weights=()
[[ -n ${WEIGHTS:-} ]] && weights=(--weights "$WEIGHTS")

exec 9>/tmp/gpuz-bench.lock
flock 9

# The decode's bytes a token and the prefill's FLOPs, from gpuz's plan of
# the same generation (its schedule's work of one prefill and one decode
# pass, at a full cache).
"$bin" plan llm generate cpu --model "$model" "${depth[@]}" "${weights[@]}" --prompt "$prompt" --tokens "$tokens" --format json >"$tmp/plan.json"

# llama.cpp runs gpuz's own weights (gpuz llm export --gguf) when
# node-llama-cpp is installed in .peer (or GPUZ_NODE_LLAMA_CPP), on one
# prompt of uniform ids.
llamacpp=0
gguf_type=${GGUF_TYPE:-f32}
if [[ -d ${GPUZ_NODE_LLAMA_CPP:-$root/.peer}/node_modules/node-llama-cpp ]] && command -v node >/dev/null; then
	llamacpp=1
	"$bin" llm export --model "$model" "${depth[@]}" "${weights[@]}" --type "$gguf_type" --gguf "$tmp/model.gguf" >/dev/null
	ids=$(python3 -c 'import json, random, sys; random.seed(1); v = json.load(open(sys.argv[1]))["vocab_size"]; print(",".join(str(random.randrange(3, v)) for _ in range(int(sys.argv[2]))))' "$config" "$prompt")
fi

echo "| program | threads | load | prefill tok/s | decode tok/s | decode share of triad | prefill share of FMA |"
echo "|---|---|---|---|---|---|---|"
for t in ${THREADS:-1 2}; do
	load=$(cut -d' ' -f1 /proc/loadavg)
	"$bin" llm generate cpu --model "$model" "${depth[@]}" "${weights[@]}" --prompt "$prompt" --tokens "$tokens" --threads "$t" \
		--epochs 3 --json "$tmp/gpuz.json" >/dev/null 2>"$tmp/gpuz.err"
	python3 - "$tmp/gpuz.json" "$tmp/plan.json" gpuz "$t" "$load" <<'EOF'
import json, os, sys
doc, plan = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
m = doc["modes"][0]
timed = [e["generation"] for e in m["epochs"] if not e["warmup"]]
pt, ps = sum(g["prefill_tokens"] for g in timed), sum(g["prefill_seconds"] for g in timed)
dt, ds = sum(g["decode_tokens"] for g in timed), sum(g["decode_seconds"] for g in timed)
pre, dec = pt / ps, dt / ds
json.dump({"prefill": pre, "decode": dec}, open(os.path.join(os.path.dirname(sys.argv[1]), "rates.json"), "w"))
EOF
	row() { # PROGRAM PREFILL DECODE
		python3 - "$tmp/plan.json" "$1" "$t" "$load" "$2" "$3" "$prompt" "$tokens" <<'EOF'
import json, os, sys
plan = json.load(open(sys.argv[1]))
name, t, load, pre, dec, P, N = sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8])
# One prefill and one decode pass's work together (the plan's schedule);
# the decode reads every weight once: the parameters' bytes, plus the
# caches at their mean length.
b = plan["bytes"]
ctx = plan["header"]["context"]
kv = b.get("kv_cache", 0) * ((P + N / 2) / ctx)
decode_bytes = b["parameters"] + kv
prefill_flops = plan["work_per_batch"]["flops"]  # both passes; the prefill's dominates
triad, fma = os.environ.get("TRIAD"), os.environ.get("FMA")
share_d = f"{100 * dec * decode_bytes / (float(triad) * 1e9):.0f}%" if triad else "-"
share_p = f"{100 * pre / P * prefill_flops / (float(fma) * 1e9):.0f}%" if fma else "-"
print(f"| {name} | {t} | {load} | {pre:.4g} | {dec:.4g} | {share_d} | {share_p} |")
EOF
	}
	rates=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["prefill"], r["decode"])' "$tmp/rates.json")
	row "gpuz${WEIGHTS:+ ($WEIGHTS)}" $rates
	if [[ -z ${WEIGHTS:-} ]]; then
		load=$(cut -d' ' -f1 /proc/loadavg)
		LD_LIBRARY_PATH="$blas${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" /usr/bin/python3 "$root/scripts/torch_llm.py" generate "$config" "${depth[@]}" --prompt "$prompt" --tokens "$tokens" \
			--threads "$t" --repeats 2 --top 1 --json "$tmp/torch.json"
		rates=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["prefill_tokens_per_second"], r["decode_tokens_per_second"])' "$tmp/torch.json")
		row "PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)')" $rates
	fi
	if ((llamacpp)); then
		load=$(cut -d' ' -f1 /proc/loadavg)
		# The same prompt twice, each from an empty cache: the second is
		# timed warm.
		node "$root/scripts/llamacpp_generate.mjs" --model "$tmp/model.gguf" --prompt-ids "$ids" --prompt-ids "$ids" \
			--tokens "$tokens" --threads "$t" >"$tmp/llama.json"
		rates=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["sequences"][-1]; print(r["prompt_tokens_per_s"], r["generate_tokens_per_s"])' "$tmp/llama.json")
		row "llama.cpp (${WEIGHTS:-$gguf_type})" $rates
	fi
done
