#!/usr/bin/env bash
# Prints one markdown table for one GGUF file: the host memory that gpuz's
# plan of generation on the CPU gives, the buffers llama.cpp allocates to
# run it (its own log lines, through node-llama-cpp), and gguf-parser-go's
# estimate for llama.cpp, row by row (weights, KV cache, compute buffer,
# inputs, output buffer, total). docs/llm.md ("Plans against llama.cpp")
# shows the tables and explains each difference.
#
#   scripts/plan-vs-llamacpp.sh MODEL_OR_GGUF [CONTEXT [WEIGHTS]]
#
#   MODEL_OR_GGUF  a GGUF file, or a model gpuz llm export writes (a preset
#                  such as smollm2-135m, a config.json), exported first with
#                  --type f16 and --weights WEIGHTS to a temporary file
#   CONTEXT        the positions of the KV cache (default 2048)
#   WEIGHTS        export's --weights: q8_0, q4_0 or q4_k (default q8_0)
#
# The same settings for all three: CPU only (no layer offloaded), one
# sequence, 1 thread, a batch of 512 tokens (llama.cpp's n_batch and
# n_ubatch both: node-llama-cpp's default batch, min(CONTEXT, 512), and
# llama.cpp's default n_ubatch; llama.cpp's own default n_batch is 2048,
# which changes no buffer here since the graph is reserved for n_ubatch
# tokens), flash attention as llama.cpp's default "auto" resolves it on
# the CPU (on; the table's last line says what llama.cpp logged), and
# gpuz planning a prompt of that batch's tokens, 1 token generated, its
# KV cache in f16 as llama.cpp's.
#
# Needs node with node-llama-cpp 3.21.1 in GPUZ_NODE_LLAMA_CPP's folder or
# .peer at the repository's root (mkdir -p .peer && (cd .peer && npm i -E
# node-llama-cpp@3.21.1)). Set GPUZ_BIN to a gpuz binary (default: built
# from this checkout into a temporary folder).
set -euo pipefail

usage="usage: plan-vs-llamacpp.sh MODEL_OR_GGUF [CONTEXT [WEIGHTS]]"
model=${1:?$usage}
context=${2:-2048}
weights=${3:-q8_0}
[[ $context =~ ^[1-9][0-9]*$ ]] || { echo "plan-vs-llamacpp: CONTEXT must be a positive integer, got $context" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
batch=$((context < 512 ? context : 512))

bin=${GPUZ_BIN:-}
if [[ -z $bin ]]; then
	bin=$tmp/gpuz
	(cd "$root" && go build -o "$bin" ./cmd/gpuz)
fi
file=$model
if [[ $model != *.gguf ]]; then
	file=$tmp/$(basename "$model" .json)-$weights.gguf
	"$bin" llm export --model "$model" --type f16 --weights "$weights" --gguf "$file" >&2
fi

"$bin" plan llm generate cpu --model "$file" --prompt "$batch" --tokens 1 --context "$context" \
	--kv-dtype f16 --json "$tmp/plan.json" >/dev/null
node "$root/scripts/llamacpp_buffers.mjs" --model "$file" --context "$context" --batch "$batch" --threads 1 >"$tmp/llamacpp.json"
fa=$(node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1])); process.stdout.write(String(j.context.flash_attention !== false))' "$tmp/llamacpp.json")
(cd "$root" && go run ./scripts/planvsllamacpp -gpuz "$tmp/plan.json" -llamacpp "$tmp/llamacpp.json" \
	-context "$context" -batch "$batch" -flash-attention="$fa" "$file")
