#!/usr/bin/env bash
# Checks how `make run` picks its build, on a machine without a GPU:
#
#   - no driver (an empty `ldconfig -p` and no /proc/driver/nvidia/version):
#     `make -n run` is the default build and bin/gpuz, as without this
#     detection (and, when this machine has no driver, the same as with no
#     stand-ins at all);
#   - a stand-in driver (a fake `ldconfig -p` listing the stub libcuda.so.1 of
#     the fetched CUDA toolchain, which LD_LIBRARY_PATH then loads): `make run`
#     builds bin/gpuz-cuda and starts it, and it stops with its one-line "no
#     usable CUDA GPU" message and status 2;
#   - the stand-in with GPU=0: the default build again.
#
# Needs the CUDA toolchain in ~/.cache (run after make test-cuda; it would
# otherwise be fetched).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=$PATH:/usr/local/go/bin
version=${CUDA:-11.8}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "test-make-run: FAIL: $*" >&2
	exit 1
}

default_run=$'bash scripts/install-deps.sh\necho "building bin/gpuz (the first build compiles gorgonia and the OpenBLAS bindings: about a minute)"\ngo build -buildvcs=auto -o bin/gpuz ./cmd/gpuz\n./bin/gpuz linear train cuda,cache,cpu'

echo "== no driver: make -n run is the default build"
nodriver=(env GPUZ_LDCONFIG=true GPUZ_NVIDIA_PROC="$tmp/none")
out=$("${nodriver[@]}" make -s -n run GO=go)
echo "$out"
[[ $out == "$default_run" ]] || fail "make -n run without a driver is not the default build"
"${nodriver[@]}" bash scripts/cuda-driver.sh && fail "cuda-driver.sh found a driver with an empty ldconfig"
if ! bash scripts/cuda-driver.sh >/dev/null; then
	[[ $(make -s -n run GO=go) == "$default_run" ]] || fail "make -n run on this machine (no driver) is not the default build"
fi

env=$(bash scripts/cuda-toolchain.sh "$version")
eval "$env"
printf '#!/bin/sh\nprintf "2 libs found in cache\\n\\tlibcuda.so.1 (libc6,x86-64) => %s/libcuda.so.1\\n"\n' "$GPUZ_CUDA_STUBS" >"$tmp/ldconfig"
chmod +x "$tmp/ldconfig"
unset CGO_CFLAGS CGO_LDFLAGS
standin=(env GPUZ_LDCONFIG="$tmp/ldconfig" GPUZ_NVIDIA_PROC="$tmp/none" LD_LIBRARY_PATH="$GPUZ_CUDA_STUBS" CUDA="$version")

echo "== stand-in driver ($GPUZ_CUDA_STUBS/libcuda.so.1): make -n run"
out=$("${standin[@]}" make -s -n run GO=go)
echo "$out"
grep -q 'cuda-build.sh --fetch' <<<"$out" || fail "make -n run with a driver does not build the GPU binary"
grep -q '^\./bin/gpuz-cuda linear train cuda,cache,cpu$' <<<"$out" || fail "make -n run with a driver does not run bin/gpuz-cuda"

echo "== stand-in driver: make run"
rm -f bin/gpuz-cuda
rc=0
"${standin[@]}" make --no-print-directory run GO=go >"$tmp/run.out" 2>&1 || rc=$?
cat "$tmp/run.out"
((rc != 0)) || fail "make run with the stub driver succeeded"
[[ -x bin/gpuz-cuda ]] || fail "make run did not build bin/gpuz-cuda"
grep -q "^NVIDIA driver found (libcuda.so.1 at $GPUZ_CUDA_STUBS/libcuda.so.1)" "$tmp/run.out" || fail "make run did not say it found the driver"
[[ $(grep -c 'no usable CUDA GPU' "$tmp/run.out") -eq 1 ]] || fail "bin/gpuz-cuda did not print one 'no usable CUDA GPU' line"
grep -q '^gpuz: no usable CUDA GPU (cuInit: CUDA_ERROR_STUB_LIBRARY' "$tmp/run.out" || fail "the line is not the stub driver's"
grep -q 'run\] Error 2' "$tmp/run.out" || fail "bin/gpuz-cuda did not exit with status 2"

echo "== stand-in driver, GPU=0: make -n run is the default build"
out=$("${standin[@]}" make -s -n run GO=go GPU=0)
[[ $out == "$default_run" ]] || fail "make -n run GPU=0 is not the default build: $out"
echo "test-make-run: ok"
