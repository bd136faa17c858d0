//go:build gpuzcuda

package cuda

import (
	"fmt"
	"strconv"

	"gorgonia.org/cu"

	"gpuz/internal/device"
)

// Describe describes the GPU for a result's environment: its name, memory
// and compute capability, the CUDA version its driver supports, the NVIDIA
// driver's version and the PCIe link where /proc and sysfs say them, and
// what the kernels were compiled for ("kernels": the architecture, and
// whether it is the GPU's own or PTX of an older one that the driver
// JIT-compiles; "nvrtc_version"). Each fact it cannot read is left out.
func (d *Device) Describe() map[string]string {
	desc := map[string]string{
		"name":               d.name,
		"compute_capability": fmt.Sprintf("%d.%d", d.major, d.minor),
		"kernels":            d.arch.String(),
		"nvrtc_version":      d.arch.NVRTC.String(),
	}
	if mem, err := d.dev.TotalMem(); err == nil {
		desc["memory_bytes"] = strconv.FormatInt(mem, 10)
	}
	if v := device.CUDAVersion(cu.Version()); v != "" {
		desc["cuda_driver_version"] = v
	}
	if v := device.NVIDIADriverVersion("/proc/driver/nvidia/version"); v != "" {
		desc["driver_version"] = v
	}
	domain, errD := d.dev.Attribute(cu.PciDomainID)
	bus, errB := d.dev.Attribute(cu.PciBusID)
	slot, errS := d.dev.Attribute(cu.PciDeviceID)
	if errD == nil && errB == nil && errS == nil {
		id := fmt.Sprintf("%04x:%02x:%02x.0", domain, bus, slot)
		desc["pci_bus_id"] = id
		if link := device.PCIeLink("/sys/bus/pci/devices/" + id); link != "" {
			desc["pcie_link"] = link
		}
	}
	return desc
}
