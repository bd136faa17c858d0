//go:build gpuzcuda

package gpu

/*
#cgo LDFLAGS: -lnvrtc
#include <nvrtc.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gorgonia.org/cu/nvrtc"
)

// NVRTC returns the release of the NVRTC library in use and the
// architectures it compiles for, as it lists them itself
// (nvrtcGetSupportedArchs), or by KnownArchs when it cannot.
func NVRTC() (NVRTCVersion, []int, error) {
	major, minor, err := nvrtc.Version()
	if err != nil {
		return NVRTCVersion{}, nil, fmt.Errorf("nvrtc: version: %w", err)
	}
	v := NVRTCVersion{major, minor}
	var n C.int
	if C.nvrtcGetNumSupportedArchs(&n) != C.NVRTC_SUCCESS || n <= 0 || n > 1024 {
		return v, KnownArchs(v), nil
	}
	archs := make([]C.int, n)
	if C.nvrtcGetSupportedArchs(&archs[0]) != C.NVRTC_SUCCESS {
		return v, KnownArchs(v), nil
	}
	out := make([]int, n)
	for i, a := range archs {
		out[i] = int(a)
	}
	return v, out, nil
}

// Arch chooses the architecture to compile the kernels for on a GPU of
// compute capability major.minor with the NVRTC in use (ChooseArch): the
// GPU's own when that NVRTC can target it, else PTX of the newest older
// architecture it can, which the driver JIT-compiles.
func Arch(major, minor int) (ArchChoice, error) {
	v, archs, err := NVRTC()
	if err != nil {
		return ArchChoice{}, err
	}
	return ChooseArch(v, archs, major, minor)
}

// Options are the NVRTC options for arch. --fmad=false keeps multiplies
// and adds separate, as the host kernels compute them. C++17 is the one
// dialect every NVRTC from 11.0 to 13 accepts and the default of 12 and
// 13; the kernels need nothing beyond C.
func Options(arch string) []string {
	return []string{"--gpu-architecture=" + arch, "--fmad=false", "--std=c++17"}
}

// CompilePTX compiles every kernel for arch with NVRTC (no GPU needed) and
// returns the PTX.
func CompilePTX(arch string) (string, error) {
	prog, err := nvrtc.CreateProgram(Source(), "gpuz_kernels.cu")
	if err != nil {
		return "", fmt.Errorf("nvrtc: %w", err)
	}
	defer prog.Destroy()
	if err := prog.Compile(Options(arch)...); err != nil {
		log, _ := prog.GetLog()
		return "", fmt.Errorf("nvrtc: compiling the kernels for %s: %w\n%s", arch, err, log)
	}
	ptx, err := prog.GetPTX()
	if err != nil {
		return "", fmt.Errorf("nvrtc: %w", err)
	}
	return strings.TrimRight(ptx, "\x00"), nil
}

// PTXCachePath is where the PTX of the current sources for arch, compiled
// by the NVRTC in use, is cached:
// os.UserCacheDir()/gpuz/ptx/nvrtc-<version>/<arch>/<hash>.ptx. The
// NVRTC release is in the path because its PTX ISA version sets the
// oldest driver that loads it: builds against different CUDA versions
// share no PTX.
func PTXCachePath(arch string) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("kernel cache: %w", err)
	}
	major, minor, err := nvrtc.Version()
	if err != nil {
		return "", fmt.Errorf("kernel cache: nvrtc version: %w", err)
	}
	return filepath.Join(dir, "gpuz", "ptx", fmt.Sprintf("nvrtc-%d.%d", major, minor), arch, Hash(Options(arch))+".ptx"), nil
}

// CachedPTX returns the PTX for arch from the cache, compiling and storing
// it on a miss; cached reports a hit. A cache that cannot be written only
// costs the compile next time.
func CachedPTX(arch string) (ptx string, cached bool, err error) {
	path, err := PTXCachePath(arch)
	if err != nil {
		return "", false, err
	}
	if data, err := os.ReadFile(path); err == nil && len(data) > 0 {
		return string(data), true, nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", false, fmt.Errorf("kernel cache: %w", err)
	}
	ptx, err = CompilePTX(arch)
	if err != nil {
		return "", false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
		tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
		if os.WriteFile(tmp, []byte(ptx), 0o644) == nil {
			_ = os.Rename(tmp, path)
		}
	}
	return ptx, false, nil
}
