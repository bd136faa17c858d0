#!/usr/bin/env bash
# Fetches what building and checking the CUDA device needs on a machine with
# no GPU and no CUDA installation: Debian's CUDA headers, the stub libraries
# to link against (libcuda.so, libcublas.so, libnvrtc.so) and the NVRTC
# runtime that compiles our kernels to PTX.
#
#   scripts/cuda-toolchain.sh [11.8|12.4] [--runtime]
#
#   11.8 (default)  Debian bookworm non-free: nvidia-cuda-dev, libnvrtc11.2,
#                   libnvrtc-builtins11.8 (about 755 MB to download)
#   12.4            Debian trixie non-free: nvidia-cuda-dev, libnvrtc12,
#                   libnvrtc-builtins12.4, and libcu++-dev for <nv/target>,
#                   which 12.4's cuda_fp16.h includes (about 955 MB)
#   --runtime       also the real cuBLAS libraries (libcublas and
#                   libcublaslt: about 250 MB more, 650 MB (11.8) or 540 MB
#                   (12.4) on disk), for running the GPU build on a machine
#                   with a driver but no CUDA runtime; `make run` asks for it
#                   there
#
# Nothing is installed and the system's apt configuration is not touched:
# apt-get runs with a private sources list, package lists and cache in a
# temporary directory (`apt-get download`, no root needed), and only the
# needed parts (about 75 MB) are extracted into
#
#   ${GPUZ_CUDA_ROOT:-$HOME/.cache/gpuz-cuda-VERSION}
#
# which later runs reuse as it is.
#
# Its standard output is the environment to build and test with, as shell
# assignments for eval:
#
#   eval "$(scripts/cuda-toolchain.sh 12.4)"
#
# CGO_CFLAGS and CGO_LDFLAGS point cgo at the headers and stubs, and give
# the binary an rpath to the fetched libraries (NVRTC, and cuBLAS with
# --runtime), so it finds them without LD_LIBRARY_PATH. The rpath never
# holds the stubs: a real driver's libcuda.so.1 is always the one loaded.
# GPUZ_CUDA_STUBS is a directory of links named libcuda.so.1,
# libcublas.so.N and libcublasLt.so.N to the stubs: with it in
# LD_LIBRARY_PATH the GPU build starts on a machine without a driver (and
# then stops with its "no usable CUDA GPU" line, as it must). Never use it on
# a machine with a GPU: the stubs would hide the real driver. Progress goes
# to standard error. Any failure exits non-zero: the CUDA checks are never
# skipped silently.
set -euo pipefail

version=11.8
runtime=0
for arg in "$@"; do
	case $arg in
	11.8 | 12.4) version=$arg ;;
	--runtime) runtime=1 ;;
	*)
		echo "usage: scripts/cuda-toolchain.sh [11.8|12.4] [--runtime]" >&2
		exit 2
		;;
	esac
done

case $version in
11.8)
	suite=bookworm major=11 cuda_version=11080
	packages=(nvidia-cuda-dev libnvrtc11.2 libnvrtc-builtins11.8)
	size="about 755 MB"
	;;
12.4)
	suite=trixie major=12 cuda_version=12040
	packages=(nvidia-cuda-dev libnvrtc12 libnvrtc-builtins12.4 libcu++-dev)
	size="about 955 MB"
	;;
esac
runtime_packages=("libcublas$major" "libcublaslt$major")

root=${GPUZ_CUDA_ROOT:-$HOME/.cache/gpuz-cuda-$version}
lib=$root/usr/lib/x86_64-linux-gnu
stamp=$root/.complete
runtime_stamp=$root/.runtime

log() { echo "cuda-toolchain: $*" >&2; }

emit() {
	printf 'export CGO_CFLAGS=%q\n' "-I$root/usr/include"
	printf 'export CGO_LDFLAGS=%q\n' "-L$lib/stubs -Wl,--disable-new-dtags,-rpath,$lib"
	printf 'export GPUZ_CUDA_ROOT=%q\n' "$root"
	printf 'export GPUZ_CUDA_STUBS=%q\n' "$root/driver-stub"
}

