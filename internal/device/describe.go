package device

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// describe says that the device is simulated: host memory with a capacity,
// whose times are host times, and the GPU profile it stands for, if any
// (Caps.Description).
func (s *Sim) describe() map[string]string {
	d := map[string]string{
		"name":         s.Name(),
		"kind":         "simulated (host memory with a capacity; times are host times)",
		"memory_bytes": strconv.FormatInt(s.capacity, 10),
	}
	if p, ok := s.Profile(); ok {
		d["profile"] = p.Name + ": " + p.Title
	}
	return d
}

// NVIDIADriverVersion reads the NVIDIA kernel module's version, e.g.
// "550.54.15", from file in /proc/driver/nvidia/version's format; "" when
// the file is missing or says no version.
func NVIDIADriverVersion(file string) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	// NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024
	line, _, _ := strings.Cut(string(data), "\n")
	_, rest, ok := strings.Cut(line, "Kernel Module")
	if f := strings.Fields(rest); ok && len(f) > 0 {
		return f[0]
	}
	return ""
}

// PCIeLink describes the current PCIe link of the PCI device whose sysfs
// directory is dir (/sys/bus/pci/devices/DOMAIN:BUS:DEVICE.0), e.g. "16.0
// GT/s PCIe x16 (max 16.0 GT/s PCIe x16)"; "" when sysfs does not say.
func PCIeLink(dir string) string {
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(data))
	}
	speed, width := read("current_link_speed"), read("current_link_width")
	if speed == "" || width == "" {
		return ""
	}
	link := fmt.Sprintf("%s x%s", speed, width)
	if maxSpeed, maxWidth := read("max_link_speed"), read("max_link_width"); maxSpeed != "" && maxWidth != "" {
		link += fmt.Sprintf(" (max %s x%s)", maxSpeed, maxWidth)
	}
	return link
}

// CUDAVersion renders a version as cuDriverGetVersion returns it (1000 ×
// major + 10 × minor, e.g. 12040) as "12.4".
func CUDAVersion(v int) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}
