package perfmodel

import (
	"strings"
	"testing"
	"time"
)

// TestLoadProfileRefusesImplausible loads profiles with one figure outside
// the plausibility bounds (a rate of 1e-300 FLOP/s and a kernel overhead of
// 2⁶³ ns saturated predictions at 2⁶³ ns, printed and ranked as
// predictions): each is refused naming its field; the figures at the
// bounds load.
func TestLoadProfileRefusesImplausible(t *testing.T) {
	const ok = `"Name": "x", "FP32": 1e12, "MemBandwidth": 1e11, "MemoryBytes": 1024, "PCIeGen": 4, "PCIeLanes": 16`
	const fitted = `"Dense": 1, "Elementwise": 1, "Bandwidth": 1, "Copy": 1`
	const class = `"Name": "p", "Kernels": ["Gemm"], "Compute": 1, "Bandwidth": 1`
	for _, tt := range []struct{ name, body, want string }{
		{"FP32 tiny", `{` + ok + `, "FP32": 1e-300}`, "field FP32: 1e-300 FLOP/s is not a plausible rate"},
		{"FP32 below", `{` + ok + `, "FP32": 999999}`, "field FP32:"},
		{"FP32 above", `{` + ok + `, "FP32": 1.1e17}`, "field FP32:"},
		{"Tensor16 tiny", `{` + ok + `, "Tensor16": 1e-3}`, "field Tensor16:"},
		{"Tensor16 above", `{` + ok + `, "Tensor16": 1e18}`, "field Tensor16:"},
		{"bandwidth below", `{` + ok + `, "MemBandwidth": 5e5}`, "field MemBandwidth: 500000 bytes/s is not a plausible rate"},
		{"bandwidth above", `{` + ok + `, "MemBandwidth": 1.1e14}`, "field MemBandwidth:"},
		{"copy rate below", `{` + ok + `, "PinnedD2H": 1}`, "field PinnedD2H:"},
		{"copy rate above", `{` + ok + `, "PageableH2D": 1e15}`, "field PageableH2D:"},
		{"pageable derived below", `{` + ok + `, "PinnedH2D": 1.5e6}`, "field PageableH2D:"},
		{"memory above", `{` + ok + `, "MemoryBytes": 1125899906842625}`, "field MemoryBytes:"},
		{"kernel overhead 2^63 ns", `{` + ok + `, "KernelOverhead": 9223372036854775807}`, "field KernelOverhead: 9223372036854775807 ns is not a plausible fixed cost"},
		{"kernel overhead above", `{` + ok + `, "KernelOverhead": 1000000001}`, "field KernelOverhead:"},
		{"fraction tiny", `{` + ok + `, "Fitted": {"Dense": 1e-300, "Elementwise": 1, "Bandwidth": 1, "Copy": 1}}`, "field Fitted.Dense: 1e-300 is not a plausible fraction"},
		{"fraction below", `{` + ok + `, "Fitted": {"Dense": 1, "Elementwise": 1, "Bandwidth": 1, "Copy": 9e-7}}`, "field Fitted.Copy:"},
		{"copy overhead", `{` + ok + `, "Fitted": {` + fitted + `, "CopyOverhead": 2000000000}}`, "field Fitted.CopyOverhead:"},
		{"class compute", `{` + ok + `, "Fitted": {` + fitted + `, "Classes": [{"Name": "p", "Kernels": ["Gemm"], "Compute": 1e-9, "Bandwidth": 1}]}}`, "field Fitted.Classes[0].Compute:"},
		{"class bandwidth", `{` + ok + `, "Fitted": {` + fitted + `, "Classes": [{"Name": "p", "Kernels": ["Gemm"], "Compute": 1, "Bandwidth": 1e-7}]}}`, "field Fitted.Classes[0].Bandwidth:"},
		{"class overhead", `{` + ok + `, "Fitted": {` + fitted + `, "Classes": [{` + class + `, "Overhead": 1000000001}]}}`, "field Fitted.Classes[0].Overhead:"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeProfile(t, tt.body)
			_, err := LoadProfile(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
				t.Errorf("LoadProfile(%s) error = %v; want one line naming the file and containing %q", tt.body, err, tt.want)
			}
		})
	}
	// The bounds themselves load.
	edge := `{"Name": "edge", "FP32": 1e17, "Tensor16": 1e6, "MemBandwidth": 1e14, "MemoryBytes": 1125899906842624,
		"PinnedH2D": 2e6, "PinnedD2H": 1e14, "PageableH2D": 1e6, "PageableD2H": 1e6, "KernelOverhead": 1000000000,
		"Fitted": {"Dense": 1e-6, "Elementwise": 1, "Bandwidth": 1e-6, "Copy": 1, "CopyOverhead": 1000000000,
		"Classes": [{` + class + `, "Overhead": 1000000000}]}}`
	if _, err := LoadProfile(writeProfile(t, edge)); err != nil {
		t.Errorf("a profile at the bounds: %v", err)
	}
}

// TestBuiltinProfilesPlausible checks every built-in profile, GPU and host,
// and a measured host's, against the bounds a profile file is held to.
func TestBuiltinProfilesPlausible(t *testing.T) {
	for _, p := range append(Profiles(), HostProfiles()...) {
		if err := check(p); err != nil {
			t.Errorf("profile %s: %v", p.Name, err)
		}
	}
	// A measured host's has no memory size; its figures are in bounds.
	for _, p := range []Profile{HostProfile(50e9, 10e9), Measured("gpu", 8<<30, 20e12, 500e9, 25e9, 25e9, 0, 0)} {
		if err := checkBounds(p); err != nil {
			t.Errorf("profile %s: %v", p.Name, err)
		}
	}
}

// TestFitRefusesImplausible fits samples that no device could give (a
// kernel of a few bytes taking an hour): Fit refuses the profile, naming the field,
// rather than return one that gpuz calibrate would write and no command
// could read.
func TestFitRefusesImplausible(t *testing.T) {
	p := HostProfile(50e9, 10e9)
	samples := []Sample{
		{Name: "a", Time: time.Hour, Kernels: []Kernel{{Name: "Add", Bytes: 12}}},
		{Name: "b", Time: time.Hour, Kernels: []Kernel{{Name: "Add", Bytes: 24}}},
	}
	_, err := Fit(p, samples)
	if err == nil || !strings.Contains(err.Error(), "implausible profile: field Fitted.Bandwidth: ") {
		t.Errorf("Fit of hour-long kernels: %v, want an implausible profile refused naming Fitted.Bandwidth", err)
	}
}
