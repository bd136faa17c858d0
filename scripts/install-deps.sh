#!/usr/bin/env bash
# Installs what building gpuz needs on Debian: gcc and the C library headers
# (libc6-dev, only a Recommends of gcc, so --no-install-recommends would leave
# it out) for cgo, and OpenBLAS (libopenblas-dev, linked by the default
# build). Idempotent: when all are already there it installs nothing and
# prints one line. It also checks that
# the Go toolchain can be found; it does not install Go.
set -euo pipefail

log() { echo "install-deps: $*"; }
die() { echo "install-deps: error: $*" >&2; exit 1; }

# have_pkg PKG: whether the Debian package PKG is installed (not merely known).
# (No pipe into grep -q: with pipefail, dpkg's SIGPIPE would fail the test.)
have_pkg() {
	local out
	out=$(dpkg -s "$1" 2>/dev/null) || return 1
	[[ $'\n'$out$'\n' == *$'\nStatus: install ok installed\n'* ]]
}

missing=()
if command -v dpkg >/dev/null 2>&1; then
	have_pkg libopenblas-dev || missing+=(libopenblas-dev)
	command -v gcc >/dev/null 2>&1 || missing+=(gcc)
	have_pkg libc6-dev || missing+=(libc6-dev)
elif ! command -v gcc >/dev/null 2>&1; then
	die "gcc not found and this is not a Debian system (no dpkg): install gcc and OpenBLAS yourself, or build with -tags purego"
fi

if ((${#missing[@]} > 0)); then
	if ((EUID == 0)); then
		sudo=()
	elif command -v sudo >/dev/null 2>&1; then
		sudo=(sudo)
	else
		die "need to install ${missing[*]} but not root and sudo not found; as root run: apt-get update && apt-get install -y --no-install-recommends libopenblas-dev gcc libc6-dev"
	fi
	log "installing ${missing[*]} with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	"${sudo[@]}" apt-get update -qq >/dev/null \
		|| die "apt-get update failed"
	"${sudo[@]}" apt-get install -y -qq --no-install-recommends libopenblas-dev gcc libc6-dev >/dev/null \
		|| die "apt-get install libopenblas-dev gcc libc6-dev failed"
fi

if ! command -v go >/dev/null 2>&1; then
	if [[ -x /usr/local/go/bin/go ]]; then
		echo "install-deps: note: Go is at /usr/local/go/bin but not on PATH; add it with: export PATH=\$PATH:/usr/local/go/bin" >&2
	else
		die "Go toolchain not found: install Go (https://go.dev/doc/install) and put its bin directory on PATH"
	fi
fi

if ((${#missing[@]} > 0)); then
	log "installed ${missing[*]}; gcc, libc6-dev and libopenblas-dev ready"
else
	log "gcc, libc6-dev and libopenblas-dev already installed"
fi
