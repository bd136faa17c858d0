//go:build gpuzcuda

package gpu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gorgonia.org/cu/nvrtc"
)

// nvrtcArchs are the virtual architectures NVRTC 11.8 compiles for, as
// compute capability major·10 + minor.
var nvrtcArchs = []int{35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90}

// Arch returns the virtual architecture to compile for on a GPU of compute
// capability major.minor: the newest NVRTC 11.8 knows that the GPU runs
// (the driver JIT-compiles the PTX for newer GPUs), as "compute_86".
func Arch(major, minor int) (string, error) {
	cc := 10*major + minor
	best := 0
	for _, a := range nvrtcArchs {
		if a <= cc {
			best = a
		}
	}
	if best == 0 {
		return "", fmt.Errorf("compute capability %d.%d is older than NVRTC 11.8 supports (3.5)", major, minor)
	}
	return fmt.Sprintf("compute_%d", best), nil
}

// Options are the NVRTC options for arch. --fmad=false keeps multiplies
// and adds separate, as the host kernels compute them.
func Options(arch string) []string {
	return []string{"--gpu-architecture=" + arch, "--fmad=false", "--std=c++14"}
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

// PTXCachePath is where the PTX of the current sources for arch is cached:
// os.UserCacheDir()/gpuz/ptx/<arch>/<hash>.ptx.
func PTXCachePath(arch string) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("kernel cache: %w", err)
	}
	return filepath.Join(dir, "gpuz", "ptx", arch, Hash(Options(arch))+".ptx"), nil
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
