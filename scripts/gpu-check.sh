#!/usr/bin/env bash
# One command that checks gpuz on a GPU and keeps everything it saw:
#
#   scripts/gpu-check.sh [--device D] [--bin BIN] [--out DIR] [--full|--small]
#                        [--full-cpu] [--peer|--no-peer]
#   ./gpu-check.sh [the same]     in an unpacked bundle (make dist-cuda)
#
#   --device D   cuda[:N] (default), or sim[:SIZE] / cpu to check the default
#                build the same way on a machine without a GPU
#   --bin BIN    the gpuz binary to check; by default the bundle's gpuz-cuda,
#                or in the repository it is built: the GPU binary
#                (scripts/cuda-build.sh --fetch, bin/gpuz-cuda; CUDA=12.4 or
#                13 in the environment for those) for cuda, the default one
#                (make build, bin/gpuz) otherwise
#   --out DIR    where everything goes (default gpu-check-YYYYmmdd-HHMMSS, in
#                the bundle's or the repository's directory)
#   --full       the full-scale workloads (the default on cuda)
#   --small      --scale small (the default on sim and cpu)
#   --full-cpu   the cpu rows at the GPU rows' scale even with a pure-Go BLAS.
#                A binary whose BLAS is pure Go (`gpuz version`: gonum; the
#                bundle's) otherwise runs its cpu rows at small scale: at
#                full scale they would take far longer than the GPU's
#   --peer       also run the PyTorch reference (torch_reference.py) on the
#                same workloads at the same sizes, on cuda (with a GPU) and
#                cpu (at the cpu rows' scale), and put gpuz and PyTorch side
#                by side in SUMMARY.md. The default on cuda when python3 or
#                /usr/bin/python3 has torch with a usable CUDA GPU
#   --no-peer    never run it
#
# Before running anything it makes sure the binary's libraries load. Those
# the loader does not find (ldd) it looks for in $GPUZ_CUDA_LIBS (a colon
# list), /usr/local/cuda*/lib64 and /usr/local/cuda*/targets/*/lib, and
# under python3's site-packages (pip's CUDA wheels: nvidia/cublas/lib,
# nvidia/cuda_nvrtc/lib, nvidia/cu13/lib, …); it says where it found each
# CUDA library and runs gpuz's commands with LD_LIBRARY_PATH set to those
# directories. When some cannot be found it names them in one line and
# exits 1; a binary that then cannot use a GPU stops with its own one line
# ("gpuz: no usable CUDA GPU …") and the script exits 2 with it.
#
# It runs `gpuz version`, `gpuz selftest --device D`, `gpuz devices`, then
# each workload's train and eval with cuda,cache,cpu, --epochs 3 and --json
# (cuda,cache and cpu apart when the cpu rows run at another scale), the
# managed mode's, each workload's cuda mode in bf16 and linear training in
# fp16 (--precision), `gpuz plan llm train --framework torch` of
# SmolLM2-135M and Qwen2.5-0.5B beside PyTorch's max_memory_allocated of
# the same step (torch_llm.py peak, with a GPU and PyTorch; a comparison
# that fails nothing), then the peer's runs (on a GPU in fp32 and under
# bf16 autocast), and `nvidia-smi -q` when there is an nvidia-smi. DIR holds
# each command's output (NAME.txt, NAME.json for the runs) and SUMMARY.md:
# every check's command, exit status, seconds and result, each run's medians
# per mode, and with the peer the table gpuz vs PyTorch. A check passes with
# status 0; status 3 (a mode did not complete, e.g. out of memory) is
# reported in the summary but is not a failure. Exits 1 when any check
# failed, 0 otherwise.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# In a bundle the script sits beside the binary; in the repository, in
# scripts/.
if [[ -f $here/gpuz-cuda ]]; then
	bundle=1 root=$here peer_script=$here/torch_reference.py llm_script=$here/torch_llm.py presets=$here/presets
else
	bundle=0 root=$(dirname "$here") peer_script=$here/torch_reference.py llm_script=$here/torch_llm.py
	presets=$root/internal/hfconfig/presets
fi
cd "$root"
export PATH=$PATH:/usr/local/go/bin

