package device

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	ledger := OpenLedger(filepath.Join(t.TempDir(), "ledger"))
	for _, tt := range []struct {
		spec, name, warning string
		capacity            int64 // of a simulated device
	}{
		{"cpu", "host", "", 0},
		{"sim", "sim:8GiB", "", 8 << 30},
		{"sim:512MiB", "sim:512MiB", "", 512 << 20},
		{"sim:4GiB", "sim:4GiB", "", 4 << 30},
		{"sim:4GB", "sim:4GB", "", 4_000_000_000},
		{"sim:1.5GiB", "sim:1536MiB", "", 3 << 29},
		{"sim:1000000", "sim:1MB", "", 1_000_000},
		{"sim:4", "sim:4B", "", 4},
		{"auto", "sim:8GiB", AutoWarning, 8 << 30},
		{"sim:rtx4060-laptop", "sim:rtx4060-laptop", "", 8 << 30},
		{"sim:h100-sxm", "sim:h100-sxm", "", 80 << 30},
		{"sim:rtx3060", "sim:rtx3060", "", 12 << 30},
	} {
		dev, warning, err := Parse(tt.spec, ledger)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.spec, err)
			continue
		}
		if dev.Name() != tt.name || warning != tt.warning {
			t.Errorf("Parse(%q) = %s, warning %q; want %s, %q", tt.spec, dev.Name(), warning, tt.name, tt.warning)
		}
		if sim, ok := dev.(*Sim); ok != (tt.capacity > 0) || (ok && (sim.Capacity() != tt.capacity || sim.ledger == nil)) {
			t.Errorf("Parse(%q) = %T %+v, want a simulated device of %d bytes on the ledger: %v", tt.spec, dev, dev, tt.capacity, ok)
		}
		// Its kind is named by the word of the spec that opened it (auto
		// here: a simulated device).
		word, _, _ := strings.Cut(strings.Replace(tt.spec, "auto", "sim", 1), ":")
		if got := dev.Caps().Kind.String(); got != word {
			t.Errorf("Parse(%q).Caps().Kind = %s, want %s", tt.spec, got, word)
		}
	}
}

// TestParseProfileFile makes simulated devices of profiles in files,
// named by a path with a slash or a name ending in .json: each stands for
// its profile (Caps.Profile) with its memory size; a file that cannot
// be read or is not a profile is an error naming the spec and the field.
func TestParseProfileFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "l4.json")
	if err := os.WriteFile(path, []byte(`{"Name": "l4", "FP32": 30e12, "MemBandwidth": 300e9, "MemoryBytes": 1073741824,
		"PCIeGen": 4, "PCIeLanes": 16}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, spec := range []string{"sim:" + path, "sim:l4.json", "sim:./l4.json"} {
		dev, _, err := Parse(spec, nil)
		if err != nil {
			t.Errorf("Parse(%q): %v", spec, err)
			continue
		}
		p := dev.Caps().Profile
		if dev.Name() != "sim:l4" || p == nil || p.FP32 != 30e12 || dev.(*Sim).Capacity() != 1<<30 {
			t.Errorf("Parse(%q) = %s, profile %+v; want sim:l4 of 1 GiB on the file's profile", spec, dev.Name(), p)
		}
	}
	if err := os.WriteFile("bad.json", []byte(`{"Name": "bad", "FP32": -1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for spec, want := range map[string]string{
		"sim:missing.json": `device "sim:missing.json": reading the profile: stat missing.json: no such file`,
		"sim:bad.json":     `device "sim:bad.json": profile bad.json: field FP32: want a positive rate`,
	} {
		if _, _, err := Parse(spec, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) error = %v, want %q", spec, err, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct {
		spec, want string
	}{
		{"", `unknown device ""`},
		{"gpu", `unknown device "gpu" (want auto, cpu, sim, sim:SIZE, sim:PROFILE, sim:FILE, cuda or cuda:N)`},
		{"CPU", `unknown device "CPU"`},
		{"cpu:0", `unknown device "cpu:0"`},
		{"auto:1", `unknown device "auto:1"`},
		{"sim:", `device "sim:": invalid byte size "": empty`},
		{"sim:lots", `device "sim:lots": unknown GPU profile "lots" (want one of rtx4060-laptop, rtx3060, rtx4070, rtx4090, a100-40gb-pcie, h100-pcie, h100-sxm)`},
		{"sim:H100-SXM", `unknown GPU profile "H100-SXM"`},
		{"sim:8G", `unknown unit "G"`},
		{"sim:-1GiB", "negative"},
		{"sim:0", `device "sim:0": a simulated device needs at least 4 bytes`},
		{"sim:3B", "at least 4 bytes"},
		{"cuda", "cuda:0: this build has no CUDA support (build the GPU binary with make cuda)"},
		{"cuda:0", "cuda:0: this build has no CUDA support (build the GPU binary with make cuda)"},
		{"cuda:2", "cuda:2: this build has no CUDA support"},
		{"cuda:", `device "cuda:": the GPU index must be a whole number`},
		{"cuda:x", `device "cuda:x": the GPU index must be a whole number`},
		{"cuda:-1", `device "cuda:-1"`},
		{"cuda:01", `device "cuda:01"`},
	} {
		dev, _, err := Parse(tt.spec, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v, %v; want an error containing %q", tt.spec, dev, err, tt.want)
		}
	}
}

func TestParseProfile(t *testing.T) {
	dev, _, err := Parse("sim:h100-sxm", nil)
	if err != nil {
		t.Fatal(err)
	}
	caps := dev.Caps()
	if p := caps.Profile; p == nil || p.Name != "h100-sxm" || p.FP32 != 67e12 {
		t.Errorf("sim:h100-sxm's profile = %+v", p)
	}
	if d := caps.Description; !strings.HasPrefix(d["profile"], "h100-sxm: NVIDIA H100") || d["memory_bytes"] != "85899345920" {
		t.Errorf("sim:h100-sxm describes itself as %v", d)
	}
	plain, _, err := Parse("sim:1GiB", nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Caps().Profile != nil {
		t.Error("sim:1GiB has a profile")
	}
}
