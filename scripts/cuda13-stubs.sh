#!/usr/bin/env bash
# Generates the link stubs that let the GPU build ask for CUDA 13's
# libraries while compiling against CUDA 12.4's headers.
#
#   scripts/cuda13-stubs.sh CUDA124_ROOT OUT
#
# gorgonia.org/cu does not compile against CUDA 13's headers (cuCtxCreate,
# cuMemAdvise and cuMemPrefetchAsync changed), but the driver keeps the old
# entry points and cuBLAS 13 and NVRTC 13 keep the functions gpuz calls.
# So the binary is compiled against 12.4's headers (CUDA124_ROOT, as
# scripts/cuda-toolchain.sh 12.4 fetches it) and linked against two small
# libraries made here with gcc:
#
#   OUT/libcublas.so.13  soname libcublas.so.13
#   OUT/libnvrtc.so.13   soname libnvrtc.so.13
#
# each exporting, unversioned, every cublas* or nvrtc* function of 12.4's
# stub library of the same name. The binary then records
# `NEEDED libcublas.so.13, libnvrtc.so.13` and unversioned references
# (cublasCreate_v2, not cublasCreate_v2@libcublas.so.12), which the real
# CUDA 13 libraries resolve. OUT/libcublas.so and OUT/libnvrtc.so are links
# for `-lcublas -lnvrtc`. OUT/driver-stub holds libcuda.so.1 (12.4's stub
# driver) and links to the two stubs: with it in LD_LIBRARY_PATH the binary
# starts without a GPU and stops with its "no usable CUDA GPU" line. Never
# use it on a machine with a GPU.
#
# A stub function is never meant to run: if one does, it says which, on
# standard error, and exits with status 3. Prints OUT's path.
set -euo pipefail

usage() {
	echo "usage: scripts/cuda13-stubs.sh CUDA124_ROOT OUT" >&2
	exit 2
}
(($# == 2)) || usage
root=$1 out=$2
stubs=$root/usr/lib/x86_64-linux-gnu/stubs
for f in libcublas.so libnvrtc.so libcuda.so; do
	[[ -f $stubs/$f ]] || { echo "cuda13-stubs: $stubs/$f not found: fetch CUDA 12.4's headers first (scripts/cuda-toolchain.sh 12.4)" >&2; exit 1; }
done
command -v nm >/dev/null 2>&1 || { echo "cuda13-stubs: nm not found: install binutils" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out/driver-stub"

# stub LIB PREFIX: OUT/LIB.so.13 exporting every PREFIX* function of 12.4's
# LIB.so, unversioned.
stub() {
	local lib=$1 prefix=$2 c=$tmp/$1.c n
	{
		echo '#include <stdio.h>'
		echo '#include <unistd.h>'
		echo "static void gpuz_stub(const char *f) { fprintf(stderr, \"gpuz: %s called in the link stub $lib.so.13 (scripts/cuda13-stubs.sh), not CUDA 13's library\\n\", f); _exit(3); }"
		nm -D --defined-only "$stubs/$lib.so" |
			awk -v p="^$prefix" '$2 == "T" { sub(/@.*/, "", $3); if ($3 ~ p) print $3 }' | sort -u |
			awk '{ printf "int %s(void) { gpuz_stub(\"%s\"); return 0; }\n", $1, $1 }'
	} >"$c"
	n=$(grep -c '^int ' "$c")
	((n > 5)) || { echo "cuda13-stubs: only $n $prefix* functions in $stubs/$lib.so" >&2; exit 1; }
	${CC:-gcc} -shared -fPIC -O1 -o "$out/$lib.so.13" -Wl,-soname,"$lib.so.13" "$c"
	ln -sfn "$lib.so.13" "$out/$lib.so"
	ln -sfn "../$lib.so.13" "$out/driver-stub/$lib.so.13"
}
stub libcublas cublas
stub libnvrtc nvrtc
ln -sfn "$stubs/libcuda.so" "$out/driver-stub/libcuda.so.1"
echo "$out"