device=cuda
bin=
out=
scale=
full_cpu=0
peer=auto
usage() {
	echo "usage: gpu-check.sh [--device D] [--bin BIN] [--out DIR] [--full|--small] [--full-cpu] [--peer|--no-peer]" >&2
	exit 2
}
while (($#)); do
	case $1 in
	--device) device=${2:-}; shift ;;
	--bin) bin=${2:-}; shift ;;
	--out) out=${2:-}; shift ;;
	--full) scale=full ;;
	--small) scale=small ;;
	--full-cpu) full_cpu=1 ;;
	--peer) peer=1 ;;
	--no-peer) peer=0 ;;
	-h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) usage ;;
	esac
	shift
done
[[ -n $device ]] || usage
gpu=0
case $device in cuda | cuda:* | gpu | auto) gpu=1 ;; esac
[[ -n $scale ]] || { if ((gpu)); then scale=full; else scale=small; fi; }
out=${out:-gpu-check-$(date +%Y%m%d-%H%M%S)}
started=$SECONDS

if [[ -z $bin ]]; then
	if ((bundle)); then
		bin=$root/gpuz-cuda
	elif ((gpu)); then
		bash scripts/cuda-build.sh --fetch
		bin=bin/gpuz-cuda
	else
		make -s build
		bin=bin/gpuz
	fi
fi
case $bin in */*) ;; *) bin=./$bin ;; esac
[[ -x $bin ]] || { echo "gpu-check: $bin is not an executable file" >&2; exit 2; }

# ---- the binary's libraries ----------------------------------------------

tab=$'\t'
libdirs=()                 # directories added to LD_LIBRARY_PATH, in order
declare -A found_in=()     # soname -> where it was found
ldpath() {
	local IFS=:
	echo "${libdirs[*]}${LD_LIBRARY_PATH:+${libdirs[*]:+:}$LD_LIBRARY_PATH}"
}

# site_dirs prints python3's site-packages directories and PYTHONPATH's
# entries, for python3 on PATH and /usr/bin/python3.
site_dirs() {
	local py
	for py in python3 /usr/bin/python3; do
		command -v "$py" >/dev/null 2>&1 || continue
		"$py" - <<'EOF' 2>/dev/null || true
import os, site, sys
dirs = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
dirs.append(site.getusersitepackages())
dirs += [d for d in os.environ.get("PYTHONPATH", "").split(os.pathsep) if d]
dirs += [d for d in sys.path if d.endswith(("site-packages", "dist-packages"))]
for d in dirs:
    if os.path.isdir(d):
        print(os.path.realpath(d))
EOF
	done | awk '!seen[$0]++'
}

# search SONAME prints the first directory holding SONAME, a tab, and how it
# was found.
search() {
	local soname=$1 d f
	local IFS=:
	for d in ${GPUZ_CUDA_LIBS:-}; do
		[[ -n $d && -e $d/$soname ]] && { printf '%s\t%s\n' "$d" "GPUZ_CUDA_LIBS"; return; }
	done
	unset IFS
	for d in /usr/local/cuda*/lib64 /usr/local/cuda*/targets/*/lib /opt/cuda*/lib64; do
		[[ -e $d/$soname ]] && { printf '%s\t%s\n' "$d" "a CUDA installation"; return; }
	done
	while IFS= read -r d; do
		f=$(find "$d" -maxdepth 6 -name "$soname" \( -type f -o -type l \) -print -quit 2>/dev/null)
		[[ -n $f ]] && { printf '%s\t%s\n' "$(dirname "$f")" "python3's site-packages"; return; }
	done < <(site_dirs)
	return 1
}

