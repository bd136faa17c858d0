//go:build gpuzcuda

package gpu

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// ptxKinds maps the PTX type of a kernel parameter to the Signatures kinds
// it can carry: pointers and int64 are both .u64.
var ptxKinds = map[string]string{".u64": "pl", ".u32": "i", ".s32": "i", ".f32": "f", ".f64": "d"}

var (
	entryRE = regexp.MustCompile(`(?s)\.entry\s+(\w+)\s*\((.*?)\)`)
	paramRE = regexp.MustCompile(`\.param\s+(\.\w+)\s+\w+`)
	// atomicRE matches an atomic or reduction instruction.
	atomicRE = regexp.MustCompile(`(?m)^\s*(@%p\d+\s+)?(atom|red)\.\S+`)
)

// ptxEntries returns each kernel of a PTX module with its parameter types.
func ptxEntries(ptx string) map[string][]string {
	out := map[string][]string{}
	for _, m := range entryRE.FindAllStringSubmatch(ptx, -1) {
		var types []string
		for _, p := range paramRE.FindAllStringSubmatch(m[2], -1) {
			types = append(types, p[1])
		}
		out[m[1]] = types
	}
	return out
}

// TestKernelsCompileWithNVRTC compiles every kernel with NVRTC 11.8 for
// the oldest and newest architectures gpuz supports and a few between, and
// checks that the PTX has exactly the kernels of Signatures, each with
// parameters of the kinds the driver passes: the check that the GPU's
// launches carry the arguments the kernels declare.
func TestKernelsCompileWithNVRTC(t *testing.T) {
	for _, arch := range []string{"compute_52", "compute_70", "compute_80", "compute_86", "compute_90"} {
		t.Run(arch, func(t *testing.T) {
			ptx, err := CompilePTX(arch)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(ptx, ".target sm_"+strings.TrimPrefix(arch, "compute_")) {
				t.Errorf("PTX lacks .target sm_%s", strings.TrimPrefix(arch, "compute_"))
			}
			entries := ptxEntries(ptx)
			for _, name := range sortedNames(Signatures) {
				types, ok := entries[name]
				if !ok {
					t.Errorf("kernel %s missing from the PTX", name)
					continue
				}
				sig := Signatures[name]
				if len(types) != len(sig) {
					t.Errorf("kernel %s: PTX has %d parameters %v, Signatures %q", name, len(types), types, sig)
					continue
				}
				for i, ty := range types {
					if !strings.ContainsRune(ptxKinds[ty], rune(sig[i])) {
						t.Errorf("kernel %s parameter %d: PTX %s, Signatures %q", name, i, ty, sig[i])
					}
				}
			}
			for name := range entries {
				if _, ok := Signatures[name]; !ok {
					t.Errorf("PTX kernel %s missing from Signatures", name)
				}
			}
			if m := atomicRE.FindString(ptx); m != "" {
				t.Errorf("PTX uses atomics (%q); the kernels must reduce in a fixed order", strings.TrimSpace(m))
			}
		})
	}
}

// TestArch checks the architecture chosen for compute capabilities.
func TestArch(t *testing.T) {
	for _, c := range []struct {
		major, minor int
		want         string
	}{{5, 2, "compute_52"}, {7, 5, "compute_75"}, {8, 6, "compute_86"}, {8, 9, "compute_89"}, {9, 0, "compute_90"}, {12, 0, "compute_90"}, {6, 3, "compute_62"}} {
		got, err := Arch(c.major, c.minor)
		if err != nil || got != c.want {
			t.Errorf("Arch(%d, %d) = %q, %v; want %q", c.major, c.minor, got, err, c.want)
		}
	}
	if _, err := Arch(3, 0); err == nil {
		t.Error("Arch(3, 0): no error for a GPU older than NVRTC supports")
	}
}

// TestPTXCache checks that the second request reads the PTX the first
// compiled, from os.UserCacheDir()/gpuz/ptx/<arch>/<hash>.ptx.
func TestPTXCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	first, cached, err := CachedPTX("compute_75")
	if err != nil || cached {
		t.Fatalf("first CachedPTX: cached %v, %v", cached, err)
	}
	path, err := PTXCachePath("compute_75")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(path, "/gpuz/ptx/compute_75/") {
		t.Errorf("cache path %s", path)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != first {
		t.Fatalf("cache file %s: %v (equal: %v)", path, err, string(data) == first)
	}
	second, cached, err := CachedPTX("compute_75")
	if err != nil || !cached || second != first {
		t.Fatalf("second CachedPTX: cached %v, equal %v, %v", cached, second == first, err)
	}
}
