#!/usr/bin/env bash
# Builds the GPU binary (go build -tags gpuzcuda) after checking, with a tiny
# C program compiled and linked the way cgo will, that the CUDA headers and
# libraries are there; when they are not, says in one line what is missing
# and how to get it, instead of a page of cgo errors.
#
#   scripts/cuda-build.sh [--fetch] [--version 11.8|12.4] [-o OUT]
#
# Where the headers come from, first found wins:
#   1. the system, or CGO_CFLAGS/CGO_LDFLAGS as set (nvidia-cuda-dev,
#      /usr/local/cuda);
#   2. a toolchain fetched by scripts/cuda-toolchain.sh into
#      ~/.cache/gpuz-cuda-VERSION (`make test-cuda` fetches 11.8 and 12.4);
#   3. with --fetch, scripts/cuda-toolchain.sh VERSION fetches it now
#      (about 800-950 MB to download, 80 MB kept), and, when the built binary
#      then lacks cuBLAS, its --runtime part as well.
# VERSION is --version's, else $CUDA, else 11.8. A binary built against a
# fetched toolchain has an rpath to its NVRTC (and cuBLAS) libraries.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=$PATH:/usr/local/go/bin

fetch=0
version=${CUDA:-11.8}
out=bin/gpuz-cuda
while (($#)); do
	case $1 in
	--fetch) fetch=1 ;;
	--version) version=$2; shift ;;
	-o) out=$2; shift ;;
	*) echo "usage: scripts/cuda-build.sh [--fetch] [--version 11.8|12.4] [-o OUT]" >&2; exit 2 ;;
	esac
	shift
done
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

missing=$(probe)
source=system
if [[ -n $missing ]]; then
	if [[ -f ${GPUZ_CUDA_ROOT:-$HOME/.cache/gpuz-cuda-$version}/.complete ]] || ((fetch)); then
		env=$(bash scripts/cuda-toolchain.sh "$version")
		eval "$env"
		missing=$(probe)
		source="the CUDA $version toolchain in $GPUZ_CUDA_ROOT"
	fi
fi
if [[ -n $missing ]]; then
	echo "make cuda: $missing: install nvidia-cuda-dev (Debian non-free) or run \`make test-cuda\` to fetch headers into ~/.cache; see docs/gpu.md" >&2
	exit 1
fi

echo "building $out (-tags gpuzcuda, CUDA from $source)"
mkdir -p "$(dirname "$out")"
$GO build -buildvcs=auto -tags gpuzcuda -o "$out" ./cmd/gpuz

if ((fetch)) && [[ $source != system ]] && ldd "$out" | grep -q 'libcublas.*not found'; then
	echo "$out: no cuBLAS $version runtime on this machine: fetching it into $GPUZ_CUDA_ROOT (about 250 MB)"
	bash scripts/cuda-toolchain.sh "$version" --runtime >/dev/null
fi
