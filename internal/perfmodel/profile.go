// Package perfmodel says what a GPU could do: device profiles (a GPU's
// published peak FP32 rate, memory bandwidth and size, and its host link),
// a roofline lower bound and a model time for a list of kernels and copies
// on a profile, and a flag for a measured time far above its model. It
// imports nothing of gpuz's, so that the engine, the runner and the
// reports can all use it.
package perfmodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"gpuz/internal/filekind"
)

// Profile is what a GPU could do, from its vendor's published figures.
// Rates are per second; a copy rate of 0 means not known.
type Profile struct {
	// Name is the profile's short name, as --device sim:NAME takes it
	// (lower case, no spaces), e.g. "h100-sxm".
	Name string
	// Title is the GPU's full name, e.g. "NVIDIA H100 SXM5 80 GB".
	Title string
	// FP32 is the peak FP32 rate in FLOP/s (an FMA counts as two), at the
	// boost clock the vendor quotes.
	FP32 float64
	// Tensor16 is the peak rate of 16-bit matrix products in FLOP/s:
	// dense (not the 2:4 structured-sparsity figure that datasheets quote
	// beside it) FP16 or BF16 inputs with FP32 accumulation, on a GPU's
	// tensor cores at the clock its FP32 figure uses. 0 means the device
	// has no 16-bit matrix unit faster than its FP32 one (a host without
	// AMX or AVX512_BF16; a profile that does not say): its 16-bit
	// products then run at FP32, as Rate16 says.
	Tensor16 float64 `json:",omitempty"`
	// MemBandwidth is the peak device memory bandwidth in bytes/s.
	MemBandwidth float64
	// MemoryBytes is the device memory's size in bytes.
	MemoryBytes int64
	// PCIeGen and PCIeLanes are the host link, e.g. 4 and 16; 0 when not
	// a PCIe device (the host profile).
	PCIeGen, PCIeLanes int
	// PinnedH2D and PinnedD2H are the rates of large copies from and to
	// page-locked host memory; PageableH2D and PageableD2H from and to
	// ordinary (pageable) host memory, in bytes/s.
	PinnedH2D, PinnedD2H     float64
	PageableH2D, PageableD2H float64
	// KernelOverhead is the fixed cost of each kernel: a GPU's launch
	// (GPULaunchOverhead), a host's function call (HostKernelOverhead), or
	// as gpuz calibrate fitted it. In JSON, nanoseconds.
	KernelOverhead time.Duration
	// Fitted, when set, is the efficiency that gpuz calibrate fitted to
	// this device's measured kernels and copies; nil means
	// DefaultEfficiency. Efficiency returns the one that applies.
	Fitted *Efficiency `json:",omitempty"`
	// Sources name the documents the figures come from, and how any
	// derived figure was derived.
	Sources []string
}

// Rate16 returns the peak rate of 16-bit matrix products on p: Tensor16,
// or FP32 when p gives none.
func (p Profile) Rate16() float64 {
	if p.Tensor16 > 0 {
		return p.Tensor16
	}
	return p.FP32
}

// Efficiency returns the efficiency the model time applies on p: its
// fitted one (with DefaultEfficiency's dense kernels when it names none,
// and each class named as one of KernelClasses given that class's kernels
// that none of its classes names), else DefaultEfficiency. A profile
// calibrated before a class grew (the products before the llm workload's
// Projection and Conv1D, the normalisations before RMSNorm) so prices the
// new kernels at their class's fitted factors, not as element-wise ones.
func (p Profile) Efficiency() Efficiency {
	if p.Fitted == nil {
		return DefaultEfficiency
	}
	e := *p.Fitted
	if e.DenseKernels == nil {
		e.DenseKernels = DefaultEfficiency.DenseKernels
	}
	e.Classes = withClassKernels(e.Classes)
	return e
}

