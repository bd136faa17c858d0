package device

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSimDescribesItselfAsSimulated(t *testing.T) {
	var d Device = NewSim(4<<30, nil)
	defer d.Close()
	got := d.Caps().Description
	if got["name"] != "sim:4GiB" || got["memory_bytes"] != "4294967296" || got["kind"] == "" {
		t.Errorf("Caps().Description = %v", got)
	}
}

// TestGPUFacts reads the driver version and the PCIe link from files in
// the formats of /proc/driver/nvidia/version and sysfs.
func TestGPUFacts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.2.0\n")
	if got := NVIDIADriverVersion(filepath.Join(dir, "version")); got != "550.54.15" {
		t.Errorf("NVIDIADriverVersion = %q", got)
	}
	if got := NVIDIADriverVersion(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("NVIDIADriverVersion of a missing file = %q", got)
	}
	if got := PCIeLink(dir); got != "" {
		t.Errorf("PCIeLink without link files = %q", got)
	}
	write("current_link_speed", "16.0 GT/s PCIe\n")
	write("current_link_width", "16\n")
	write("max_link_speed", "32.0 GT/s PCIe\n")
	write("max_link_width", "16\n")
	if got := PCIeLink(dir); got != "16.0 GT/s PCIe x16 (max 32.0 GT/s PCIe x16)" {
		t.Errorf("PCIeLink = %q", got)
	}
	if got := CUDAVersion(12040); got != "12.4" {
		t.Errorf("CUDAVersion(12040) = %q", got)
	}
}