# stub_links lets the GPU build start without a driver or CUDA runtime: the
# stubs stand for the sonames the binary needs (libcuda.so.1 from the driver,
# libcublas.so.N and libcublasLt.so.N from the CUDA runtime). Every stub call
# answers CUDA_ERROR_STUB_LIBRARY, so the binary then stops with its "no
# usable CUDA GPU" line, as it must.
stub_links() {
	mkdir -p "$1/driver-stub"
	ln -sfn ../usr/lib/x86_64-linux-gnu/stubs/libcuda.so "$1/driver-stub/libcuda.so.1"
	ln -sfn ../usr/lib/x86_64-linux-gnu/stubs/libcublas.so "$1/driver-stub/libcublas.so.$major"
	ln -sfn ../usr/lib/x86_64-linux-gnu/stubs/libcublasLt.so "$1/driver-stub/libcublasLt.so.$major"
}

# A private apt: its own sources list (SUITE main contrib non-free), lists
# and cache under $work/apt, the system's keyring. Nothing outside $work is
# written.
apt_private() {
	local a=$work/apt
	if [[ ! -d $a ]]; then
		mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$a/parts" "$a/prefs"
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main contrib non-free" >"$a/sources.list"
	fi
	local opts=(
		-o "Dir::Etc::SourceList=$a/sources.list" -o "Dir::Etc::SourceParts=$a/parts"
		-o "Dir::Etc::Preferences=$a/preferences" -o "Dir::Etc::PreferencesParts=$a/prefs"
		-o "Dir::State::Lists=$a/lists" -o "Dir::Cache=$a/cache"
		-o APT::Architecture=amd64 -o APT::Sandbox::User="$(id -un)"
	)
	apt-get "${opts[@]}" "$@"
}

download() {
	log "apt-get update ($suite main contrib non-free, private lists)"
	apt_private -q update >&2
	log "downloading $* ($suite)"
	(cd "$work" && apt_private -q download "$@" >&2)
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [[ ! -f $stamp ]]; then
	t0=$SECONDS
	download "${packages[@]}"
	log "downloaded $(du -sm "$work" | cut -f1) MB in $((SECONDS - t0)) s ($size expected)"
	tmp=$root.partial
	rm -rf "$tmp"
	mkdir -p "$tmp"
	log "extracting headers, stub libraries and NVRTC"
	dpkg-deb --fsys-tarfile "$work"/nvidia-cuda-dev_*.deb |
		tar -x -C "$tmp" --wildcards './usr/include/*' './usr/lib/x86_64-linux-gnu/stubs/*'
	for deb in "$work"/libnvrtc*.deb; do
		dpkg-deb -x "$deb" "$tmp"
	done
	if [[ $version == 12.4 ]]; then
		dpkg-deb --fsys-tarfile "$work"/libcu++-dev_*.deb | tar -x -C "$tmp" --wildcards './usr/include/nv/*'
	fi
	rm -rf "$tmp/usr/share"
	stub_links "$tmp"
	for f in usr/include/cuda.h usr/include/cublas_v2.h usr/include/nvrtc.h \
		usr/lib/x86_64-linux-gnu/stubs/libcuda.so usr/lib/x86_64-linux-gnu/stubs/libcublas.so \
		usr/lib/x86_64-linux-gnu/stubs/libcublasLt.so usr/lib/x86_64-linux-gnu/stubs/libnvrtc.so; do
		[[ -e $tmp/$f ]] || { log "the packages lack $f"; exit 1; }
	done
	ls "$tmp"/usr/lib/x86_64-linux-gnu/libnvrtc.so."$major"* >/dev/null 2>&1 || { log "the packages lack libnvrtc.so.$major*"; exit 1; }
	grep -q "^#define CUDA_VERSION $cuda_version\$" "$tmp/usr/include/cuda.h" ||
		{ log "cuda.h is not CUDA $version: $(grep '^#define CUDA_VERSION' "$tmp/usr/include/cuda.h")"; exit 1; }
	touch "$tmp/.complete"
	rm -rf "$root"
	mkdir -p "$(dirname "$root")"
	mv "$tmp" "$root"
	log "ready: $root ($(du -sh "$root" | cut -f1)) in $((SECONDS - t0)) s"
fi

if ((runtime)) && [[ ! -f $runtime_stamp ]]; then
	t0=$SECONDS
	download "${runtime_packages[@]}"
	for deb in "$work"/libcublas*.deb; do
		dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$root" --wildcards './usr/lib/x86_64-linux-gnu/*'
	done
	ls "$lib/libcublas.so.$major" "$lib/libcublasLt.so.$major" >/dev/null ||
		{ log "the packages lack libcublas.so.$major or libcublasLt.so.$major"; exit 1; }
	touch "$runtime_stamp"
	log "cuBLAS $major runtime in $lib ($(du -sh "$root" | cut -f1) in all) in $((SECONDS - t0)) s"
fi

stub_links "$root"
log "using $root"
emit
