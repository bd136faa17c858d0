#!/usr/bin/env bash
# Exits 0 and prints where it found it when this machine has an NVIDIA
# driver: libcuda.so.1 in the loader's cache (`ldconfig -p`) or
# /proc/driver/nvidia/version; exits 1 otherwise. `make run` uses it to pick
# the GPU build.
#
# For tests, GPUZ_LDCONFIG names a command to run instead of `ldconfig -p`
# and GPUZ_NVIDIA_PROC a file to read instead of /proc/driver/nvidia/version.
set -euo pipefail

proc=${GPUZ_NVIDIA_PROC:-/proc/driver/nvidia/version}
if [[ -n ${GPUZ_LDCONFIG:-} ]]; then
	cache=$($GPUZ_LDCONFIG 2>/dev/null || true)
else
	ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
	cache=$("$ldconfig" -p 2>/dev/null || true)
fi

lib=$(awk '$1 == "libcuda.so.1" && /x86-64/ { print $NF; exit }' <<<"$cache")
if [[ -n $lib ]]; then
	echo "libcuda.so.1 at $lib"
	exit 0
fi
if [[ -r $proc ]]; then
	echo "$(head -1 "$proc")"
	exit 0
fi
exit 1
