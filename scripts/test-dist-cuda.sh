#!/usr/bin/env bash
# Checks the GPU bundle on a machine without a GPU:
#
#   - `make dist-cuda CUDA=13` writes dist/gpuz-cuda13-linux-amd64.tar.gz,
#     at most 30 MB, holding exactly gpuz-cuda, gpu-check.sh,
#     torch_reference.py and README.md; the binary needs libcuda.so.1,
#     libcublas.so.13 and libnvrtc.so.13, no OpenBLAS, and references no
#     versioned cuBLAS or NVRTC symbol; the README says it has not run on a
#     GPU;
#   - unpacked into a temporary directory, its ./gpu-check.sh
#       * with no CUDA library anywhere, names the missing ones in one line
#         and exits 1 before running anything;
#       * with the link stubs of libcublas.so.13 and libnvrtc.so.13 in a
#         stand-in python site-packages (nvidia/cu13/lib, found through
#         PYTHONPATH), or named by GPUZ_CUDA_LIBS, and the stub driver
#         libcuda.so.1 on LD_LIBRARY_PATH, says where it found them and
#         stops with the binary's own one line, "gpuz: no usable CUDA GPU
#         (cuInit: CUDA_ERROR_STUB_LIBRARY …)", status 2: not a loader
#         error.
#
# Needs the CUDA 12.4 toolchain in ~/.cache (make test-cuda; fetched
# otherwise).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=$PATH:/usr/local/go/bin
name=gpuz-cuda13-linux-amd64
archive=dist/$name.tar.gz

fail() {
	echo "test-dist-cuda: FAIL: $*" >&2
	exit 1
}

t0=$SECONDS
make --no-print-directory dist-cuda CUDA=13 GO="${GO:-go}"
echo "== dist-cuda took $((SECONDS - t0)) s"
[[ -f $archive ]] || fail "no $archive"
size=$(stat -c %s "$archive")
((size <= 30 * 1000 * 1000)) || fail "$archive is $size bytes, over 30 MB"
contents=$(tar tzf "$archive" | sort | paste -sd' ' -)
presets=$(cd internal/hfconfig/presets && printf "$name/presets/%s " *.json)
want="$name/ $name/README.md $name/gpu-check.sh $name/gpuz-cuda $name/presets/ ${presets}$name/torch_llm.py $name/torch_reference.py"
[[ $contents == "$want" ]] || fail "$archive holds [$contents], want [$want]"
echo "== $archive: $size bytes: $contents"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar xzf "$archive" -C "$tmp"
dir=$tmp/$name
needed=$(readelf -d "$dir/gpuz-cuda" | awk '/NEEDED/ { gsub(/[][]/, "", $NF); print $NF }' | paste -sd' ' -)
echo "== NEEDED: $needed"
for lib in libcuda.so.1 libcublas.so.13 libnvrtc.so.13; do
	[[ " $needed " == *" $lib "* ]] || fail "the bundle's binary does not need $lib"
done
[[ $needed != *openblas* ]] || fail "the bundle's binary needs OpenBLAS: $needed"
if nm -D --undefined-only "$dir/gpuz-cuda" | awk '{ print $NF }' | grep -E '^(cublas|nvrtc).*@'; then
	fail "the bundle's binary has versioned cuBLAS or NVRTC references"
fi
grep -q 'has not been run on a GPU' "$dir/README.md" || fail "the README does not say that no GPU run has been made"
[[ -x $dir/gpu-check.sh && -x $dir/gpuz-cuda ]] || fail "gpu-check.sh or gpuz-cuda is not executable"

# run_check NAME ENV...: the bundle's gpu-check.sh, from its directory, with
# ENV; its stdout, stderr and status in $tmp/NAME.{out,err,rc}.
run_check() {
	local name=$1 rc=0
	shift
	(cd "$dir" && env "$@" ./gpu-check.sh >"$tmp/$name.out" 2>"$tmp/$name.err") || rc=$?
	echo "$rc" >"$tmp/$name.rc"
	echo "== gpu-check.sh ($name): status $rc"
	cat "$tmp/$name.out" "$tmp/$name.err"
	if compgen -G "$dir/gpu-check-*" >/dev/null; then
		fail "gpu-check.sh ($name) created an output directory: it ran checks"
	fi
}
# The stand-ins: an empty PATH-like environment for the libraries, a
# site-packages with the stubs as pip's CUDA 13 wheels lay them out, and a
# directory with only the stub driver.
clean=(-u LD_LIBRARY_PATH -u GPUZ_CUDA_LIBS -u PYTHONPATH)
mkdir -p "$tmp/site/nvidia/cu13/lib" "$tmp/driver"
stubs=${GPUZ_CUDA13_STUBS:-$HOME/.cache/gpuz-cuda-13}
cp "$stubs/libcublas.so.13" "$stubs/libnvrtc.so.13" "$tmp/site/nvidia/cu13/lib/"
ln -s "$(readlink -f "$stubs/driver-stub/libcuda.so.1")" "$tmp/driver/libcuda.so.1"

run_check none "${clean[@]}"
[[ $(cat "$tmp/none.rc") == 1 ]] || fail "without libraries: status $(cat "$tmp/none.rc"), want 1"
[[ $(wc -l <"$tmp/none.err") -eq 1 && ! -s $tmp/none.out ]] || fail "without libraries: not one line"
for lib in libcublas.so.13 libnvrtc.so.13 libcuda.so.1; do
	grep -q "^gpu-check: missing libraries for .*$lib" "$tmp/none.err" || fail "without libraries: the line does not name $lib"
done

for how in site env; do
	if [[ $how == site ]]; then
		run_check "$how" "${clean[@]}" PYTHONPATH="$tmp/site" LD_LIBRARY_PATH="$tmp/driver"
		where="(python3's site-packages)"
	else
		run_check "$how" "${clean[@]}" GPUZ_CUDA_LIBS="$tmp/nowhere:$tmp/site/nvidia/cu13/lib" LD_LIBRARY_PATH="$tmp/driver"
		where="(GPUZ_CUDA_LIBS)"
	fi
	[[ $(cat "$tmp/$how.rc") == 2 ]] || fail "with stub libraries ($how): status $(cat "$tmp/$how.rc"), want 2"
	for lib in libcublas.so.13 libnvrtc.so.13; do
		grep -qF "gpu-check: $lib: $tmp/site/nvidia/cu13/lib/$lib $where" "$tmp/$how.out" ||
			fail "with stub libraries ($how): it does not say where it found $lib"
	done
	grep -q 'error while loading shared libraries' "$tmp/$how.out" "$tmp/$how.err" && fail "a loader error ($how)"
	[[ $(wc -l <"$tmp/$how.err") -eq 1 ]] || fail "with stub libraries ($how): not one line on standard error"
	grep -q '^gpuz: no usable CUDA GPU (cuInit: CUDA_ERROR_STUB_LIBRARY' "$tmp/$how.err" ||
		fail "with stub libraries ($how): not the binary's 'no usable CUDA GPU' line"
done
echo "test-dist-cuda: ok ($archive, $((size / 1000)) kB)"
