#!/usr/bin/env bash
# The GPU build's checks without a GPU, against one CUDA version's fetched
# toolchain (scripts/cuda-toolchain.sh VERSION): go vet and build with
# -tags gpuzcuda into bin/gpuz-cuda-VERSION, NVRTC-compile every kernel (the
# test binary finds NVRTC through its rpath: no LD_LIBRARY_PATH), check with
# ldd that the binary lacks no library once the driver and cuBLAS are there
# (the stubs stand in for them) and finds NVRTC in the toolchain by itself,
# and start it against the stub driver: it must stop with its one-line "no
# usable CUDA GPU" message and status 2. Fails, never skips, when the
# toolchain cannot be fetched.
#
#   scripts/test-cuda.sh 11.8|12.4
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=$PATH:/usr/local/go/bin
GO=${GO:-go}
version=${1:?usage: scripts/test-cuda.sh 11.8|12.4}
bin=bin/gpuz-cuda-$version

fail() {
	echo "test-cuda $version: $*" >&2
	exit 1
}

env=$(bash scripts/cuda-toolchain.sh "$version")
eval "$env"
unset LD_LIBRARY_PATH

echo "== CUDA $version: $GO vet -tags gpuzcuda ./..."
$GO vet -tags gpuzcuda ./...
echo "== CUDA $version: $GO build -tags gpuzcuda -o $bin ./cmd/gpuz"
$GO build -buildvcs=auto -tags gpuzcuda -o "$bin" ./cmd/gpuz
echo "== CUDA $version: $GO test -tags gpuzcuda ./internal/device/gpu/ (NVRTC compile, PTX signatures, PTX cache)"
$GO test -count=1 -tags gpuzcuda ./internal/device/gpu/

echo "== CUDA $version: ldd $bin"
deps=$(LD_LIBRARY_PATH=$GPUZ_CUDA_STUBS ldd "$bin")
echo "$deps"
if grep -q 'not found' <<<"$deps"; then
	fail "$bin lacks a library even with the driver and cuBLAS stubs in place"
fi
grep -Eq "libnvrtc\.so\.[0-9.]+ => $GPUZ_CUDA_ROOT/" <<<"$(ldd "$bin")" ||
	fail "$bin does not find NVRTC in $GPUZ_CUDA_ROOT by itself (rpath)"
major=${version%%.*}
grep -q "libcublas.so.$major" <<<"$deps" || fail "$bin does not link cuBLAS $major"

echo "== CUDA $version: $bin devices (stub driver: must fail with one line and status 2)"
rc=0
out=$(LD_LIBRARY_PATH=$GPUZ_CUDA_STUBS "$bin" devices 2>&1) || rc=$?
echo "$out"
if ((rc != 2)) || [[ $(wc -l <<<"$out") -ne 1 ]] || ! grep -q "no usable CUDA GPU" <<<"$out"; then
	fail "expected one 'no usable CUDA GPU' line and status 2, got status $rc"
fi
echo "== CUDA $version: ok"
