#!/usr/bin/env bash
# Runs gpuz and the PyTorch peer (shared/peer/peer.py) on the same workload
# one after the other, and prints one line comparing them: mean and median
# seconds per timed epoch, the ratios gpuz/peer of both, and each one's
# peak RSS.
#
#   scripts/bench-vs-peer.sh MODEL TASK [EPOCHS [GPUZ FLAGS...]]
#
#   MODEL  linear | resnet | attention | llm      TASK  train | eval
#   EPOCHS total epochs of each, the warm-up included (default: the workload's)
#
# llm is SmolLM2-135M at full depth, sequences of 512 in batches of 4, 8
# samples (issue 33's sitting): gpuz llm … --model smollm2-135m against
# scripts/torch_llm.py bench on the preset's config.json (the same model,
# one Adam per gpuz block with clipping); GPUZ FLAGS go to gpuz (e.g.
# --attention eager: PyTorch 1.13's attention is eager).
#
# Needs /usr/bin/python3 with Debian's python3-torch, and OpenBLAS for the
# peer as shared/peer/README.md describes (PEER_BLAS: the directory holding
# its libblas.so.3; default /tmp/peer_obl/root/usr/lib/x86_64-linux-gnu/openblas-openmp).
# Set GPUZ_BIN to the binary (default bin/gpuz). PEER_FLUSH_DENORMAL=1
# runs the peer with torch.set_flush_denormal(True), as gpuz's host kernels
# run (docs/architecture.md): on an Intel CPU the linear model's training
# is otherwise mostly microcode assists on subnormal gradients. Runs under
# flock /tmp/gpuz-bench.lock so that two benchmarks never overlap.
set -euo pipefail

model=${1:?usage: bench-vs-peer.sh MODEL TASK [EPOCHS [FLAGS...]]}
task=${2:?usage: bench-vs-peer.sh MODEL TASK [EPOCHS [FLAGS...]]}
epochs=${3:-}
shift $(($# < 3 ? $# : 3))
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${GPUZ_BIN:-$root/bin/gpuz}
peer=${PEER_DIR:-$root/../shared/peer}
blas=${PEER_BLAS:-/tmp/peer_obl/root/usr/lib/x86_64-linux-gnu/openblas-openmp}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ep=()
[[ -n $epochs ]] && ep=(--epochs "$epochs")
# flush: what runs the peer's script: itself, or a prologue that turns the
# flush on before the script creates its threads (they inherit it).
flush=()
[[ ${PEER_FLUSH_DENORMAL:-} == 1 ]] && flush=(-c 'import runpy, sys, torch
assert torch.set_flush_denormal(True), "this CPU cannot flush subnormals"
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")')

exec 9>/tmp/gpuz-bench.lock
flock 9

if [[ $model == llm ]]; then
	llm=(--seq-len 512 --batch 4 --samples 8)
	/usr/bin/time -f '%M' -o "$tmp/gpuz.rss" "$bin" llm "$task" cpu --model smollm2-135m "${llm[@]}" "${ep[@]}" \
		--json "$tmp/gpuz.json" "$@" >"$tmp/gpuz.out"
	LD_LIBRARY_PATH="$blas${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" /usr/bin/time -f '%M' -o "$tmp/peer.rss" \
		/usr/bin/python3 "${flush[@]}" "$root/scripts/torch_llm.py" bench "$root/internal/hfconfig/presets/smollm2-135m.json" \
		"${llm[@]}" --epochs "${epochs:-4}" --task "$task" --threads 2 --json "$tmp/peer.json" >"$tmp/peer.out"
else
	/usr/bin/time -f '%M' -o "$tmp/gpuz.rss" "$bin" "$model" "$task" cpu "${ep[@]}" --json "$tmp/gpuz.json" "$@" >"$tmp/gpuz.out"
	LD_LIBRARY_PATH="$blas${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" /usr/bin/time -f '%M' -o "$tmp/peer.rss" \
		/usr/bin/python3 "${flush[@]}" "$peer/peer.py" "$model" "$task" --scale full --threads 2 "${ep[@]}" --json "$tmp/peer.json" >"$tmp/peer.out"
fi

/usr/bin/python3 - "$tmp" "$model" "$task" <<'PY'
import json, statistics, sys
tmp, model, task = sys.argv[1:]
g = json.load(open(f"{tmp}/gpuz.json"))
p = json.load(open(f"{tmp}/peer.json"))
cpu = next(m for m in g["modes"] if m["mode"] == "cpu")
gm = cpu["stats"]["mean_seconds"]
# peer.py writes epoch_times_s and mean_s; torch_llm.py bench,
# torch_reference.py's epoch_seconds.
ptimes = p.get("epoch_times_s") or p["epoch_seconds"]
pm = p.get("mean_s") or statistics.mean(ptimes[1:])
timed = [e["seconds"] for e in cpu["epochs"]][cpu.get("warmup", 1):]
gmed, pmed = statistics.median(timed), statistics.median(ptimes[1:])
grss = int(open(f"{tmp}/gpuz.rss").read().split()[-1]) * 1024
prss = int(open(f"{tmp}/peer.rss").read().split()[-1]) * 1024
print(f"{model} {task}: gpuz {gm:.3g} s/epoch ({cpu['stats']['n']} timed), "
      f"peer {pm:.3g} s/epoch ({len(ptimes) - 1} timed), "
      f"gpuz/peer {gm / pm:.2f}; medians gpuz {gmed:.3g}, peer {pmed:.3g}, gpuz/peer {gmed / pmed:.2f}; "
      f"peak RSS gpuz {grss / 1e9:.2f} GB, peer {prss / 1e9:.2f} GB; "
      f"gpuz warm-up {cpu['epochs'][0]['seconds']:.3g} s ({cpu['epochs'][0]['seconds'] / gmed:.2f}× its median)")
PY
