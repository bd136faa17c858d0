//go:build gpuzcuda

package gpu

import (
	"os"
	"regexp"
	"slices"
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

// TestNVRTCArchs checks that the NVRTC linked lists the architectures
// that KnownArchs gives for its release: the check of that table's row
// against the real library (11.8 and 12.4 in make test-cuda), and that
// Arch then picks the GPU's own architecture for an H100.
func TestNVRTCArchs(t *testing.T) {
	v, archs, err := NVRTC()
	if err != nil {
		t.Fatal(err)
	}
	if want := KnownArchs(v); !slices.Equal(archs, want) {
		t.Errorf("NVRTC %s lists %v; KnownArchs(%s) is %v", v, archs, v, want)
	}
	c, err := Arch(9, 0)
	if err != nil || c.Arch != "compute_90" || !c.Native || c.NVRTC != v {
		t.Errorf("Arch(9, 0) = %+v, %v; want compute_90, native, NVRTC %s", c, err, v)
	}
	t.Logf("NVRTC %s: %v; Arch(12, 0): %v", v, archs, must(Arch(12, 0)))
}

func must(c ArchChoice, err error) string {
	if err != nil {
		return err.Error()
	}
	return c.String()
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
	v, _, err := NVRTC()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(path, "/gpuz/ptx/nvrtc-"+v.String()+"/compute_75/") {
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
