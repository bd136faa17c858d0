package device

import "gpuz/internal/perfmodel"

// Caps is what a device can do, stated as data: Device.Caps returns it,
// and the runner, the planner and the reports read it there instead of
// asking the device for optional methods or reading its name. Its fields
// are facts (simulated or not, a compute capability, a profile, a kernel
// compile, a description) and, for the operations only some devices
// have, the handle that performs them, nil where the device cannot.
//
// A zero Caps is a device that is none of these and can do none of them.
// A new device fills every field that applies to it: see
// docs/architecture.md, "Adding a device".
type Caps struct {
	// Simulated says that the device is a simulated GPU: host memory with
	// a capacity, whose times are the host's, never a GPU's (the sim
	// device, and the CUDA kernels' CPU shim). Tables mark its modes (†),
	// and a verified plan checks its peak against the planned footprint.
	Simulated bool
	// HostMemory says that the device's memory is host memory (the host,
	// the simulated GPU): what it holds counts against the host's memory
	// too when a mode is planned and before it runs.
	HostMemory bool
	// ComputeCapability is a real GPU's compute capability, "8.9"; ""
	// on a device that is not one. A run measures a real GPU without a
	// Profile (Measure) for its predictions; Measure reports it.
	ComputeCapability string
	// Profile is the GPU profile the device stands for, what that GPU
	// could do (a simulated device made as sim:PROFILE), for the runner's
	// bound and model time; nil for a device without one.
	Profile *perfmodel.Profile
	// Compile is how the device made its kernels ready as it opened (a
	// CUDA GPU, with NVRTC or from its kernel cache), so that a run
	// reports it apart from the rest of the opening; nil for a device
	// with nothing to compile (the host, the simulated GPU).
	Compile *KernelCompile
	// Description describes the device beyond its name, for the
	// environment a result records: keys such as "name", "kind",
	// "memory_bytes", "compute_capability", "cuda_driver_version",
	// "driver_version", "pci_bus_id" and "pcie_link", each present only
	// when the device can say it cheaply; nil for a device that cannot
	// describe itself. Each call returns a map of its own.
	Description map[string]string
	// Managed allocates managed (unified) memory for the managed mode;
	// nil for a device without it. Managed.ManagedSupport says whether it
	// can oversubscribe that memory.
	Managed ManagedMemory
	// Pinned measures copies through page-locked host memory (Measure's
	// pinned rates); nil for a device without a pinned path.
	Pinned PinnedCopier
	// Reserver reserves a program's memory ahead of its allocations, in
	// one step that other processes see (the simulated GPU's ledger); nil
	// for a device whose real allocations are the truth.
	Reserver AheadReserver
}

// AheadReserver is a device that can reserve, in one step, the memory a
// program will then allocate piece by piece: the simulated GPU, whose
// ledger other gpuz processes share (Sim.ReserveAhead).
type AheadReserver interface {
	ReserveAhead(bytes int64) (release func(), err error)
}

// Caps says that the host's memory is host memory, and nothing more.
func (h *Host) Caps() Caps { return Caps{HostMemory: true} }

// Caps says that the device is simulated in host memory, describes it,
// gives its profile (sim:PROFILE) and its managed memory and reservations
// ahead.
func (s *Sim) Caps() Caps {
	c := Caps{Simulated: true, HostMemory: true, Description: s.describe(), Managed: s, Reserver: s}
	if p, ok := s.Profile(); ok {
		c.Profile = &p
	}
	return c
}
