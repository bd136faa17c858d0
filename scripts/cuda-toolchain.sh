#!/usr/bin/env bash
# Fetches what building and checking the CUDA device needs on a machine with
# no GPU and no CUDA installation: Debian bookworm's CUDA 11.8 headers, the
# stub libraries to link against (libcuda.so, libcublas.so, libnvrtc.so) and
# the NVRTC runtime that compiles our kernels to PTX. Nothing is installed:
# the three packages are downloaded with `apt-get download` (about 755 MB,
# once) and only the needed parts (about 75 MB) are extracted into
#
#   ${GPUZ_CUDA_ROOT:-$HOME/.cache/gpuz-cuda-11.8}
#
# which later runs reuse as it is. The script adds Debian's contrib and
# non-free components to apt's sources when they are missing (root or sudo
# needed then).
#
# Its standard output is the environment to build and test with, as shell
# assignments for eval:
#
#   eval "$(scripts/cuda-toolchain.sh)"
#
# CGO_CFLAGS and CGO_LDFLAGS point cgo at the headers and stubs;
# LD_LIBRARY_PATH lets programs load NVRTC and, through links named
# libcuda.so.1, libcublas.so.11 and libcublasLt.so.11 to the stubs, lets the
# GPU build start on a machine without a driver (where it then stops with its
# "no usable CUDA GPU" line, as it must). Do not use this LD_LIBRARY_PATH on a
# machine with a GPU: the stubs would hide the real driver. Progress goes to
# standard error. Any failure exits non-zero: the CUDA checks are never
# skipped silently.
set -euo pipefail

root=${GPUZ_CUDA_ROOT:-$HOME/.cache/gpuz-cuda-11.8}
lib=$root/usr/lib/x86_64-linux-gnu
stamp=$root/.complete

log() { echo "cuda-toolchain: $*" >&2; }

emit() {
	printf 'export CGO_CFLAGS=%q\n' "-I$root/usr/include"
	printf 'export CGO_LDFLAGS=%q\n' "-L$lib/stubs"
	printf 'export LD_LIBRARY_PATH=%q\n' "$lib:$root/driver-stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	printf 'export GPUZ_CUDA_ROOT=%q\n' "$root"
}

# stub_links lets the GPU build start without a driver or CUDA runtime: the
# stubs stand for the sonames the binary needs (libcuda.so.1 from the driver,
# libcublas.so.11 and libcublasLt.so.11 from the CUDA runtime). Every stub
# call answers CUDA_ERROR_STUB_LIBRARY, so the binary then stops with its
# "no usable CUDA GPU" line, as it must.
stub_links() {
	mkdir -p "$1/driver-stub"
	ln -sfn ../usr/lib/x86_64-linux-gnu/stubs/libcuda.so "$1/driver-stub/libcuda.so.1"
	ln -sfn ../usr/lib/x86_64-linux-gnu/stubs/libcublas.so "$1/driver-stub/libcublas.so.11"
	ln -sfn ../usr/lib/x86_64-linux-gnu/stubs/libcublasLt.so "$1/driver-stub/libcublasLt.so.11"
}

if [[ -f $stamp ]]; then
	stub_links "$root"
	log "using $root"
	emit
	exit 0
fi

sudo=()
if ((EUID != 0)); then
	command -v sudo >/dev/null 2>&1 || { log "need root or sudo to add Debian's non-free sources"; exit 1; }
	sudo=(sudo)
fi

# Debian's CUDA packages are in contrib and non-free, not in the default
# sources.
sources=/etc/apt/sources.list.d/gpuz-cuda-non-free.sources
if ! apt-cache policy nvidia-cuda-dev 2>/dev/null | grep -q 'Candidate: [0-9]'; then
	log "adding $sources (bookworm contrib non-free)"
	"${sudo[@]}" tee "$sources" >/dev/null <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
	"${sudo[@]}" apt-get update -qq >&2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log "downloading nvidia-cuda-dev, libnvrtc11.2, libnvrtc-builtins11.8 (about 755 MB)"
(cd "$work" && apt-get download -q nvidia-cuda-dev libnvrtc11.2 libnvrtc-builtins11.8 >&2)

tmp=$root.partial
rm -rf "$tmp"
mkdir -p "$tmp"
log "extracting headers and stub libraries"
dpkg-deb --fsys-tarfile "$work"/nvidia-cuda-dev_*.deb |
	tar -x -C "$tmp" --wildcards './usr/include/*' './usr/lib/x86_64-linux-gnu/stubs/*'
for deb in "$work"/libnvrtc11.2_*.deb "$work"/libnvrtc-builtins11.8_*.deb; do
	dpkg-deb -x "$deb" "$tmp"
done
stub_links "$tmp"
for f in usr/include/cuda.h usr/include/cublas_v2.h usr/include/nvrtc.h \
	usr/lib/x86_64-linux-gnu/stubs/libcuda.so usr/lib/x86_64-linux-gnu/stubs/libcublas.so \
	usr/lib/x86_64-linux-gnu/stubs/libnvrtc.so; do
	[[ -e $tmp/$f ]] || { log "the packages lack $f"; exit 1; }
done
ls "$tmp"/usr/lib/x86_64-linux-gnu/libnvrtc.so.11* >/dev/null 2>&1 || { log "the packages lack libnvrtc.so.11*"; exit 1; }
touch "$tmp/.complete"
rm -rf "$root"
mkdir -p "$(dirname "$root")"
mv "$tmp" "$root"
log "ready: $root ($(du -sh "$root" | cut -f1))"
emit
