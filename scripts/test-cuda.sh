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
# 13 is the CUDA 13 link (scripts/cuda-build.sh --version 13: 12.4's
# headers, the stubs of scripts/cuda13-stubs.sh): it builds the binary and
# checks with readelf that it needs libcublas.so.13 and libnvrtc.so.13 (and
# no other cuBLAS or NVRTC), with nm that no cuBLAS or NVRTC reference is
# versioned (a versioned one, cublasCreate_v2@libcublas.so.12, would not
# resolve against CUDA 13's libraries), and starts it against the stub
# driver and the two stubs: it must stop with its one line and status 2. The
# vet and NVRTC checks are 12.4's (the same headers; no NVRTC 13 here).
#
#   scripts/test-cuda.sh 11.8|12.4|13
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=$PATH:/usr/local/go/bin
GO=${GO:-go}
version=${1:?usage: scripts/test-cuda.sh 11.8|12.4|13}
bin=bin/gpuz-cuda-$version

fail() {
	echo "test-cuda $version: $*" >&2
	exit 1
}

# starts_with_one_line BIN STUBDIR: BIN started against the stub driver in
# STUBDIR must print one "no usable CUDA GPU" line and exit with status 2.
starts_with_one_line() {
	local rc=0 out
	echo "== CUDA $version: $1 devices (stub driver: must fail with one line and status 2)"
	out=$(LD_LIBRARY_PATH=$2 "$1" devices 2>&1) || rc=$?
	echo "$out"
	if ((rc != 2)) || [[ $(wc -l <<<"$out") -ne 1 ]] || ! grep -q "no usable CUDA GPU" <<<"$out"; then
		fail "expected one 'no usable CUDA GPU' line and status 2, got status $rc"
	fi
}

if [[ $version == 13 ]]; then
	unset LD_LIBRARY_PATH CGO_CFLAGS CGO_LDFLAGS
	GO=$GO bash scripts/cuda-build.sh --fetch --version 13 -o "$bin"
	echo "== CUDA 13: readelf -d $bin (NEEDED)"
	needed=$(readelf -d "$bin" | awk '/NEEDED/ { gsub(/[][]/, "", $NF); print $NF }')
	echo "$needed"
	for lib in libcuda.so.1 libcublas.so.13 libnvrtc.so.13; do
		grep -qx "$lib" <<<"$needed" || fail "$bin does not need $lib"
	done
	if other=$(grep -E '^lib(cublas|cublasLt|nvrtc)\.' <<<"$needed" | grep -vxE 'libcublas\.so\.13|libnvrtc\.so\.13'); then
		fail "$bin needs other CUDA libraries too: $other"
	fi
	echo "== CUDA 13: nm -D $bin (no versioned cuBLAS or NVRTC reference)"
	refs=$(nm -D --undefined-only "$bin" | awk '{ print $NF }' | grep -E '^(cublas|nvrtc)') || fail "$bin references no cuBLAS or NVRTC function"
	echo "$(wc -l <<<"$refs") cuBLAS and NVRTC references, e.g. $(grep -m1 '^cublas' <<<"$refs"), $(grep -m1 '^nvrtc' <<<"$refs")"
	if versioned=$(grep '@' <<<"$refs"); then
		fail "versioned references, which CUDA 13's libraries cannot resolve: $(head -3 <<<"$versioned" | paste -sd' ' -)"
	fi
	stubs=${GPUZ_CUDA13_STUBS:-$HOME/.cache/gpuz-cuda-13}/driver-stub
	echo "== CUDA 13: ldd $bin (the stub driver and the CUDA 13 stubs in $stubs)"
	deps=$(LD_LIBRARY_PATH=$stubs ldd "$bin")
	echo "$deps"
	grep -q 'not found' <<<"$deps" && fail "$bin lacks a library even with the stubs in place"
	starts_with_one_line "$bin" "$stubs"
	echo "== CUDA 13: ok"
	exit 0
fi

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

starts_with_one_line "$bin" "$GPUZ_CUDA_STUBS"
echo "== CUDA $version: ok"
