package perfmodel

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestProfiles(t *testing.T) {
	want := []string{"rtx4060-laptop", "rtx3060", "rtx4070", "rtx4090", "a100-40gb-pcie", "h100-pcie", "h100-sxm"}
	for _, name := range want {
		p, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := check(p); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if len(p.Sources) == 0 || p.Title == "" {
			t.Errorf("%s has no title or sources: %+v", name, p)
		}
		if p.KernelOverhead != GPULaunchOverhead || !strings.Contains(p.Sources[len(p.Sources)-1], "kernel launch 5 µs") {
			t.Errorf("%s: kernel overhead %v, last source %q; want GPULaunchOverhead with its source", name, p.KernelOverhead, p.Sources[len(p.Sources)-1])
		}
		link := PCIeRate(p.PCIeGen, p.PCIeLanes)
		if p.PinnedH2D > link || p.PageableH2D > p.PinnedH2D || p.PageableD2H > p.PinnedD2H || p.PageableD2H == 0 {
			t.Errorf("%s: copy rates %g/%g pinned, %g/%g pageable on a %g B/s link", name,
				p.PinnedH2D, p.PinnedD2H, p.PageableH2D, p.PageableD2H, link)
		}
	}
	if got := strings.Join(Names(), " "); got != strings.Join(want, " ") {
		t.Errorf("Names() = %s, want %s", got, strings.Join(want, " "))
	}
	// Every GPU's 16-bit tensor peak, dense with FP32 accumulation, is
	// sourced, and the rate for 16-bit products.
	for name, tensor := range map[string]float64{
		"rtx4060-laptop": 22e12, "rtx3060": 25.5e12, "rtx4070": 58.3e12, "rtx4090": 165.2e12,
		"a100-40gb-pcie": 312e12, "h100-pcie": 756.5e12, "h100-sxm": 989.4e12,
	} {
		p, _ := Lookup(name)
		if p.Tensor16 != tensor || p.Rate16() != tensor || !slices.ContainsFunc(p.Sources, func(s string) bool { return strings.Contains(s, "Tensor16") }) {
			t.Errorf("%s: Tensor16 %g, Rate16 %g, sources %q; want %g with a source naming it", name, p.Tensor16, p.Rate16(), p.Sources, tensor)
		}
	}
	// The reference laptop carries dictcache.md's figures.
	p, _ := Lookup("rtx4060-laptop")
	if p.FP32 != 11e12 || p.MemBandwidth != 256e9 || p.MemoryBytes != 8<<30 || p.PinnedH2D != 12e9 || p.PageableH2D != 6e9 {
		t.Errorf("rtx4060-laptop = %+v", p)
	}
	// Profiles returns copies.
	Profiles()[0].Sources[0] = "changed"
	if q, _ := Lookup("rtx4060-laptop"); q.Sources[0] == "changed" {
		t.Error("Profiles shares its Sources with the table")
	}
}

func TestLookupUnknown(t *testing.T) {
	_, err := Lookup("rtx9090")
	if err == nil || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), `unknown GPU profile "rtx9090" (want one of rtx4060-laptop, rtx3060,`) {
		t.Errorf("Lookup(rtx9090) error = %v", err)
	}
}

func TestPCIeRate(t *testing.T) {
	for _, tt := range []struct {
		gen, lanes int
		want       float64
	}{
		{3, 16, 15.754e9}, {4, 8, 15.754e9}, {4, 16, 31.508e9}, {5, 16, 63.015e9}, {2, 16, 8e9}, {0, 16, 0}, {4, 0, 0}, {7, 16, 0},
		{6, 16, 121e9}, {6, 4, 30.25e9}, {1, 1, 0.25e9},
	} {
		if got := PCIeRate(tt.gen, tt.lanes); math.Abs(got-tt.want) > 1e6 {
			t.Errorf("PCIeRate(%d, %d) = %g, want %g", tt.gen, tt.lanes, got, tt.want)
		}
	}
}