# resolve_libs finds what the loader lacks for $bin, adding directories to
# libdirs until nothing is missing (a found library may need others, as
# cuBLAS needs cuBLASLt). Sets missing to what could not be found.
missing=()
resolve_libs() {
	local round lddout soname hit progress dir
	for round in 1 2 3 4 5; do
		lddout=$(LD_LIBRARY_PATH=$(ldpath) ldd "$bin" 2>&1) || true
		if glibc=$(grep -o 'version .GLIBC_[0-9.]*. not found' <<<"$lddout"); then
			echo "gpu-check: $bin needs a newer C library than this machine's: $(sort -u <<<"$glibc" | paste -sd, -)" >&2
			exit 1
		fi
		mapfile -t missing < <(awk '/=> not found/ { print $1 }' <<<"$lddout" | awk '!seen[$0]++')
		((${#missing[@]})) || return 0
		progress=0
		for soname in "${missing[@]}"; do
			[[ $soname == libcuda.so.1 ]] && continue # the driver's: never taken from elsewhere
			if hit=$(search "$soname"); then
				dir=${hit%%"$tab"*}
				[[ " ${libdirs[*]} " == *" $dir "* ]] || libdirs+=("$dir")
				found_in[$soname]=${hit#*"$tab"}
				progress=1
			fi
		done
		((progress)) || return 0
	done
}

libreport=() # "soname|path|how" for the summary
if command -v ldd >/dev/null 2>&1; then
	resolve_libs
	if ((${#missing[@]})); then
		cuda=() driver=
		for soname in "${missing[@]}"; do
			if [[ $soname == libcuda.so.1 ]]; then driver=1; else cuda+=("$soname"); fi
		done
		msg="gpu-check: missing libraries for $bin:"
		if ((${#cuda[@]})); then
			major=$(printf '%s\n' "${cuda[@]}" | sed -n 's/^lib\(cublas\|cublasLt\|nvrtc\)\.so\.\([0-9]*\).*/\2/p' | head -1)
			msg+=" $(printf '%s\n' "${cuda[@]}" | paste -sd, - | sed 's/,/, /g') (searched the loader's paths, GPUZ_CUDA_LIBS, /usr/local/cuda*/lib64 and python3's site-packages"
			msg+="${major:+: install CUDA $major's cuBLAS and NVRTC, the toolkit or pip's nvidia-cublas and nvidia-cuda-nvrtc wheels for CUDA $major,} or name their directory in GPUZ_CUDA_LIBS)"
		fi
		if [[ -n $driver ]]; then
			msg+="${cuda[*]:+ and} libcuda.so.1, the NVIDIA driver's (no driver on this machine)"
		fi
		echo "$msg" >&2
		exit 1
	fi
	lddout=$(LD_LIBRARY_PATH=$(ldpath) ldd "$bin" 2>&1) || true
	loader="the loader's own search"
	while read -r soname path; do
		how=${found_in[$soname]:-$loader}
		libreport+=("$soname|$path|$how")
		echo "gpu-check: $soname: $path ($how)"
	done < <(awk '$1 ~ /^lib(cuda|cublas|cublasLt|nvrtc)\.so/ && $2 == "=>" { print $1, $3 }' <<<"$lddout")
else
	echo "gpu-check: no ldd on this machine: the binary's libraries are not looked for"
fi
gpuz_env=(env)
if ((${#libdirs[@]})); then
	gpuz_env=(env "LD_LIBRARY_PATH=$(ldpath)")
	echo "gpu-check: gpuz's commands run with LD_LIBRARY_PATH=$(ldpath)"
fi

# The binary must start: the GPU build without a usable GPU stops with its
# own one line, which is all this script then says.
rc=0
version_out=$("${gpuz_env[@]}" "$bin" version 2>&1) || rc=$?
if ((rc != 0)); then
	if grep -q "no usable CUDA GPU" <<<"$version_out"; then
		grep -m1 "no usable CUDA GPU" <<<"$version_out" >&2
		exit 2
	fi
	echo "gpu-check: $bin does not start (status $rc): $(head -1 <<<"$version_out")" >&2
	exit 1
fi
# Every function the binary calls must be in the libraries found: with
# LD_BIND_NOW the loader checks them all at start. Lazy binding may still
# run a binary that never calls a missing one, so this only warns.
bind_warning=
if ((gpu)) && ! bind_out=$(LD_BIND_NOW=1 "${gpuz_env[@]}" "$bin" version 2>&1); then
	bind_warning=$(grep -m1 -o 'undefined symbol: [^ ,]*' <<<"$bind_out" || head -1 <<<"$bind_out")
	echo "gpu-check: warning: with LD_BIND_NOW=1 the binary does not start ($bind_warning): the libraries found lack a function it links"
fi

cpu_scale=$scale
if ((gpu && !full_cpu)) && [[ $scale == full ]] && grep -q '^BLAS: gonum' <<<"$version_out"; then
	cpu_scale=small
fi

# ---- the peer ------------------------------------------------------------

# torch_python prints the first of python3 and /usr/bin/python3 whose torch
# sees a usable CUDA GPU (with any, when $1 is "any").
torch_python() {
	local py
	for py in python3 /usr/bin/python3; do
		command -v "$py" >/dev/null 2>&1 || continue
		if [[ ${1:-} == any ]]; then
			"$py" -c 'import torch' >/dev/null 2>&1 && { echo "$py"; return; }
		else
			"$py" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' >/dev/null 2>&1 && { echo "$py"; return; }
		fi
	done
	return 1
}
peer_py=
case $peer in
auto)
	peer=0
	if ((gpu)) && peer_py=$(torch_python); then peer=1; fi
	;;
1)
	peer_py=$(torch_python) || peer_py=$(torch_python any) ||
		{ echo "gpu-check: --peer: neither python3 nor /usr/bin/python3 can import torch" >&2; exit 2; }
	[[ -f $peer_script ]] || { echo "gpu-check: --peer: $peer_script not found" >&2; exit 2; }
	;;
esac
if ((peer)) && [[ ! -f $peer_script ]]; then
	echo "gpu-check: no $peer_script: the PyTorch peer is left out"
	peer=0
fi

# ---- the checks ------------------------------------------------------------

mkdir -p "$out"
printf '%s\n' "$version_out" >"$out/version-probe.txt"
checks=() # NAME|command|exit status|seconds|result
failed=0
# check NAME CMD...: runs CMD with stdout and stderr in $out/NAME.txt, shows
# its last lines, and records its result. gpuz's commands run with the
# library path found above.
check() {
	local name=$1 rc=0 result t0=$SECONDS
	shift
	echo "== $name: $*"
	printf '$ %s\n' "$*" >"$out/$name.txt"
	if [[ $1 == "$bin" ]]; then
		"${gpuz_env[@]}" "$@" >>"$out/$name.txt" 2>&1 || rc=$?
	else
		"$@" >>"$out/$name.txt" 2>&1 || rc=$?
	fi
	tail -n 12 "$out/$name.txt"
	case $rc in
	0) result=passed ;;
	3) result="passed; a mode did not complete (status 3, see $name.txt)" ;;
	*) result="**FAILED**"; failed=$((failed + 1)) ;;
	esac
	checks+=("$name|$*|$rc|$((SECONDS - t0))|$result")
}

if command -v nvidia-smi >/dev/null 2>&1; then
	nvidia-smi -q >"$out/nvidia-smi.txt" 2>&1 || true
fi
check version "$bin" version
check selftest "$bin" selftest --device "$device"
check devices "$bin" devices
runs=()
for workload in linear resnet attention; do
	for task in train eval; do
		if [[ $cpu_scale == "$scale" ]]; then
			check "$workload-$task" "$bin" "$workload" "$task" cuda,cache,cpu --device "$device" \
				--epochs 3 --scale "$scale" --json "$out/$workload-$task.json"
			runs+=("$workload-$task")
		else
			check "$workload-$task" "$bin" "$workload" "$task" cuda,cache --device "$device" \
				--epochs 3 --scale "$scale" --json "$out/$workload-$task.json"
			check "$workload-$task-cpu" "$bin" "$workload" "$task" cpu \
				--epochs 3 --scale "$cpu_scale" --json "$out/$workload-$task-cpu.json"
			runs+=("$workload-$task" "$workload-$task-cpu")
		fi
	done
done
# The managed mode (every block in managed memory), linear training: with
# nothing taken, beside cuda (the same losses; nothing migrates after the
# warm-up), and under pressure, --take leaving it three quarters of its
# need as the plan counts it (cuda OOM, managed completes: status 3);
# below the full scale, whose need is a few 2 MiB pages, in 64 KiB pages.
page=2MiB
[[ $scale == full ]] || page=64KiB
check managed "$bin" linear train cuda,managed --device "$device" --managed-page "$page" \
	--epochs 3 --scale "$scale" --json "$out/managed.json"
runs+=(managed)
plan_json=$("${gpuz_env[@]}" "$bin" plan linear train cuda --device "$device" --scale "$scale" --json - 2>/dev/null || true)
need=$(sed -n 's/.*"device_bytes": \([0-9]*\).*/\1/p' <<<"$plan_json" | head -n 1)
free=$(sed -n 's/.*"device_free": \([0-9]*\).*/\1/p' <<<"$plan_json" | head -n 1)
if [[ -n $need && -n $free ]] && ((free > need)); then
	check managed-pressure "$bin" linear train cuda,managed --device "$device" --managed-page "$page" \
		--epochs 3 --scale "$scale" --take "$((free - need * 3 / 4))B" --json "$out/managed-pressure.json"
	runs+=(managed-pressure)
fi
# 16 bits (--precision): each workload's cuda mode in bf16 (GemmEx and
# the conversion kernels on the GPU), and linear training in fp16 with its
# loss scale, beside the fp32 rows above.
for workload in linear resnet attention; do
	for task in train eval; do
		check "$workload-$task-bf16" "$bin" "$workload" "$task" cuda --device "$device" --precision bf16 \
			--epochs 3 --scale "$scale" --json "$out/$workload-$task-bf16.json"
		runs+=("$workload-$task-bf16")
	done
done
check linear-train-fp16 "$bin" linear train cuda --device "$device" --precision fp16 \
	--epochs 3 --scale "$scale" --json "$out/linear-train-fp16.json"
runs+=(linear-train-fp16)
# gpuz llm (your model): SmolLM2-135M's shape, its cuda and cache modes,
# with the plan's need beside the measured peak; at full scale all 30
# layers and sequences of 512 in batches of 4, else 2 layers of 64.
if [[ $scale == full ]]; then llm_size=(--seq-len 512 --batch 4 --samples 8); else llm_size=(--layers 2 --seq-len 64 --batch 2 --samples 4); fi
for task in train eval; do
	check "llm-$task" "$bin" llm "$task" cuda,cache --model smollm2-135m --policy auto --win-size 0 \
		--device "$device" --epochs 3 "${llm_size[@]}" --json "$out/llm-$task.json"
	runs+=("llm-$task")
	"${gpuz_env[@]}" "$bin" plan llm "$task" cuda --model smollm2-135m --device "$device" "${llm_size[@]}" \
		--json "$out/llm-$task-plan.json" >/dev/null 2>&1 || true
	# PyTorch's own peak for the same model and step, on the GPU.
	if ((peer)) && ((gpu)) && [[ -f $llm_script && -f $presets/smollm2-135m.json ]]; then
		llm_torch=(--seq-len "${llm_size[1]}" --batch "${llm_size[3]}")
		[[ ${llm_size[0]} == --layers ]] && llm_torch=(--layers 2 --seq-len 64 --batch 2)
		check "peer-llm-$task-peak" "$peer_py" "$llm_script" peak "$presets/smollm2-135m.json" "${llm_torch[@]}" \
			--task "$task" --json "$out/peer-llm-$task-peak.json"
	fi
done
# gpuz llm generate: SmolLM2-135M's shape generating greedily with a
# key-value cache, cuda and cache (its layers streamed), with the plan's
# need beside the measured peak and the tokens/s; at full scale all 30
# layers, a prompt of 512 and 128 tokens, else 2 layers, 32 and 8.
if [[ $scale == full ]]; then gen_size=(--prompt 512 --tokens 128); else gen_size=(--layers 2 --prompt 32 --tokens 8); fi
check llm-generate "$bin" llm generate cuda,cache --model smollm2-135m --policy auto --win-size 0 \
	--device "$device" --epochs 3 "${gen_size[@]}" --json "$out/llm-generate.json"
runs+=(llm-generate)
"${gpuz_env[@]}" "$bin" plan llm generate cuda --model smollm2-135m --device "$device" "${gen_size[@]}" \
	--json "$out/llm-generate-plan.json" >/dev/null 2>&1 || true
# PyTorch's greedy decode of the same model with its own static cache
# (torch_llm.py generate), on the GPU: its tokens/s and
# max_memory_allocated.
if ((peer)) && ((gpu)) && [[ -f $llm_script && -f $presets/smollm2-135m.json ]]; then
	check peer-llm-generate "$peer_py" "$llm_script" generate "$presets/smollm2-135m.json" "${gen_size[@]}" \
		--device cuda --repeats 3 --json "$out/peer-llm-generate.json"
fi
# PyTorch's own peak of a training step beside gpuz's plan of that step
# as PyTorch runs it (plan llm train --framework torch; docs/llm.md, "What
# PyTorch would hold"): SmolLM2-135M and Qwen2.5-0.5B, float32, eager
# attention, full fine-tuning, sequences of 512 in batches of 2. The plan
# runs on any device; torch_llm.py peak (its own transformers-shaped
# model, two steps of Adam: torch.cuda.max_memory_allocated()) on a GPU
# with PyTorch. A comparison, not a check: SUMMARY.md gives both and their
# ratio, and an error here fails nothing.
fw_py=
if ((gpu)) && [[ -f $llm_script ]]; then fw_py=$(torch_python) || fw_py=; fi
fw_models=(smollm2-135m qwen2.5-0.5b)
fw_size=(--seq-len 512 --batch 2)
for model in "${fw_models[@]}"; do
	echo "== framework-$model: gpuz plan llm train --framework torch beside PyTorch's max_memory_allocated"
	"${gpuz_env[@]}" "$bin" plan llm train cuda --model "$model" --device "$device" --framework torch --attention eager \
		--precision fp32 "${fw_size[@]}" --samples 2 --json "$out/framework-$model-plan.json" >"$out/framework-$model-plan.txt" 2>&1 ||
		echo "gpu-check: the plan of $model --framework torch failed (framework-$model-plan.txt)"
	if [[ -n $fw_py && -f $presets/$model.json ]]; then
		{ printf '$ %s\n' "$fw_py $llm_script peak $presets/$model.json ${fw_size[*]} --task train"
			"$fw_py" "$llm_script" peak "$presets/$model.json" "${fw_size[@]}" --task train \
				--json "$out/framework-$model-peak.json"; } >"$out/framework-$model-peak.txt" 2>&1 ||
			echo "gpu-check: PyTorch's peak of $model failed (framework-$model-peak.txt)"
		tail -n 2 "$out/framework-$model-peak.txt"
	fi
done
if ((peer)); then
	for workload in linear resnet attention; do
		for task in train eval; do
			if ((gpu)); then
				check "peer-$workload-$task-cuda" "$peer_py" "$peer_script" "$workload" "$task" --device cuda \
					--scale "$scale" --epochs 3 --json "$out/peer-$workload-$task-cuda.json"
				check "peer-$workload-$task-cuda-bf16" "$peer_py" "$peer_script" "$workload" "$task" --device cuda \
					--precision bf16 --scale "$scale" --epochs 3 --json "$out/peer-$workload-$task-cuda-bf16.json"
			fi
			check "peer-$workload-$task-cpu" "$peer_py" "$peer_script" "$workload" "$task" --device cpu \
				--scale "$cpu_scale" --epochs 3 --json "$out/peer-$workload-$task-cpu.json"
		done
	done
fi

# ---- the summary -----------------------------------------------------------

# summary_tables writes the medians per run and, with the peer, gpuz beside
# PyTorch, from the JSON files (needs python3).
summary_tables() {
	if ! command -v python3 >/dev/null 2>&1; then
		echo "## Medians"
		echo
		echo "See the runs' JSON files (no python3 to read them)."
		return
	fi
	python3 - "$out" "$peer" "$gpu" "$scale" "$cpu_scale" "${runs[@]}" <<'EOF'
import json, os, sys
out, peer, gpu, scale, cpu_scale, runs = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1", sys.argv[4], sys.argv[5], sys.argv[6:]

def load(name):
    try:
        with open(os.path.join(out, name + ".json")) as f:
            return json.load(f), None
    except FileNotFoundError:
        return None, "no JSON written"
    except Exception as e:
        return None, f"unreadable JSON: {e}"

def fmt(x):
    return f"{x:.6g}" if isinstance(x, (int, float)) else "-"

def gpuz_median(doc, mode):
    for m in (doc or {}).get("modes") or []:
        st = m.get("stats") or {}
        if m.get("mode") == mode and st.get("n"):
            return st.get("median_seconds")
    return None

kernels = None
print("## Medians per run (seconds per timed epoch)")
print()
print("| run | mode | device | status | median (s) |")
print("|---|---|---|---|---|")
docs = {}
for name in runs:
    doc, err = load(name)
    docs[name] = doc
    if doc is None:
        print(f"| {name} | - | - | {err} | |")
        continue
    kernels = kernels or ((doc.get("header") or {}).get("env") or {}).get("gpu", {}) or {}
    kernels = kernels if kernels else None
    for m in doc.get("modes") or []:
        st = m.get("stats") or {}
        med = st.get("median_seconds") if st.get("n") else None
        reason = (m.get("reason") or "").replace("|", "/").replace("\n", " ")
        print(f"| {name} | {m.get('mode', '?')} | {m.get('device', '?')} | {m.get('status', '?')} {reason} | {fmt(med)} |")
print()
if kernels and kernels.get("kernels"):
    print(f"Kernels on {kernels.get('name', 'the GPU')} (compute capability {kernels.get('compute_capability', '?')}): {kernels['kernels']}.")
    print()
print("## llm (SmolLM2-135M's shape): device memory, planned and measured")
print()
print("| task | gpuz plan (cuda) | gpuz measured peak (cuda) | PyTorch max_memory_allocated |")
print("|---|---|---|---|")
for t in ("train", "eval", "generate"):
    plan, _ = load(f"llm-{t}-plan")
    run = docs.get(f"llm-{t}")
    ptorch, _ = load(f"peer-llm-{t}-peak" if t != "generate" else "peer-llm-generate")
    if t == "generate" and ptorch:
        ptorch = {"peak_device_bytes": ptorch.get("max_memory_allocated")}
    need = next((m.get("device_bytes") for m in (plan or {}).get("modes") or [] if m.get("mode") == "cuda"), None)
    peak = next((m.get("peak_device_bytes") for m in (run or {}).get("modes") or [] if m.get("mode") == "cuda"), None)
    mib = lambda b: f"{b / 2**20:.1f} MiB" if isinstance(b, (int, float)) else "-"
    print(f"| {t} | {mib(need)} | {mib(peak)} | {mib((ptorch or {}).get('peak_device_bytes'))} |")
print()
print("## PyTorch's peak against gpuz's plan of it (--framework torch)")
print()
print("A training step of full fine-tuning in float32 with eager attention, sequences of 512 in batches of 2:")
print("`gpuz plan llm train --framework torch`'s peak beside PyTorch's `torch.cuda.max_memory_allocated()`")
print("over two steps of Adam (scripts/torch_llm.py peak). Not a check: the first GPU run settles the ratio.")
print()
print("| model | planned peak (--framework torch) | PyTorch max_memory_allocated | PyTorch / planned |")
print("|---|---|---|---|")
for model in ("smollm2-135m", "qwen2.5-0.5b"):
    plan, _ = load(f"framework-{model}-plan")
    ptorch, _ = load(f"framework-{model}-peak")
    planned = ((plan or {}).get("framework") or {}).get("bytes", {}).get("peak")
    measured = (ptorch or {}).get("peak_device_bytes")
    mib = lambda b: f"{b / 2**20:.1f} MiB" if isinstance(b, (int, float)) else "-"
    ratio = f"{measured / planned:.3f}" if planned and measured else "-"
    why = "" if ptorch else " (not run: no GPU with PyTorch, or it failed: framework-" + model + "-peak.txt)"
    print(f"| {model} | {mib(planned)} | {mib(measured)}{why} | {ratio} |")
print()
gen = docs.get("llm-generate")
if gen:
    print("## llm generate (SmolLM2-135M's shape): tokens per second")
    print()
    print("| mode | device | prefill tok/s | decode tok/s | first token (s) |")
    print("|---|---|---|---|---|")
    for m in gen.get("modes") or []:
        timed = [e["generation"] for e in m.get("epochs") or [] if not e.get("warmup") and e.get("generation")]
        rate = lambda n, s: f"{n / s:.4g}" if s else "-"
        pt, ps = sum(g["prefill_tokens"] for g in timed), sum(g["prefill_seconds"] for g in timed)
        dt, ds = sum(g["decode_tokens"] for g in timed), sum(g["decode_seconds"] for g in timed)
        first = f"{ps / len(timed):.3g}" if timed else "-"
        print(f"| {m.get('mode', '?')} | {m.get('device', '?')} | {rate(pt, ps)} | {rate(dt, ds)} | {first} |")
    ptorch, _ = load("peer-llm-generate")
    if ptorch:
        dec = ptorch.get("decode_tokens_per_second")
        print(f"| PyTorch {ptorch.get('torch', '?')} | {ptorch.get('gpu') or ptorch.get('device', '?')} | "
              f"{ptorch.get('prefill_tokens_per_second', 0):.4g} | {dec:.4g} | {ptorch.get('prefill_seconds', 0):.3g} |"
              if dec else f"| PyTorch | - | - | - | - |")
    print()
if not peer:
    sys.exit()
print("## gpuz and PyTorch on the same workloads (median seconds per timed epoch)")
print()
print("| workload | task | mode | scale | gpuz | PyTorch | gpuz / PyTorch |")
print("|---|---|---|---|---|---|---|")
torch_info = None
for w in ("linear", "resnet", "attention"):
    for t in ("train", "eval"):
        rows = []
        if gpu:
            rows.append(("cuda", scale, docs.get(f"{w}-{t}"), f"peer-{w}-{t}-cuda"))
        cpu_doc = docs.get(f"{w}-{t}-cpu") or docs.get(f"{w}-{t}")
        rows.append(("cpu", cpu_scale, cpu_doc, f"peer-{w}-{t}-cpu"))
        for mode, sc, gdoc, pname in rows:
            g = gpuz_median(gdoc, mode)
            pdoc, _ = load(pname)
            p = (pdoc or {}).get("median_seconds")
            if pdoc:
                torch_info = torch_info or pdoc
            ratio = f"{g / p:.2f}" if isinstance(g, (int, float)) and isinstance(p, (int, float)) and p > 0 else "-"
            print(f"| {w} | {t} | {mode} | {sc} | {fmt(g)} | {fmt(p)} | {ratio} |")
print()
if torch_info:
    where = f" on {torch_info['gpu']}" if torch_info.get("gpu") else ""
    print(f"PyTorch: torch {torch_info.get('torch')}, python {torch_info.get('python')}{where}, "
          f"{torch_info.get('threads')} CPU threads; torch_reference.py builds the same sizes, parameters and "
          "matrix-product FLOPs as gpuz (checked at small scale in CI by scripts/test-torch-reference.sh). "
          "A ratio above 1: gpuz is slower.")
    print()
EOF
}

{
	echo "# gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo
	echo "- binary: \`$bin\` ($(head -1 <<<"$version_out"); $(grep -m1 '^BLAS:' <<<"$version_out" || echo 'BLAS: ?'))"
	echo "- device: \`$device\`, scale: $scale (cpu rows: $cpu_scale), epochs: 3 (1 warm-up)"
	echo "- host: $(uname -srm), $(nproc) cores"
	for r in "${libreport[@]}"; do
		IFS='|' read -r soname path how <<<"$r"
		echo "- $soname: \`$path\` ($how)"
	done
	if ((${#libdirs[@]})); then
		echo "- gpuz's commands ran with \`LD_LIBRARY_PATH=$(ldpath)\`"
	fi
	[[ -z $bind_warning ]] || echo "- warning: with LD_BIND_NOW=1 the binary does not start ($bind_warning)"
	if ((peer)); then
		echo "- peer: \`$peer_py $peer_script\`"
	else
		echo "- peer: not run"
	fi
	if [[ -f $out/nvidia-smi.txt ]]; then
		echo "- nvidia-smi -q: nvidia-smi.txt"
	else
		echo "- nvidia-smi: not found"
	fi
	echo "- took $((SECONDS - started)) s"
	echo
	echo "## Checks"
	echo
	echo "| check | command | exit | seconds | result |"
	echo "|---|---|---|---|---|"
	for c in "${checks[@]}"; do
		IFS='|' read -r name cmd rc secs result <<<"$c"
		echo "| $name | \`$cmd\` | $rc | $secs | $result |"
	done
	echo
	summary_tables
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
