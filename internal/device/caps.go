package device

import "gpuz/internal/perfmodel"

// Caps is what a device can do, stated as data: Device.Caps returns it,
// and the runner, the planner, the reports and the commands read it there
// instead of asking the device for optional methods, asserting its
// concrete type or reading its name. Its fields are facts (its kind,
// simulated or not, a compute capability, a profile, a kernel compile, a
// description) and, for the operations only some devices have, the handle
// that performs them, nil where the device cannot.
//
// A zero Caps is a device of no known kind that is none of these and can
// do none of them. A new device fills every field that applies to it: see
// docs/architecture.md, "Adding a device".
type Caps struct {
	// Kind is which device it is: the host, the simulated GPU or a CUDA
	// GPU. The commands ask it what only one kind does: the host's
	// calibrated profile and its note in gpuz selftest, the simulated
	// GPU's ledger listed by gpuz take-mem --list, no GPU to open for a
	// run on the host.
	Kind Kind
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
	// Holder holds memory that nothing allocates: counted as taken by the
	// device and by every process sharing its ledger, but not backed by
	// host memory (the simulated GPU, for gpuz take-mem); nil for a device
	// whose memory is taken only by allocating it.
	Holder MemoryHolder
}

// Kind is which kind of device a device is, named by the word of --device
// that opens one (String).
type Kind int

// The kinds of device.
const (
	// KindUnknown is a device that does not say its kind (a zero Caps).
	KindUnknown Kind = iota
	// KindHost is the host itself, its memory and its kernels (--device
	// cpu, Host).
	KindHost
	// KindSim is the simulated GPU: host memory with a capacity, recorded
	// in the ledger other gpuz processes share, and the host's kernels
	// (--device sim[:SIZE|PROFILE|FILE], Sim).
	KindSim
	// KindCUDA is a CUDA GPU (--device cuda[:N]), and the CUDA kernels
	// on their CPU shim, which stands for one in tests (Caps.Simulated
	// tells the two apart).
	KindCUDA
)

// String is the word of --device that opens a device of the kind: "cpu",
// "sim" or "cuda"; "unknown" for KindUnknown and a Kind out of range.
func (k Kind) String() string {
	switch k {
	case KindHost:
		return "cpu"
	case KindSim:
		return "sim"
	case KindCUDA:
		return "cuda"
	}
	return "unknown"
}

// AheadReserver is a device that can reserve, in one step, the memory a
// program will then allocate piece by piece: the simulated GPU, whose
// ledger other gpuz processes share (Sim.ReserveAhead).
type AheadReserver interface {
	ReserveAhead(bytes int64) (release func(), err error)
}

// MemoryHolder is a device that can hold memory without allocating it:
// the simulated GPU, whose ledger counts it (Sim.Reserve).
type MemoryHolder interface {
	Reserve(bytes int64) (release func(), err error)
}

// Caps says that the device is the host and its memory host memory, and
// nothing more.
func (h *Host) Caps() Caps { return Caps{Kind: KindHost, HostMemory: true} }

// Caps says that the device is the simulated GPU in host memory,
// describes it, gives its profile (sim:PROFILE), its managed memory, its
// reservations ahead and the memory it holds unallocated.
func (s *Sim) Caps() Caps {
	c := Caps{Kind: KindSim, Simulated: true, HostMemory: true, Description: s.describe(),
		Managed: s, Reserver: s, Holder: s}
	if p, ok := s.Profile(); ok {
		c.Profile = &p
	}
	return c
}
