#!/usr/bin/env bash
# Packs the GPU build for a machine with a GPU but no Go, no compiler and no
# network (such as the H100/H200 machines this project's tooling lends):
#
#   scripts/dist-cuda.sh [13|12.4|11.8]      (make dist-cuda [CUDA=…]; default 13)
#
# writes dist/gpuz-cuda<VERSION>-linux-amd64.tar.gz, at most 30 MB, holding
# one directory gpuz-cuda<VERSION>-linux-amd64/ with
#
#   gpuz-cuda            the GPU binary: -tags gpuzcuda,purego (gonum's BLAS,
#                        so no OpenBLAS is needed there), stripped, no rpath;
#                        it needs the driver's libcuda.so.1 and the CUDA
#                        VERSION cuBLAS and NVRTC (13: libcublas.so.13 and
#                        libnvrtc.so.13, linked as scripts/cuda13-stubs.sh says)
#   gpu-check.sh         scripts/gpu-check.sh: finds those libraries (the
#                        system's, /usr/local/cuda*, pip's nvidia wheels),
#                        then runs the checks
#   torch_reference.py   the PyTorch peer that gpu-check.sh --peer runs
#   torch_llm.py         the llm workload in PyTorch: gpu-check.sh --peer
#                        prints its peak device memory beside gpuz's
#   presets/             the llm presets' config.json files, which
#                        torch_llm.py reads (gpuz embeds them)
#   README.md            what to run there and what to send back
#
# The CUDA headers come from the toolchain in ~/.cache (fetched when
# missing, as scripts/cuda-build.sh --fetch does). Prints the archive's path
# and size; fails when it is over 30 MB.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=$PATH:/usr/local/go/bin
version=${1:-13}
case $version in
11.8 | 12.4 | 13) ;;
*) echo "make dist-cuda: CUDA=$version: the bundle is made for CUDA 13, 12.4 or 11.8" >&2; exit 2 ;;
esac
(($# <= 1)) || { echo "usage: scripts/dist-cuda.sh [13|12.4|11.8]" >&2; exit 2; }
limit=$((30 * 1000 * 1000))

name=gpuz-cuda$version-linux-amd64
stage=dist/$name
archive=dist/$name.tar.gz
rm -rf "$stage" "$archive"
mkdir -p "$stage"

unset CGO_CFLAGS CGO_LDFLAGS
# CUDA 11.8 and 12.4 from the fetched toolchain: the system's headers, if
# any, might be another version than the one named.
bash scripts/cuda-build.sh --fetch --no-system --version "$version" --purego --no-rpath --strip -o "$stage/gpuz-cuda"
cp scripts/gpu-check.sh scripts/torch_reference.py scripts/torch_llm.py "$stage/"
mkdir -p "$stage/presets"
cp internal/hfconfig/presets/*.json "$stage/presets/"
chmod 755 "$stage/gpu-check.sh" "$stage/torch_reference.py" "$stage/torch_llm.py" "$stage/gpuz-cuda"

needed=$(readelf -d "$stage/gpuz-cuda" | awk '/NEEDED/ { gsub(/[][]/, "", $NF); print $NF }' | grep -E '^lib(cuda|cublas|nvrtc)' | paste -sd, - | sed 's/,/, /g')
glibc=$(nm -D --undefined-only "$stage/gpuz-cuda" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
revision=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n $(git status --porcelain 2>/dev/null) ]]; then revision="$revision (with uncommitted changes)"; fi
case $version in
13) driver="R580 or newer, for CUDA 13" pip="nvidia-cublas nvidia-cuda-nvrtc" ;;
12.4) driver="R550 or newer, for CUDA 12.4" pip="nvidia-cublas-cu12 nvidia-cuda-nvrtc-cu12" ;;
11.8) driver="R520 or newer, for CUDA 11.8" pip="nvidia-cublas-cu11 nvidia-cuda-nvrtc-cu11" ;;
esac

cat >"$stage/README.md" <<EOF
# gpuz for CUDA $version (linux-amd64)

The GPU build of gpuz ($revision, built $(date -u +%Y-%m-%d)), packed to run
on a machine with an NVIDIA GPU and no Go. **It has not been run on a GPU by
its authors yet**: this bundle is how that is meant to happen.

## Run

    tar xzf $name.tar.gz && cd $name
    ./gpu-check.sh

\`gpu-check.sh\` first finds the libraries \`gpuz-cuda\` needs: $needed.
libcuda.so.1 is the NVIDIA driver's (driver $driver). The others are looked
for where the loader looks, then in \`\$GPUZ_CUDA_LIBS\` (directories, colon
separated), \`/usr/local/cuda*/lib64\`, and under python3's site-packages
(pip's CUDA wheels, e.g. \`pip install $pip\`, or those PyTorch installed).
It says where it found each and runs gpuz with that library path; if one is
missing it says which in one line and stops.

Then it runs \`gpuz version\`, \`gpuz selftest --device cuda\`, \`gpuz
devices\`, and each workload (linear, resnet, attention) in train and eval
with the cuda and cache modes at full scale and the cpu mode (this binary's
BLAS is pure Go, so its cpu rows run at small scale unless \`--full-cpu\`),
3 epochs each. When python3 has PyTorch with a usable GPU it also runs
\`torch_reference.py\`, the same workloads at the same sizes in PyTorch
(\`--no-peer\` to leave it out, \`--peer\` to force it), and writes gpuz
beside PyTorch.

Everything goes into \`gpu-check-YYYYmmdd-HHMMSS/\`: each command's output,
a JSON per run and \`SUMMARY.md\`. **Please send that directory back.**

Other options: \`./gpu-check.sh --help\` lists them (\`--small\` for a
quick run, \`--device cuda:1\`, \`--out DIR\`). The binary runs on its own
too, with the same library path: \`./gpuz-cuda linear train cuda,cache,cpu\`.

## Requirements

- x86-64 Linux with glibc $(sed 's/GLIBC_//' <<<"$glibc") or newer;
- the NVIDIA driver, $driver;
- CUDA $version's cuBLAS and NVRTC (above); no cuDNN, no OpenBLAS.

Without a usable GPU the binary stops at once with one line,
\`gpuz: no usable CUDA GPU (cuInit: …)\`, and so does \`gpu-check.sh\`.
EOF

tar --sort=name --owner=0 --group=0 --numeric-owner -C dist -czf "$archive" "$name"
size=$(stat -c %s "$archive")
echo "dist-cuda: $archive: $((size / 1000)) kB ($(stat -c %s "$stage/gpuz-cuda" | awk '{ printf "%.1f", $1 / 1e6 }') MB binary needing $needed)"
((size <= limit)) || { echo "dist-cuda: $archive is $size bytes, over the 30 MB limit" >&2; exit 1; }