// writeProfile writes body to a file and returns its path.
func writeProfile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "profile.json")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadProfile(t *testing.T) {
	p, err := LoadProfile(writeProfile(t, `{"Name": "l4", "Title": "NVIDIA L4", "FP32": 30.3e12, "MemBandwidth": 300e9,
		"MemoryBytes": 25769803776, "PCIeGen": 4, "PCIeLanes": 16, "PinnedH2D": 20e9, "Tensor16": 121e12, "Sources": ["NVIDIA L4 datasheet"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "l4" || p.FP32 != 30.3e12 || p.Tensor16 != 121e12 || p.Rate16() != 121e12 || p.PinnedH2D != 20e9 || math.Abs(p.PinnedD2H-0.8*31.508e9) > 1e7 ||
		p.PageableH2D != 10e9 || len(p.Sources) != 3 || !strings.Contains(p.Sources[1], "PinnedD2H, PageableH2D, PageableD2H derived") {
		t.Errorf("LoadProfile = %+v", p)
	}
	// A GPU's launch cost left out is GPULaunchOverhead, with its source.
	if p.KernelOverhead != GPULaunchOverhead || !strings.HasPrefix(p.Sources[2], "KernelOverhead derived: kernel launch 5 µs") ||
		p.Efficiency().Dense != DefaultEfficiency.Dense {
		t.Errorf("LoadProfile: kernel overhead %v, sources %q, efficiency %+v; want 5µs derived and the default efficiency",
			p.KernelOverhead, p.Sources, p.Efficiency())
	}
	// Every rate given, no link, a host's fixed cost per kernel and a
	// fitted efficiency naming no dense kernels.
	p, err = LoadProfile(writeProfile(t, `{"Name": "x", "FP32": 1e6, "MemBandwidth": 1e6, "MemoryBytes": 4,
		"PinnedH2D": 1e6, "PinnedD2H": 1e6, "PageableH2D": 1e6, "PageableD2H": 1e6, "KernelOverhead": 300,
		"Fitted": {"Dense": 0.5, "Elementwise": 0.1, "Bandwidth": 1, "Copy": 0.75, "CopyOverhead": 2000}}`))
	if err != nil {
		t.Fatal(err)
	}
	e := p.Efficiency()
	if p.KernelOverhead != 300*time.Nanosecond || e.Dense != 0.5 || e.Elementwise != 0.1 || e.Copy != 0.75 ||
		e.CopyOverhead != 2*time.Microsecond || !slices.Equal(e.DenseKernels, DefaultEfficiency.DenseKernels) {
		t.Errorf("LoadProfile: kernel overhead %v, efficiency %+v; want 300ns and the fitted factors with the default dense kernels", p.KernelOverhead, e)
	}
}

func TestLoadProfileErrors(t *testing.T) {
	const ok = `"Name": "x", "FP32": 1e12, "MemBandwidth": 1e11, "MemoryBytes": 1024, "PCIeGen": 4, "PCIeLanes": 16`
	for _, tt := range []struct{ body, want string }{
		{`{` + ok + `, "FP32": "fast"}`, "field FP32: want a float64, not a JSON string"},
		{`{` + ok + `, "Cores": 5}`, `unknown field "Cores"`},
		{`{` + ok + `, "MemoryBytes": 1.5}`, "field MemoryBytes: want a int64"},
		{`{"FP32": 1}`, "field Name: missing"},
		{`{` + ok + `, "Name": "a b"}`, "field Name:"},
		{`{` + ok + `, "FP32": 0}`, "field FP32: want a positive rate"},
		{`{` + ok + `, "MemBandwidth": -1}`, "field MemBandwidth:"},
		{`{` + ok + `, "MemoryBytes": 0}`, "field MemoryBytes:"},
		{`{` + ok + `, "PCIeGen": 9}`, "field PCIeGen:"},
		{`{` + ok + `, "PCIeLanes": 0}`, "field PCIeLanes: PCIeGen and PCIeLanes go together"},
		{`{` + ok + `, "PageableD2H": -5}`, "field PageableD2H:"},
		{`{` + ok + `, "PCIeGen": 0, "PCIeLanes": 0}`, "field PinnedH2D: missing"},
		{`{` + ok + `, "PCIeGen": 0, "PCIeLanes": 0, "PinnedH2D": 1}`, "field PinnedD2H: missing"},
		{`{` + ok, "decoding: unexpected EOF"},
		{`{` + ok + `} {}`, "more than one JSON value"},
		{`{` + ok + `, "KernelOverhead": -1}`, "field KernelOverhead: want a duration"},
		{`{` + ok + `, "Tensor16": -1e12}`, "field Tensor16: want a rate in FLOP/s"},
		{`{"Name": "h", "FP32": 1e9, "MemBandwidth": 1e9, "MemoryBytes": 4, "PinnedH2D": 1e9, "PinnedD2H": 1e9, "PageableH2D": 1e9, "PageableD2H": 1e9}`,
			"field KernelOverhead: missing"},
		{`{` + ok + `, "Fitted": {"Dense": 1.5, "Elementwise": 1, "Bandwidth": 1, "Copy": 1}}`, "field Fitted.Dense: want a fraction"},
		{`{` + ok + `, "Fitted": {"Dense": 1, "Elementwise": 1, "Bandwidth": 1}}`, "field Fitted.Copy: want a fraction"},
		{`{` + ok + `, "Fitted": {"Dense": 1, "Elementwise": 1, "Bandwidth": 1, "Copy": 1, "CopyOverhead": -3}}`, "field Fitted.CopyOverhead"},
		{`{` + ok + `, "Fitted": {"Dense": 1, "Elementwise": 1, "Bandwidth": 1, "Copy": 1, "Classes": [{"Name": "products"}]}}`,
			"field Fitted.Classes[0]: want a Name and its Kernels"},
		{`{` + ok + `, "Fitted": {"Dense": 1, "Elementwise": 1, "Bandwidth": 1, "Copy": 1, "Classes": [{"Name": "p", "Kernels": ["Gemm"], "Compute": 2, "Bandwidth": 1}]}}`,
			"field Fitted.Classes[0].Compute: want a fraction"},
		{`{` + ok + `, "Fitted": {"Dense": 1, "Elementwise": 1, "Bandwidth": 1, "Copy": 1, "Classes": [{"Name": "p", "Kernels": ["Gemm"], "Compute": 1, "Bandwidth": 0}]}}`,
			"field Fitted.Classes[0].Bandwidth: want a fraction"},
		{`{` + ok + `, "Fitted": {"Dense": 1, "Elementwise": 1, "Bandwidth": 1, "Copy": 1, "Classes": [{"Name": "p", "Kernels": ["Gemm"], "Compute": 1, "Bandwidth": 1, "Overhead": -1}]}}`,
			"field Fitted.Classes[0].Overhead"},
	} {
		path := writeProfile(t, tt.body)
		_, err := LoadProfile(path)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("LoadProfile(%s) error = %v; want one naming the file and containing %q", tt.body, err, tt.want)
		}
	}
	if _, err := LoadProfile(filepath.Join(t.TempDir(), "missing.json")); err == nil || !os.IsNotExist(errUnwrap(err)) {
		t.Errorf("LoadProfile(missing) error = %v; want a wrapped not-exist error", err)
	}
}

// errUnwrap unwraps err down to its innermost error.
func errUnwrap(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

// TestHostProfiles checks the built-in host profile's derived figures and
// LookupHost's answers.
func TestHostProfiles(t *testing.T) {
	p, err := LookupHost("cpu-i7-13700h")
	if err != nil {
		t.Fatal(err)
	}
	if p.FP32 != 1433.6e9 || p.MemBandwidth != 83.2e9 || p.PageableH2D != 41.6e9 || p.PCIeGen != 0 || p.KernelOverhead != HostKernelOverhead {
		t.Errorf("cpu-i7-13700h: FP32 %g, bandwidth %g, copies %g, PCIe gen %d, per kernel %v", p.FP32, p.MemBandwidth, p.PageableH2D, p.PCIeGen, p.KernelOverhead)
	}
	if err := check(p); err != nil {
		t.Errorf("cpu-i7-13700h: %v", err)
	}
	// No AVX512_BF16 or AMX: 16-bit products at the FP32 rate.
	if p.Tensor16 != 0 || p.Rate16() != p.FP32 {
		t.Errorf("cpu-i7-13700h: Tensor16 %g, Rate16 %g; want none, the FP32 rate", p.Tensor16, p.Rate16())
	}
	if _, err := LookupHost("rtx4060-laptop"); err == nil || !strings.Contains(err.Error(), "cpu-i7-13700h") {
		t.Errorf("LookupHost of a GPU profile: %v, want an error naming the host profiles", err)
	}
}

// TestLoadProfilePCIeGen6 loads a profile on a PCIe 6.0 x16 link with no
// copy rates given: gen 6 is accepted, and the rates are derived from its
// 121 GB/s (64 GT/s a lane, FLIT encoding counted as 242/256).
func TestLoadProfilePCIeGen6(t *testing.T) {
	p, err := LoadProfile(writeProfile(t, `{"Name": "gen6", "FP32": 100e12, "MemBandwidth": 8e12,
		"MemoryBytes": 206158430208, "PCIeGen": 6, "PCIeLanes": 16}`))
	if err != nil {
		t.Fatal(err)
	}
	pinned := PinnedFraction * 121e9
	for _, r := range []struct {
		name      string
		got, want float64
	}{
		{"PinnedH2D", p.PinnedH2D, pinned}, {"PinnedD2H", p.PinnedD2H, pinned},
		{"PageableH2D", p.PageableH2D, PageableFraction * pinned}, {"PageableD2H", p.PageableD2H, PageableFraction * pinned},
	} {
		if math.Abs(r.got-r.want) > 1e6 {
			t.Errorf("%s = %g, want %g", r.name, r.got, r.want)
		}
	}
	if len(p.Sources) != 2 || !strings.Contains(p.Sources[0], "gen 6, x16") {
		t.Errorf("sources %q, want the derivation naming gen 6, x16", p.Sources)
	}
}
