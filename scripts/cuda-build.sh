#!/usr/bin/env bash
# Builds the GPU binary (go build -tags gpuzcuda) after checking, with a tiny
# C program compiled and linked the way cgo will, that the CUDA headers and
# libraries are there; when they are not, says in one line what is missing
# and how to get it, instead of a page of cgo errors.
#
#   scripts/cuda-build.sh [--fetch] [--version 11.8|12.4|13] [--purego] [--no-rpath] [--strip] [--no-system] [-o OUT]
#
# Where the headers come from, first found wins:
#   1. the system, or CGO_CFLAGS/CGO_LDFLAGS as set (nvidia-cuda-dev,
#      /usr/local/cuda);
#   2. a toolchain fetched by scripts/cuda-toolchain.sh into
#      ~/.cache/gpuz-cuda-VERSION (`make test-cuda` fetches 11.8 and 12.4);
#   3. with --fetch, scripts/cuda-toolchain.sh VERSION fetches it now
#      (about 800-950 MB to download, 80 MB kept), and, when the built binary
#      then lacks cuBLAS, its --runtime part as well.
# --no-system skips 1: the fetched toolchain of VERSION, whatever the
# system has. VERSION is --version's, else $CUDA, else 11.8. A binary built against a
# fetched toolchain has an rpath to its NVRTC (and cuBLAS) libraries, unless
# --no-rpath (the distributed bundle: scripts/dist-cuda.sh).
#
# VERSION 13 compiles against CUDA 12.4's headers (always the fetched
# toolchain: gorgonia.org/cu does not compile against 13's) and links
# against stubs named libcublas.so.13 and libnvrtc.so.13 that
# scripts/cuda13-stubs.sh generates into ~/.cache/gpuz-cuda-13, so that the
# binary loads CUDA 13's cuBLAS and NVRTC; it has no rpath (no CUDA 13
# library is fetched: the GPU machine has them).
#
# --purego builds with -tags gpuzcuda,purego: gonum's BLAS for the host, no
# OpenBLAS needed where it runs. --strip leaves out the symbol table and
# DWARF (-ldflags "-s -w"; Go's own stack traces keep their names).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=$PATH:/usr/local/go/bin

fetch=0
version=${CUDA:-11.8}
out=bin/gpuz-cuda
tags=gpuzcuda
rpath=1
ldflags=
system=1
usage() {
	echo "usage: scripts/cuda-build.sh [--fetch] [--version 11.8|12.4|13] [--purego] [--no-rpath] [--strip] [--no-system] [-o OUT]" >&2
	exit 2
}
while (($#)); do
	case $1 in
	--fetch) fetch=1 ;;
	--version) (($# > 1)) || usage; version=$2; shift ;;
	--purego) tags=gpuzcuda,purego ;;
	--no-rpath) rpath=0 ;;
	--strip) ldflags="-s -w" ;;
	--no-system) system=0 ;;
	-o) (($# > 1)) || usage; out=$2; shift ;;
	*) usage ;;
	esac
	shift
done
case $version in
11.8 | 12.4 | 13) ;;
*) echo "make cuda: CUDA=$version: the GPU build is made for CUDA 11.8, 12.4 or 13" >&2; exit 2 ;;
esac
GO=${GO:-go}

# probe prints what is missing for cgo to build against CUDA with the current
# CGO_CFLAGS and CGO_LDFLAGS, or nothing.
probe() {
	local dir h
	dir=$(mktemp -d)
	for h in cuda.h cublas_v2.h nvrtc.h; do
		# shellcheck disable=SC2086 # CGO_CFLAGS is a list of flags, as cgo reads it
		if ! echo "#include <$h>" | ${CC:-gcc} ${CGO_CFLAGS:-} -E -x c - -o /dev/null 2>/dev/null; then
			echo "$h not found"
			rm -rf "$dir"
			return
		fi
	done
	cat >"$dir/p.c" <<'EOF'
#include <cuda.h>
#include <cublas_v2.h>
#include <nvrtc.h>
int main(void) { cublasHandle_t h; int a, b; return cuInit(0) + cublasCreate(&h) + nvrtcVersion(&a, &b); }
EOF
	# shellcheck disable=SC2086
	if ! ${CC:-gcc} ${CGO_CFLAGS:-} "$dir/p.c" -o "$dir/p" ${CGO_LDFLAGS:-} -lcuda -lcublas -lnvrtc 2>"$dir/err"; then
		local missing
		missing=$(grep -o 'cannot find -l[a-zA-Z]*' "$dir/err" | head -1 | sed 's/cannot find -l/lib/;s/$/.so/')
		echo "${missing:-the CUDA libraries (libcuda, libcublas, libnvrtc)} not found for linking"
	fi
	rm -rf "$dir"
}