// withClassKernels returns classes with each class that has the name of
// one of KernelClasses given the kernels of that class that none of
// classes names; classes itself is not changed.
func withClassKernels(classes []KernelClass) []KernelClass {
	named := func(k string) bool {
		return slices.ContainsFunc(classes, func(c KernelClass) bool {
			return slices.ContainsFunc(c.Kernels, func(n string) bool { return strings.EqualFold(n, k) })
		})
	}
	out := slices.Clone(classes)
	for i, c := range out {
		j := slices.IndexFunc(KernelClasses(), func(k KernelClass) bool { return k.Name == c.Name })
		if j < 0 {
			continue
		}
		var missing []string
		for _, k := range KernelClasses()[j].Kernels {
			if !named(k) {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			out[i].Kernels = append(slices.Clone(c.Kernels), missing...)
		}
	}
	return out
}

// GPULaunchOverhead is the fixed cost of a kernel launch on a GPU, every
// GPU profile's KernelOverhead unless it says otherwise: a cuLaunchKernel
// call costs 2–5 µs of host time in NVIDIA's published measurements
// ("Getting Started with CUDA Graphs", NVIDIA developer blog, 2019) and
// common microbenchmarks; gpuz launches from Go through cgo, so the upper
// end. An estimate until a GPU measures it (gpuz calibrate).
const GPULaunchOverhead = 5 * time.Microsecond

// HostKernelOverhead is the fixed cost of a kernel call on the host, the
// host profiles' KernelOverhead: a Go call through the engine's op and
// device.Kernels to hostmath, with no launch, queue or synchronisation.
// Measured on gpuz's 2-core development machine (an Intel Xeon VM) by
// BenchmarkSmallHostLaunch (internal/ops): each dense-workload op on one
// row of 16 floats takes 0.10–0.18 µs (element-wise kernels, bias
// gradient) to 0.31–0.57 µs (the three products, through OpenBLAS's
// sgemm); 0.5 µs is the upper end, rounded. The reference laptop's i7
// cores are faster (5.0 GHz turbo), so for its profile it is an upper
// estimate.
const HostKernelOverhead = 500 * time.Nanosecond

// srcGPULaunch is the source of the GPU profiles' KernelOverhead.
const srcGPULaunch = "kernel launch 5 µs (perfmodel.GPULaunchOverhead): a cuLaunchKernel call costs 2–5 µs of host time (NVIDIA developer blog, Getting Started with CUDA Graphs, 2019); gpuz launches through cgo, so the upper end"

// srcHostCall is the source of the host profiles' KernelOverhead.
const srcHostCall = "kernel call 0.5 µs (perfmodel.HostKernelOverhead): measured by BenchmarkSmallHostLaunch on gpuz's 2-core development machine, 0.10–0.57 µs per op on one row of 16, the upper end rounded"

// PinnedFraction is the fraction of a PCIe link's theoretical rate that
// large pinned copies reach, used to derive the built-in profiles' pinned
// copy rates (and a loaded profile's, when it gives none). Basis: a PCIe
// transaction carries at most 256 bytes of payload (the usual maximum
// payload size) behind about 24 bytes of header, framing and CRC, 91% of
// the wire, less flow-control and acknowledgement packets; CUDA's
// bandwidthTest sample reports about 80% of the theoretical rate on
// PCIe 3.0 and 4.0 x16 links (12–13 of 15.8 GB/s, 25–26 of 31.5 GB/s).
// A derived figure, not a measurement of these GPUs.
const PinnedFraction = 0.8

// PageableFraction is the fraction of the pinned rate that copies from and
// to pageable host memory reach, used to derive the built-in profiles'
// pageable rates. Basis: the driver copies pageable memory through a
// page-locked staging buffer, so the copy is a host memcpy and a DMA in
// series; with a host memcpy about as fast as the link (10–20 GB/s on a
// desktop or laptop) the series rate is about half the pinned rate. A
// derived figure; it depends on the host more than on the GPU.
const PageableFraction = 0.5

// PCIeRate is the theoretical rate in bytes/s, each way, of a PCIe link of
// generation gen (1 to 6) and lanes lanes, after line encoding (8b/10b for
// generations 1 and 2, 128b/130b for 3 to 5, and 6's FLIT encoding counted
// as 242/256); 0 when gen or lanes is not a PCIe link.
func PCIeRate(gen, lanes int) float64 {
	var perLane float64 // bytes/s per lane
	switch gen {
	case 1:
		perLane = 2.5e9 * 8 / 10 / 8
	case 2:
		perLane = 5e9 * 8 / 10 / 8
	case 3:
		perLane = 8e9 * 128 / 130 / 8
	case 4:
		perLane = 16e9 * 128 / 130 / 8
	case 5:
		perLane = 32e9 * 128 / 130 / 8
	case 6:
		perLane = 64e9 * 242 / 256 / 8
	default:
		return 0
	}
	if lanes <= 0 {
		return 0
	}
	return perLane * float64(lanes)
}

// withLinkRates returns p with its copy rates derived from its PCIe link
// where they are 0: pinned at PinnedFraction of the link's theoretical
// rate, pageable at PageableFraction of pinned. It says which it derived.
func withLinkRates(p Profile) (Profile, []string) {
	link := PCIeRate(p.PCIeGen, p.PCIeLanes)
	var derived []string
	fill := func(v *float64, name string, from float64, frac float64) {
		if *v == 0 && from > 0 {
			*v = from * frac
			derived = append(derived, name)
		}
	}
	fill(&p.PinnedH2D, "PinnedH2D", link, PinnedFraction)
	fill(&p.PinnedD2H, "PinnedD2H", link, PinnedFraction)
	fill(&p.PageableH2D, "PageableH2D", p.PinnedH2D, PageableFraction)
	fill(&p.PageableD2H, "PageableD2H", p.PinnedD2H, PageableFraction)
	return p, derived
}

// gib is a GiB in bytes. GPU memory sizes are quoted in GB but are powers
// of two (an "8 GB" card has 8192 MiB).
const gib = int64(1) << 30

// Sources of the built-in figures. The figures were taken from these
// documents as recalled when the table was written; they were not
// re-checked against the documents in the same change.
const (
	srcAdaWhitepaper = "NVIDIA Ada Lovelace GPU Architecture whitepaper (v1.0, 2022): FP32 TFLOPS, memory interface and bandwidth"
	srcA100Datasheet = "NVIDIA A100 Tensor Core GPU datasheet (2020/2021): FP32 19.5 TFLOPS, 40 GB HBM2 at 1,555 GB/s, PCIe Gen4"
	srcH100Datasheet = "NVIDIA H100 Tensor Core GPU datasheet (2022/2023): FP32 67 TFLOPS (SXM) and 51 TFLOPS (PCIe), 80 GB at 3.35 TB/s (SXM) and 2 TB/s (PCIe), PCIe Gen5 x16 host link"
	srcA100Tensor    = "NVIDIA A100 Tensor Core GPU datasheet: FP16 and BF16 Tensor Core 312 TFLOPS dense (624 with sparsity), FP32 accumulation at the same rate; Tensor16 = 312 TFLOP/s"
	srcH100Tensor    = "NVIDIA H100 Tensor Core GPU datasheet, whose FP16 and BF16 Tensor Core figures are with sparsity (1,979 TFLOPS SXM, 1,513 PCIe), and the NVIDIA H100 Tensor Core GPU Architecture whitepaper's dense figures with FP32 accumulation (989.4 SXM5, 756.5 PCIe): Tensor16 = the dense figure"
	srcAdaTensor     = "GeForce tensor cores accumulate in FP32 at half their FP16-accumulate rate (Ada whitepaper, RTX 4090: FP16 Tensor 330.3 TFLOPS with FP16 accumulate, 165.2 with FP32 accumulate, dense; BF16 as FP16 with FP32 accumulate): Tensor16 is the FP32-accumulate rate"
	srcDerivedLink   = "copy rates derived: pinned = 0.8 × the PCIe link's theoretical rate (perfmodel.PinnedFraction), pageable = 0.5 × pinned (perfmodel.PageableFraction)"
)

// builtin is the built-in profiles, in the order Profiles lists them.
var builtin = []Profile{
	{
		Name: "rtx4060-laptop", Title: "NVIDIA GeForce RTX 4060 Laptop GPU 8 GB (the reference report's GPU)",
		FP32: 11e12, Tensor16: 22e12, MemBandwidth: 256e9, MemoryBytes: 8 * gib, PCIeGen: 4, PCIeLanes: 8,
		PinnedH2D: 12e9, PinnedD2H: 12e9,
		Sources: []string{
			"NVIDIA GeForce RTX 4060 Laptop GPU specifications (nvidia.com): 3072 CUDA cores, 8 GB GDDR6 on a 128-bit bus, PCIe 4.0 x8",
			"gpuz's shared/dictcache.md (reading the reference report): 16 Gbps × 128 bit = 256 GB/s; about 11 TFLOP/s FP32 at the 75 W power limit (3072 cores × 2 × ~1.8 GHz sustained; 14.6 at the 2.37 GHz maximum boost); pinned copies about 12 GB/s in practice on PCIe 4.0 x8 (15.8 GB/s theoretical, a fraction of 0.76)",
			"pageable copy rates derived: 0.5 × pinned (perfmodel.PageableFraction)",
			"derived: Tensor16 = 24 SMs × 512 FLOP/cycle (dense FP16/BF16 with FP32 accumulate per Ada SM: the RTX 4090's 165.2 TFLOPS / 128 SMs / 2.52 GHz) × ~1.79 GHz sustained (the clock of the FP32 figure) = 22 TFLOP/s; 29.1 at the 2.37 GHz maximum boost, which matches NVIDIA's 233 AI TOPS (FP8, with sparsity: 4 × 58.2 FP16-accumulate dense, halved for FP32 accumulate)",
			srcAdaTensor,
		},
	},
	{
		Name: "rtx3060", Title: "NVIDIA GeForce RTX 3060 12 GB",
		FP32: 12.7e12, Tensor16: 25.5e12, MemBandwidth: 360e9, MemoryBytes: 12 * gib, PCIeGen: 4, PCIeLanes: 16,
		Sources: []string{
			"NVIDIA GeForce RTX 3060 family specifications (nvidia.com): 3584 CUDA cores, 1.78 GHz boost, 12 GB GDDR6 on a 192-bit bus, PCIe 4.0",
			"derived: FP32 = 3584 × 2 × 1.777 GHz = 12.7 TFLOP/s; bandwidth = 15 Gbps × 192 bit / 8 = 360 GB/s",
			"derived: Tensor16 = 28 SMs × 512 FLOP/cycle × 1.777 GHz = 25.5 TFLOP/s, dense FP16/BF16 with FP32 accumulate; per GA10x SM 1024 FLOP/cycle with FP16 accumulate and half that with FP32 (NVIDIA Ampere GA102 GPU Architecture whitepaper: RTX 3090 71 TFLOPS FP32 accumulate, 142 FP16 accumulate, dense); NVIDIA's 101 Tensor TFLOPS for the 3060 is FP16 accumulate with sparsity, 4 × 25.3",
			srcDerivedLink,
		},
	},
	{
		Name: "rtx4070", Title: "NVIDIA GeForce RTX 4070 12 GB",
		FP32: 29.1e12, Tensor16: 58.3e12, MemBandwidth: 504e9, MemoryBytes: 12 * gib, PCIeGen: 4, PCIeLanes: 16,
		Sources: []string{
			"NVIDIA GeForce RTX 4070 family specifications (nvidia.com): 5888 CUDA cores, 2.48 GHz boost, 12 GB GDDR6X on a 192-bit bus, PCIe 4.0",
			"derived: FP32 = 5888 × 2 × 2.475 GHz = 29.1 TFLOP/s; bandwidth = 21 Gbps × 192 bit / 8 = 504 GB/s",
			"derived: Tensor16 = 46 SMs × 512 FLOP/cycle × 2.475 GHz = 58.3 TFLOP/s, dense FP16/BF16 with FP32 accumulate (the SM rate from the RTX 4090's 165.2 TFLOPS / 128 SMs / 2.52 GHz); NVIDIA's 466 AI TOPS for the 4070 (FP8, with sparsity) is 4 × 116.6 FP16-accumulate dense, halved for FP32 accumulate",
			srcAdaTensor,
			srcDerivedLink,
		},
	},
	{
		Name: "rtx4090", Title: "NVIDIA GeForce RTX 4090 24 GB",
		FP32: 82.6e12, Tensor16: 165.2e12, MemBandwidth: 1008e9, MemoryBytes: 24 * gib, PCIeGen: 4, PCIeLanes: 16,
		Sources: []string{
			srcAdaWhitepaper + ": RTX 4090 82.6 TFLOPS FP32 (16384 CUDA cores, 2.52 GHz boost), 24 GB GDDR6X, 384-bit at 21 Gbps = 1008 GB/s",
			srcAdaTensor,
			srcDerivedLink,
		},
	},
	{
		Name: "a100-40gb-pcie", Title: "NVIDIA A100 40 GB PCIe",
		FP32: 19.5e12, Tensor16: 312e12, MemBandwidth: 1555e9, MemoryBytes: 40 * gib, PCIeGen: 4, PCIeLanes: 16,
		Sources: []string{srcA100Datasheet, srcA100Tensor, srcDerivedLink},
	},
	{
		Name: "h100-pcie", Title: "NVIDIA H100 PCIe 80 GB",
		FP32: 51e12, Tensor16: 756.5e12, MemBandwidth: 2.0e12, MemoryBytes: 80 * gib, PCIeGen: 5, PCIeLanes: 16,
		Sources: []string{srcH100Datasheet, srcH100Tensor, srcDerivedLink},
	},
	{
		Name: "h100-sxm", Title: "NVIDIA H100 SXM5 80 GB",
		FP32: 67e12, Tensor16: 989.4e12, MemBandwidth: 3.35e12, MemoryBytes: 80 * gib, PCIeGen: 5, PCIeLanes: 16,
		Sources: []string{srcH100Datasheet, srcH100Tensor, srcDerivedLink},
	},
}

// init fills the built-in profiles' copy rates that they do not state from
// their links, and gives each its launch cost with its source.
func init() {
	for i := range builtin {
		builtin[i], _ = withLinkRates(builtin[i])
		builtin[i].KernelOverhead = GPULaunchOverhead
		builtin[i].Sources = append(builtin[i].Sources, srcGPULaunch)
	}
}

// Profiles returns the built-in profiles, the reference laptop GPU first.
// The slice is a copy.
func Profiles() []Profile { return copies(builtin) }

// Names returns the built-in profiles' names in the order Profiles lists
// them.
func Names() []string { return names(builtin) }

// Lookup returns the built-in profile called name, or an error of one line
// that lists the names.
func Lookup(name string) (Profile, error) { return lookup("GPU", name, builtin) }

// HostProfile returns a profile of the host for tests and for comparing a
// host-timed run with its own bound: flops is its measured SGEMM rate and
// memcpy its memcpy rate in bytes copied per second (device.Measure gives
// both). A memcpy reads and writes each byte it copies, so the memory
// bandwidth, in the bytes read plus written that a Kernel counts, is twice
// the memcpy rate; every copy runs at the memcpy rate (a copy to a
// simulated device is a memcpy).
func HostProfile(flops, memcpy float64) Profile {
	return Profile{
		Name: "host", Title: "the host (measured SGEMM and memcpy rates)",
		FP32: flops, MemBandwidth: 2 * memcpy,
		PinnedH2D: memcpy, PinnedD2H: memcpy, PageableH2D: memcpy, PageableD2H: memcpy,
		KernelOverhead: HostKernelOverhead,
		Sources:        []string{"measured on this host: SGEMM and memcpy rates; memory bandwidth = 2 × the memcpy rate (each byte read and written)", srcHostCall},
	}
}

// Measured is a device's profile from its measured figures, as a real GPU
// gets when no built-in profile is named: its SGEMM rate stands for the
// FP32 peak and its measured bandwidth for the memory's, so the bound is
// what the device reaches rather than its spec sheet's peak (tighter), and
// the model time, which still applies DefaultEfficiency, is optimistic by
// about those factors. Rates are in FLOP/s and bytes per second; a copy
// rate not measured (0) falls back to the other kind's.
func Measured(name string, memoryBytes int64, sgemm, bandwidth, pinnedH2D, pinnedD2H, pageableH2D, pageableD2H float64) Profile {
	or := func(v, alt float64) float64 {
		if v > 0 {
			return v
		}
		return alt
	}
	return Profile{
		Name: name, Title: name + " (measured)",
		FP32: sgemm, MemBandwidth: bandwidth, MemoryBytes: memoryBytes,
		PinnedH2D: or(pinnedH2D, pageableH2D), PinnedD2H: or(pinnedD2H, pageableD2H),
		PageableH2D: or(pageableH2D, pinnedH2D), PageableD2H: or(pageableD2H, pinnedD2H),
		KernelOverhead: GPULaunchOverhead,
		Sources:        []string{"measured on this device by gpuz (device.Measure): SGEMM rate as FP32, the Add kernel's bytes per second as memory bandwidth, copy rates pinned and pageable", srcGPULaunch},
	}
}

// hostBuiltin is the built-in host (CPU) profiles, for the cpu mode's
// prediction: what a named CPU could do with gpuz's host kernels.
var hostBuiltin = []Profile{
	{
		Name: "cpu-i7-13700h", Title: "Intel Core i7-13700H with dual-channel DDR5-5200 (the reference report's CPU)",
		// 6 P-cores × 32 FLOP/cycle × 5.0 GHz + 8 E-cores × 16 FLOP/cycle × 3.7 GHz.
		FP32: 6*32*5.0e9 + 8*16*3.7e9,
		// 2 channels × 64 bit × 5200 MT/s / 8.
		MemBandwidth: 2 * 64 * 5200e6 / 8, MemoryBytes: 16 * gib,
		// A copy within host memory reads and writes each byte: half the
		// bandwidth, pinned or not.
		PinnedH2D: 2 * 64 * 5200e6 / 8 / 2, PinnedD2H: 2 * 64 * 5200e6 / 8 / 2,
		PageableH2D: 2 * 64 * 5200e6 / 8 / 2, PageableD2H: 2 * 64 * 5200e6 / 8 / 2,
		KernelOverhead: HostKernelOverhead,
		Sources: []string{
			"Intel ARK, Core i7-13700H: 14 cores (6 Performance, 8 Efficient), 20 threads; P-core max turbo 5.0 GHz, E-core max turbo 3.7 GHz; DDR5 5200 / LPDDR5 6400 / DDR4 3200, 2 channels; 45 W base power",
			"Intel 64 and IA-32 Architectures Optimization Reference Manual: a Golden Cove/Raptor Cove P-core has two 256-bit FMA units (2 × 8 × 2 = 32 FP32 FLOP/cycle with AVX2), a Gracemont E-core two 128-bit ones (16 FLOP/cycle)",
			"derived: FP32 = 6 × 32 × 5.0 GHz + 8 × 16 × 3.7 GHz = 1.43 TFLOP/s, every core at its maximum turbo, which a 45 W laptop does not sustain on all cores (at the base clocks, 2.4 and 1.8 GHz: 0.69 TFLOP/s)",
			"derived: memory bandwidth = 2 channels × 64 bit × 5200 MT/s / 8 = 83.2 GB/s, assuming DDR5-5200 (the report says only 16 GB; LPDDR5-6400 would give 102.4 GB/s); copies within host memory at half of it (each byte read and written)",
			"the report's 16 GB of RAM as the memory size",
			"no Tensor16: Raptor Lake has no AVX-512 (so no AVX512_BF16) and no AMX (Intel ARK: instruction set extensions SSE4.1, SSE4.2, AVX2; its AVX-VNNI is 8-bit integer only); its 16-bit products are converted to FP32 and run at the FP32 rate",
			srcHostCall + "; the i7's cores are faster, so for it an upper estimate",
		},
	},
}

// HostProfiles returns the built-in host (CPU) profiles, for predicting
// the cpu mode. The slice is a copy.
func HostProfiles() []Profile { return copies(hostBuiltin) }

// HostNames returns the built-in host profiles' names in the order
// HostProfiles lists them.
func HostNames() []string { return names(hostBuiltin) }

// LookupHost returns the built-in host profile called name, or an error
// of one line that lists the names.
func LookupHost(name string) (Profile, error) { return lookup("host", name, hostBuiltin) }

// copies returns a copy of profiles, their sources copied too.
func copies(profiles []Profile) []Profile {
	out := make([]Profile, len(profiles))
	for i, p := range profiles {
		p.Sources = slices.Clone(p.Sources)
		out[i] = p
	}
	return out
}

// names returns the profiles' names, in order.
func names(profiles []Profile) []string {
	out := make([]string, len(profiles))
	for i, p := range profiles {
		out[i] = p.Name
	}
	return out
}

// lookup returns a copy of the profile called name among profiles, or
// "unknown KIND profile NAME (want one of …)" listing their names.
func lookup(kind, name string, profiles []Profile) (Profile, error) {
	for _, p := range profiles {
		if p.Name == name {
			p.Sources = slices.Clone(p.Sources)
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("unknown %s profile %q (want one of %s)", kind, name, strings.Join(names(profiles), ", "))
}

// IsFile says spec names a profile file rather than a built-in profile:
// it ends in ".json" or has a slash (./host.json, /etc/gpuz/l4.json).
func IsFile(spec string) bool {
	return strings.HasSuffix(spec, ".json") || strings.Contains(spec, "/")
}

// Open returns the profile spec names: the profile in a file (LoadProfile)
// when IsFile(spec), else the built-in GPU profile of that name (Lookup).
func Open(spec string) (Profile, error) {
	if IsFile(spec) {
		return LoadProfile(spec)
	}
	return Lookup(spec)
}

// OpenHost is Open for the host: the profile in a file, else the built-in
// host profile of that name (LookupHost).
func OpenHost(spec string) (Profile, error) {
	if IsFile(spec) {
		return LoadProfile(spec)
	}
	return LookupHost(spec)
}

// MaxProfileBytes is the largest profile file gpuz reads: 1 MiB. A
// profile gpuz calibrate writes takes a few KiB, so a larger file is not a
// profile; the cap keeps one from filling memory.
const MaxProfileBytes = 1 << 20

// LoadProfile reads a profile, a GPU's or the host's, from a JSON file
// whose keys are Profile's field names ("Name", "FP32", "MemBandwidth", …),
// as gpuz calibrate writes it. Name, FP32, MemBandwidth and MemoryBytes are
// required; copy rates left out are derived as the built-in profiles' are
// (and the derivation is added to Sources): pinned ones from PCIeGen and
// PCIeLanes, which without a link must then be given, pageable ones from
// the pinned. KernelOverhead (nanoseconds) left out is GPULaunchOverhead
// on a profile with a PCIe link and must be given without one (a host's).
// Fitted, when given, needs every fraction in (0, 1]. Every figure must be
// plausible (MinRate, MaxFLOPRate, MaxByteRate, MaxOverhead, MinFraction,
// MaxMemoryBytes). An unknown key, a value of the wrong type or a missing,
// impossible or implausible figure is an error naming the field. Only a regular file of at most MaxProfileBytes is read
// (filekind.Read): a directory, a named pipe, a device (/dev/zero, or a
// link to it) or a socket is refused before a byte is read.
func LoadProfile(path string) (Profile, error) {
	data, err := filekind.Read(path, MaxProfileBytes)
	if err != nil {
		return Profile{}, fmt.Errorf("reading the profile: %w", err)
	}
	p, err := parseProfile(data)
	if err != nil {
		return Profile{}, fmt.Errorf("profile %s: %w", path, err)
	}
	return p, nil
}

// parseProfile decodes and checks a profile in JSON.
func parseProfile(data []byte) (Profile, error) {
	var p Profile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return Profile{}, fmt.Errorf("field %s: want a %s, not a JSON %s", typeErr.Field, typeErr.Type, typeErr.Value)
		}
		// Unknown fields and syntax errors: encoding/json's message names
		// the field or the offset.
		return Profile{}, fmt.Errorf("decoding: %w", err)
	}
	if dec.More() {
		return Profile{}, errors.New("more than one JSON value in the file")
	}
	if err := checkFields(p); err != nil {
		return Profile{}, err
	}
	p, derived := withLinkRates(p)
	if len(derived) > 0 {
		p.Sources = append(p.Sources, fmt.Sprintf("%s derived: pinned = %.2g × the theoretical rate of the PCIe link (gen %d, x%d), pageable = %.2g × pinned",
			strings.Join(derived, ", "), PinnedFraction, p.PCIeGen, p.PCIeLanes, PageableFraction))
	}
	for _, r := range copyRates(p) {
		if r.v == 0 {
			return Profile{}, fmt.Errorf("field %s: missing (give it, or PCIeGen and PCIeLanes to derive the pinned rates)", r.name)
		}
	}
	if p.KernelOverhead == 0 {
		if p.PCIeGen == 0 {
			return Profile{}, errors.New("field KernelOverhead: missing (a profile without a PCIe link, the host's, gives its fixed cost per kernel in nanoseconds)")
		}
		p.KernelOverhead = GPULaunchOverhead
		p.Sources = append(p.Sources, "KernelOverhead derived: "+srcGPULaunch)
	}
	if err := checkBounds(p); err != nil {
		return Profile{}, err
	}
	return p, nil
}

// The plausibility bounds of a profile's figures, far outside what any
// device reaches (a laptop CPU does 1e12 FLOP/s, an H100's tensor cores
// 1e15; memories move 1e10 to 1e13 bytes/s; a kernel launch costs
// microseconds) yet tight enough that no figure saturates a prediction at
// 2⁶³ ns (a rate of 1e-300 FLOP/s did) or passes a number typed in the
// wrong unit. A profile file with a figure outside them is refused,
// naming the field; Fit refuses to return one.
const (
	// MinRate is the lowest FLOP or byte rate, per second, a profile
	// gives: FP32, Tensor16 (unless 0), MemBandwidth and the copy rates.
	MinRate = 1e6
	// MaxFLOPRate is the highest FLOP rate, FP32 and Tensor16, per second.
	MaxFLOPRate = 1e17
	// MaxByteRate is the highest byte rate, MemBandwidth and the copy
	// rates, per second.
	MaxByteRate = 1e14
	// MaxOverhead is the highest fixed cost: KernelOverhead, and Fitted's
	// CopyOverhead and classes' Overhead.
	MaxOverhead = time.Second
	// MinFraction is the lowest of Fitted's fractions, which are at most
	// 1 (Fit raises a peak that a fraction above 1 shows too low).
	MinFraction = 1e-6
	// MaxMemoryBytes is the largest MemoryBytes, 2⁵⁰ bytes (1 PiB).
	MaxMemoryBytes = int64(1) << 50
)

// checkRate returns an error naming field when v, a rate per second of
// unit, is outside [MinRate, top]; a v of 0 passes when zero says what 0
// means (none, derived), and is an error otherwise.
func checkRate(field, unit string, v, top float64, zero string) error {
	if v == 0 && zero != "" || v >= MinRate && v <= top {
		return nil
	}
	if v <= 0 || v != v {
		return nil // the caller's own message covers it
	}
	return fmt.Errorf("field %s: %g %s is not a plausible rate (want %g to %g%s)", field, v, unit, MinRate, top, zero)
}

// checkBounds returns an error naming the first figure of p outside the
// plausibility bounds (MinRate, MaxFLOPRate, …); check has refused what is
// missing or negative.
func checkBounds(p Profile) error {
	rates := []struct {
		name, unit string
		v, top     float64
		zero       string
	}{
		{"FP32", "FLOP/s", p.FP32, MaxFLOPRate, ""},
		{"Tensor16", "FLOP/s", p.Tensor16, MaxFLOPRate, "; 0: none"},
		{"MemBandwidth", "bytes/s", p.MemBandwidth, MaxByteRate, ""},
	}
	for _, r := range copyRates(p) {
		rates = append(rates, struct {
			name, unit string
			v, top     float64
			zero       string
		}{r.name, "bytes/s", r.v, MaxByteRate, "; 0: derived from the link"})
	}
	for _, r := range rates {
		if err := checkRate(r.name, r.unit, r.v, r.top, r.zero); err != nil {
			return err
		}
	}
	if p.MemoryBytes > MaxMemoryBytes {
		return fmt.Errorf("field MemoryBytes: %d bytes is not a plausible memory size (want at most 2^50, %d)", p.MemoryBytes, MaxMemoryBytes)
	}
	overhead := func(field string, d time.Duration) error {
		if d > MaxOverhead {
			return fmt.Errorf("field %s: %d ns is not a plausible fixed cost (want at most %v, %d ns)", field, int64(d), MaxOverhead, int64(MaxOverhead))
		}
		return nil
	}
	if err := overhead("KernelOverhead", p.KernelOverhead); err != nil {
		return err
	}
	e := p.Fitted
	if e == nil {
		return nil
	}
	fraction := func(field string, v float64) error {
		if v < MinFraction {
			return fmt.Errorf("field %s: %g is not a plausible fraction of the peak (want %g to 1)", field, v, MinFraction)
		}
		return nil
	}
	errs := []error{fraction("Fitted.Dense", e.Dense), fraction("Fitted.Elementwise", e.Elementwise),
		fraction("Fitted.Bandwidth", e.Bandwidth), fraction("Fitted.Copy", e.Copy),
		overhead("Fitted.CopyOverhead", e.CopyOverhead)}
	for i, c := range e.Classes {
		errs = append(errs, fraction(fmt.Sprintf("Fitted.Classes[%d].Compute", i), c.Compute),
			fraction(fmt.Sprintf("Fitted.Classes[%d].Bandwidth", i), c.Bandwidth),
			overhead(fmt.Sprintf("Fitted.Classes[%d].Overhead", i), c.Overhead))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// check returns an error naming the first field of p that is missing,
// impossible or outside the plausibility bounds (checkBounds).
func check(p Profile) error {
	if err := checkFields(p); err != nil {
		return err
	}
	return checkBounds(p)
}

// checkFields returns an error naming the first field of p that is
// missing or impossible.
func checkFields(p Profile) error {
	switch {
	case p.Name == "":
		return errors.New("field Name: missing")
	case strings.ContainsAny(p.Name, " \t\n:,"):
		return fmt.Errorf("field Name: %q has a space, colon or comma", p.Name)
	case !(p.FP32 > 0):
		return fmt.Errorf("field FP32: want a positive rate in FLOP/s, not %g", p.FP32)
	case !(p.MemBandwidth > 0):
		return fmt.Errorf("field MemBandwidth: want a positive rate in bytes/s, not %g", p.MemBandwidth)
	case p.MemoryBytes < 4:
		return fmt.Errorf("field MemoryBytes: want at least 4 bytes, not %d", p.MemoryBytes)
	case p.PCIeGen < 0 || p.PCIeGen > 6:
		return fmt.Errorf("field PCIeGen: want 1 to 6 (0: none), not %d", p.PCIeGen)
	case p.PCIeLanes < 0 || p.PCIeLanes > 32:
		return fmt.Errorf("field PCIeLanes: want 1 to 32 (0: none), not %d", p.PCIeLanes)
	case (p.PCIeGen == 0) != (p.PCIeLanes == 0):
		return errors.New("field PCIeLanes: PCIeGen and PCIeLanes go together (both 0 for no link)")
	case !(p.Tensor16 >= 0) || math.IsInf(p.Tensor16, 0):
		return fmt.Errorf("field Tensor16: want a rate in FLOP/s (0 or left out: none, 16-bit products at FP32), not %g", p.Tensor16)
	case p.KernelOverhead < 0:
		return fmt.Errorf("field KernelOverhead: want a duration in nanoseconds, not %d", p.KernelOverhead)
	}
	if e := p.Fitted; e != nil {
		for _, f := range []struct {
			name string
			v    float64
		}{{"Dense", e.Dense}, {"Elementwise", e.Elementwise}, {"Bandwidth", e.Bandwidth}, {"Copy", e.Copy}} {
			if !(f.v > 0 && f.v <= 1) {
				return fmt.Errorf("field Fitted.%s: want a fraction in (0, 1], not %g", f.name, f.v)
			}
		}
		if e.CopyOverhead < 0 {
			return fmt.Errorf("field Fitted.CopyOverhead: want a duration in nanoseconds, not %d", e.CopyOverhead)
		}
		for i, c := range e.Classes {
			switch {
			case c.Name == "" || len(c.Kernels) == 0:
				return fmt.Errorf("field Fitted.Classes[%d]: want a Name and its Kernels", i)
			case !(c.Compute > 0 && c.Compute <= 1):
				return fmt.Errorf("field Fitted.Classes[%d].Compute: want a fraction in (0, 1], not %g", i, c.Compute)
			case !(c.Bandwidth > 0 && c.Bandwidth <= 1):
				return fmt.Errorf("field Fitted.Classes[%d].Bandwidth: want a fraction in (0, 1], not %g", i, c.Bandwidth)
			case c.Overhead < 0:
				return fmt.Errorf("field Fitted.Classes[%d].Overhead: want a duration in nanoseconds, not %d", i, c.Overhead)
			}
		}
	}
	for _, r := range copyRates(p) {
		if r.v < 0 || r.v != r.v {
			return fmt.Errorf("field %s: want a rate in bytes/s (0 or left out: derived from the link), not %g", r.name, r.v)
		}
	}
	return nil
}

// namedRate is a copy rate of a profile with its field's name.
type namedRate struct {
	name string
	v    float64
}

// copyRates returns p's four copy rates with their fields' names.
func copyRates(p Profile) []namedRate {
	return []namedRate{{"PinnedH2D", p.PinnedH2D}, {"PinnedD2H", p.PinnedD2H}, {"PageableH2D", p.PageableH2D}, {"PageableD2H", p.PageableD2H}}
}