if [[ $version == 13 ]]; then
	root=${GPUZ_CUDA_ROOT:-$HOME/.cache/gpuz-cuda-12.4}
	if [[ ! -f $root/.complete ]] && ((!fetch)); then
		echo "make cuda: CUDA=13 compiles against CUDA 12.4's headers, which are not in $root: run \`make test-cuda\` or scripts/cuda-toolchain.sh 12.4 to fetch them; see docs/gpu.md" >&2
		exit 1
	fi
	env=$(GPUZ_CUDA_ROOT=$root bash scripts/cuda-toolchain.sh 12.4)
	eval "$env"
	stubs=$(bash scripts/cuda13-stubs.sh "$GPUZ_CUDA_ROOT" "${GPUZ_CUDA13_STUBS:-$HOME/.cache/gpuz-cuda-13}")
	export CGO_CFLAGS="-I$GPUZ_CUDA_ROOT/usr/include"
	export CGO_LDFLAGS="-L$stubs -L$GPUZ_CUDA_ROOT/usr/lib/x86_64-linux-gnu/stubs"
	missing=$(probe)
	source="CUDA 12.4's headers in $GPUZ_CUDA_ROOT, linked for CUDA 13 against the stubs in $stubs"
else
	missing=
	((system)) && missing=$(probe)
	source=system
	if [[ -n $missing ]] || ((!system)); then
		if [[ -f ${GPUZ_CUDA_ROOT:-$HOME/.cache/gpuz-cuda-$version}/.complete ]] || ((fetch)); then
			env=$(bash scripts/cuda-toolchain.sh "$version")
			eval "$env"
			if ((!rpath)); then
				export CGO_LDFLAGS="-L$GPUZ_CUDA_ROOT/usr/lib/x86_64-linux-gnu/stubs"
			fi
			missing=$(probe)
			source="the CUDA $version toolchain in $GPUZ_CUDA_ROOT"
		elif ((!system)); then
			missing="the CUDA $version toolchain (~/.cache/gpuz-cuda-$version) not fetched"
		fi
	fi
fi
if [[ -n $missing ]]; then
	echo "make cuda: $missing: install nvidia-cuda-dev (Debian non-free) or run \`make test-cuda\` to fetch headers into ~/.cache; see docs/gpu.md" >&2
	exit 1
fi

echo "building $out (-tags $tags, CUDA from $source)"
mkdir -p "$(dirname "$out")"
$GO build -buildvcs=auto -tags "$tags" -ldflags "$ldflags" -o "$out" ./cmd/gpuz

if [[ $version == 13 ]]; then
	if lacking=$(ldd "$out" 2>/dev/null | awk '/not found/ { print $1 }' | paste -sd, -) && [[ -n $lacking ]]; then
		echo "$out: needs ${lacking//,/, } at run time, which this machine's loader does not find: install CUDA 13's cuBLAS and NVRTC, or run it through scripts/gpu-check.sh, which looks for them (docs/gpu.md)"
	fi
elif ((fetch && rpath)) && [[ $source != system ]] && ldd "$out" | grep -q 'libcublas.*not found'; then
	echo "$out: no cuBLAS $version runtime on this machine: fetching it into $GPUZ_CUDA_ROOT (about 250 MB)"
	bash scripts/cuda-toolchain.sh "$version" --runtime >/dev/null
fi
