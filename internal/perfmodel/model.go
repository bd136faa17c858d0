package perfmodel

import (
	"math"
	"slices"
	"strings"
	"time"
)

// Kernel is one kernel of a run (or a step, or an epoch): how often it was
// launched and, over all its launches, the floating-point operations it
// did and the device-memory bytes it read and wrote.
type Kernel struct {
	// Name is the kernel's name as device.Kernels calls it ("Gemm",
	// "Conv2d", "AdamStep", …); Efficiency.DenseKernels is matched
	// against it.
	Name     string
	Launches int64
	FLOPs    int64
	Bytes    int64
	// Half says the FLOPs are products of 16-bit operands, at the
	// profile's Rate16 instead of its FP32 rate.
	Half bool `json:",omitempty"`
}

// Copies are the copies between host and device memory of the same run.
type Copies struct {
	// H2DBytes and D2HBytes are the bytes copied to and from the device.
	H2DBytes, D2HBytes int64
	// SyncBytes is the part of H2DBytes+D2HBytes that the computation
	// waits for (a synchronous copy, or a prefetch that came too late);
	// the rest may overlap kernels.
	SyncBytes int64
	// Pageable says the host side is ordinary (pageable) memory rather
	// than page-locked.
	Pageable bool
	// Count is the number of copies.
	Count int64
	// Migrated says the bytes are managed memory's page migrations, which
	// kernels' page faults drive (the managed mode): every one is waited
	// for, at the pinned rates, in fault batches of at most
	// MigrationBatch bytes, each costing FaultCost more, instead of
	// Count × CopyOverhead.
	Migrated bool
	// RemoteBytes is what kernels read and write of managed memory in
	// place across the bus (pages preferred on the host): waited for, at
	// the pinned host-to-device rate (the bound: the link's).
	RemoteBytes int64
}

// MigrationBatch is the most bytes one serviced fault batch migrates: the
// driver's 2 MiB block (nvidia-uvm migrates the faulting 64 KiB and
// prefetches the rest of its 2 MiB block once more than half of it is
// resident).
const MigrationBatch = 2 << 20

// FaultCost is the time to service one batch of page faults: about 45 µs
// on a GTX 1080 Ti over PCIe 3 (Ganguly et al., "Interplay between
// Hardware Prefetcher and Page Eviction Policy in CPU-GPU Unified Virtual
// Memory", ISCA 2019). An estimate until a GPU measures it: with it, a
// 2 MiB migration at 12 GB/s takes 220 µs, 9.5 GB/s effective, near the
// 8.2 GB/s that a GTX 1080 benchmark measured for fault-driven access
// against a prefetched run's full rate. Small pages migrate slower than
// the model says (2.2 GB/s at 4 KiB in the same paper): the default page
// is the 2 MiB block.
const FaultCost = 45 * time.Microsecond

// Efficiency is the fraction of a profile's peaks that real kernels and
// copies reach, and the fixed cost of a copy, which a peak does not show.
// Each fraction is in (0, 1]; Predict reads a value outside that range as
// 1. The fixed cost of a kernel is the profile's (Profile.KernelOverhead):
// a GPU's launch and a host's function call differ by ten times.
type Efficiency struct {
	// Dense is the fraction of the FP32 peak reached by SGEMM-like
	// kernels (those named in DenseKernels).
	Dense float64
	// Elementwise is the fraction of the FP32 peak reached by every other
	// kernel (element-wise, reductions, normalisation, the hand-written
	// attention kernels).
	Elementwise float64
	// Bandwidth is the fraction of the memory bandwidth that kernels
	// reach.
	Bandwidth float64
	// Copy is the fraction of the profile's copy rates that the run's
	// copies reach.
	Copy float64
	// CopyOverhead is the fixed cost of each copy.
	CopyOverhead time.Duration
	// DenseKernels are the kernel names (compared without regard to case)
	// that run as an SGEMM on a GPU: cuBLAS's GEMM, the ops that call it
	// (Linear, Projection, Conv1D and their gradients: the engine's
	// Schedule.Work names kernels by their op), and
	// the convolutions, which gpuz's CUDA device runs as im2col and a
	// cuBLAS GEMM. Nil in a profile's fitted efficiency (Profile.Fitted)
	// means DefaultEfficiency's.
	DenseKernels []string `json:",omitempty"`
	// Classes are kernel classes with factors of their own, which replace
	// the ones above for the kernels they name: gpuz calibrate fits one per
	// class of KernelClasses. A kernel in none of them (the element-wise
	// kernels) reaches Dense or Elementwise of the FP32 peak and Bandwidth
	// of the memory's, and costs the profile's KernelOverhead.
	Classes []KernelClass `json:",omitempty"`
}

// KernelClass is a class of kernels that reach their own fractions of a
// profile's peaks and cost their own fixed time per kernel: on a host,
// OpenBLAS's products, the im2col convolutions and the attention kernels
// differ in all three, and one set of factors for all of them mispredicts
// each.
type KernelClass struct {
	// Name names the class: "products", "convolutions", …
	Name string
	// Kernels are the names of the class's kernels, compared without
	// regard to case (as Kernel.Name).
	Kernels []string
	// Compute and Bandwidth are the fractions of the FP32 peak and of the
	// memory bandwidth that the class's kernels reach, each in (0, 1].
	Compute, Bandwidth float64
	// Overhead is the fixed cost of each of the class's kernels, in place
	// of the profile's KernelOverhead. In JSON, nanoseconds.
	Overhead time.Duration
}

// KernelClasses are the classes gpuz calibrate gives factors of their own
// (their fractions and overhead unset): the products (a GEMM and the ops
// that call one: Linear and its gradients, the llm workload's Projection,
// nn.Linear without a bias, and GPT-2's Conv1D, x·W + b, and its
// gradients), the convolutions (im2col and a GEMM), the attention kernels
// (a product and a softmax per head, hand-written; grouped-query attention
// runs the same kernels), the fused attention's (the same products block by
// block with an online softmax, in other kernels: a class of their own) and the normalisations (row reductions:
// LayerNorm and RMSNorm, with their gradients). Every other kernel keeps
// Efficiency's own factors: the element-wise class (ElementwiseKernels).
func KernelClasses() []KernelClass {
	return []KernelClass{
		{Name: ClassProducts, Kernels: []string{"Gemm", "Linear", "LinearInputGrad", "LinearWeightGrad",
			"Projection", "Conv1D", "Conv1DInputGrad", "Conv1DWeightGrad"}},
		{Name: ClassConvolutions, Kernels: []string{"Conv2d", "Conv2dInputGrad", "Conv2dWeightGrad"}},
		{Name: ClassAttention, Kernels: []string{"AttentionProbs", "AttentionProbsGrad", "AttentionMix",
			"AttentionMixProbsGrad", "AttentionMixValueGrad"}},
		{Name: ClassFusedAttention, Kernels: []string{"FusedAttention", "FusedAttentionGrad"}},
		{Name: ClassNormalisation, Kernels: []string{"LayerNorm", "LayerNormInputGrad", "LayerNormWeightGrad",
			"RMSNorm", "RMSNormInputGrad", "RMSNormWeightGrad"}},
	}
}

// The names of KernelClasses' classes, and ClassElementwise, the class of
// every other kernel.
const (
	ClassProducts     = "products"
	ClassConvolutions = "convolutions"
	ClassAttention    = "attention"
	// ClassFusedAttention is --attention fused's kernels.
	ClassFusedAttention = "fused attention"
	ClassNormalisation  = "normalisation"
	ClassElementwise    = "element-wise"
)

// ElementwiseKernels are the kernels of the workloads that are in no
// class of KernelClasses, each memory-bound or nearly: the element-wise
// ops and activations (Add, LeakyReLU, GELUTanh, SwiGLU, Rotary's
// rotations and their gradients), the bias and position-table gradients
// (row sums), the lookups (Embedding, and TokenEmbedding, a gather that
// computes nothing) with their gradient, the losses, the copies in and out
// of the fused attention's packed value, generation's key-value cache
// (CacheWrite, a copy, and CacheAttend, whose decode reads the whole cache
// for a few operations per element), and the engine's own
// kernels (engine.KernelGradientSum, KernelSumSquares, KernelAdam and
// KernelConvert). They reach Efficiency's Elementwise and Bandwidth
// fractions and cost the profile's KernelOverhead. The list is what
// ClassOf knows: the model prices any kernel outside the classes the
// same, listed or not.
func ElementwiseKernels() []string {
	return []string{"Add", "LeakyReLU", "LeakyReLUGrad", "GELUTanh", "GELUTanhGrad", "SwiGLU", "SwiGLUGrad",
		"Rotary", "RotaryGrad", "LinearBiasGrad", "Conv2dBiasGrad", "AddPositions", "PositionsGrad",
		"Embedding", "EmbeddingGrad", "TokenEmbedding", "SoftmaxCrossEntropy", "SoftmaxCrossEntropyGrad",
		"MSE", "MSEGrad", "Mean", "MeanGrad", "GradientSum", "SumSquares", "AdamStep", "Convert16",
		"FusedAttentionOut", "FusedAttentionLSE", "FusedAttentionPack", "CacheWrite", "CacheAttend"}
}

// ClassOf returns the class of the kernel called name (compared without
// regard to case): the name of its class of KernelClasses, or
// ClassElementwise for a kernel of ElementwiseKernels; ok is false for a
// kernel the model does not know.
func ClassOf(name string) (class string, ok bool) {
	named := func(k string) bool { return strings.EqualFold(k, name) }
	for _, c := range KernelClasses() {
		if slices.ContainsFunc(c.Kernels, named) {
			return c.Name, true
		}
	}
	if slices.ContainsFunc(ElementwiseKernels(), named) {
		return ClassElementwise, true
	}
	return "", false
}

// class returns the class of e that names the kernel called name, nil
// when none does.
func (e Efficiency) class(name string) *KernelClass {
	for i := range e.Classes {
		if slices.ContainsFunc(e.Classes[i].Kernels, func(k string) bool { return strings.EqualFold(k, name) }) {
			return &e.Classes[i]
		}
	}
	return nil
}

// factors returns the fractions of p's FP32 peak and memory bandwidth
// that the kernel called name reaches under e, and its fixed cost in
// seconds: its class's, else e's and p's.
func (e Efficiency) factors(name string, p Profile) (compute, bandwidth, overhead float64) {
	if c := e.class(name); c != nil {
		return frac(c.Compute), frac(c.Bandwidth), max(c.Overhead.Seconds(), 0)
	}
	return e.flopFraction(name), frac(e.Bandwidth), max(p.KernelOverhead.Seconds(), 0)
}

// KernelFactors returns the fractions of p's FP32 peak and memory
// bandwidth that the kernel called name reaches at p's efficiency, and its
// fixed cost.
func (p Profile) KernelFactors(name string) (compute, bandwidth float64, overhead time.Duration) {
	c, b, o := p.Efficiency().factors(name, p)
	return c, b, duration(o)
}

// DefaultEfficiency is the efficiency Predict's model time assumes unless
// a profile has its own (Profile.Fitted, from gpuz calibrate). None of its values was fitted to the reference report;
// each is an estimate from published microbenchmarks or from the hardware's
// documented limits, stated here and in docs/model.md. The figures from
// the named sources are as recalled when this was written.
//
//   - Dense 0.7: cuBLAS SGEMM on large square matrices reaches 70–90% of
//     the FP32 peak at the quoted boost clock (CUTLASS's published
//     performance figures against cuBLAS; Jia et al., "Dissecting the
//     NVIDIA Volta GPU Architecture via Microbenchmarking", 2018). gpuz's
//     GEMMs are small or skinny (30 rows of 2000; im2col convolutions of a
//     batch of 2), so the lower end.
//   - Elementwise 0.25: a simple kernel issues mostly plain adds and
//     multiplies, one FLOP per instruction where an FMA does two (at most
//     0.5), and its exponentials and divisions run on the special-function
//     units at a quarter of the FMA rate (the CUDA C++ Programming Guide's
//     table of arithmetic instruction throughput): about 0.25. Such
//     kernels are memory-bound, so the figure rarely decides.
//   - Bandwidth 0.8: STREAM-like kernels reach 80–90% of the theoretical
//     bandwidth on NVIDIA GPUs (BabelStream: Deakin et al., "Evaluating
//     attainable memory bandwidth of parallel programming models via
//     BabelStream", 2018, and its published results); gpuz's kernels are
//     not tuned and some reduce or stride, so the lower end.
//   - Copy 0.9: the profile's copy rates are those of large copies; copies
//     of a megabyte and more reach 90% and more of them (the flat part of
//     CUDA bandwidthTest's shmoo mode curves). An estimate.
//   - CopyOverhead 10 µs: the fixed cost of a cudaMemcpy (the call, DMA
//     set-up and completion), which is how long the smallest copies take
//     in bandwidthTest's shmoo mode. An estimate.
var DefaultEfficiency = Efficiency{
	Dense:        0.7,
	Elementwise:  0.25,
	Bandwidth:    0.8,
	Copy:         0.9,
	CopyOverhead: 10 * time.Microsecond,
	DenseKernels: []string{"Gemm", "Linear", "LinearInputGrad", "LinearWeightGrad",
		"Projection", "Conv1D", "Conv1DInputGrad", "Conv1DWeightGrad",
		"Conv2d", "Conv2dInputGrad", "Conv2dWeightGrad"},
}

// Limiters are the values of Prediction.Limiter.
const (
	LimitCompute = "compute"
	LimitMemory  = "memory"
	LimitLaunch  = "launch"
	LimitCopy    = "copy"
)

// Prediction is what a profile could do with a run's kernels and copies.
type Prediction struct {
	// Bound is the roofline lower bound: no device with the profile's
	// peaks can take less.
	Bound time.Duration
	// Model is the model time: the bound's formula at the efficiency's
	// fractions, with launch and copy overheads.
	Model time.Duration
	// Compute and Memory are the kernels' FLOPs and bytes at the model's
	// rates, each summed over every kernel (a kernel's time is the larger
	// of its two); Launch is the launches' overhead; Copy is every copy at
	// the model's rate with its overhead, overlapped or not.
	Compute, Memory, Launch, Copy time.Duration
	// Limiter is the largest part of Model: LimitCompute or LimitMemory
	// (the kernels bound by each, summed), LimitLaunch, or LimitCopy (the
	// copies not hidden behind kernels); "" when there is nothing to do.
	Limiter string
}

// Predict returns the bound and the model time of kernels and copies on p.
//
// The bound is Σ max(FLOPs/FP32, Bytes/MemBandwidth) over the kernels
// (K), and the copies at the link's theoretical rate (C, the larger of
// the PCIe rate and the profile's copy rates): the synchronous fraction
// s = SyncBytes/(H2DBytes+D2HBytes) of C is serialized and the rest
// overlaps the kernels, so the bound is s·C + max(K, (1−s)·C).
//
// The model time is the same formula with each kernel at its efficiency
// (FP32 × Dense or × Elementwise, MemBandwidth × Bandwidth) plus
// Launches × p.KernelOverhead, or at its class's factors and overhead
// when e has a class that names it (Efficiency.Classes), and the copies at the profile's pinned or
// pageable rates × Copy, plus Count × CopyOverhead. Launch overheads are
// added rather than hidden behind the previous kernel, which for long
// kernels makes the model slower by at most their launches' overhead. The
// synchronous fraction is applied to both directions alike. Managed
// memory's migrations (Migrated) are all waited for and cost FaultCost per
// MigrationBatch instead of CopyOverhead per copy; its accesses in place
// (RemoteBytes) are waited for at the pinned host-to-device rate. With
// fractions in (0, 1] the bound never exceeds the model time.
func Predict(kernels []Kernel, copies Copies, p Profile, e Efficiency) Prediction {
	var boundK, compute, memory, launch, computeBound, memoryBound float64 // seconds
	for _, k := range kernels {
		f, b := nonneg(k.FLOPs), nonneg(k.Bytes)
		rate := p.FP32
		if k.Half {
			rate = p.Rate16()
		}
		boundK += max(div(f, rate), div(b, p.MemBandwidth))
		cf, bf, overhead := e.factors(k.Name, p)
		c := div(f, rate*cf)
		m := div(b, p.MemBandwidth*bf)
		compute, memory = compute+c, memory+m
		if c >= m {
			computeBound += c
		} else {
			memoryBound += m
		}
		launch += nonneg(k.Launches) * overhead
	}
	modelK := computeBound + memoryBound + launch

	up, down := nonneg(copies.H2DBytes), nonneg(copies.D2HBytes)
	rateUp, rateDown := p.PinnedH2D, p.PinnedD2H
	if copies.Pageable {
		rateUp, rateDown = p.PageableH2D, p.PageableD2H
	}
	link := PCIeRate(p.PCIeGen, p.PCIeLanes)
	boundC := div(up, max(link, p.PinnedH2D, p.PageableH2D)) + div(down, max(link, p.PinnedD2H, p.PageableD2H))
	modelC := div(up, rateUp*frac(e.Copy)) + div(down, rateDown*frac(e.Copy))
	if remote := nonneg(copies.RemoteBytes); remote > 0 {
		boundC += div(remote, max(link, p.PinnedH2D))
		modelC += div(remote, p.PinnedH2D*frac(e.Copy))
	}
	if copies.Migrated {
		modelC += math.Ceil((up+down)/MigrationBatch) * FaultCost.Seconds()
	} else {
		modelC += nonneg(copies.Count) * max(e.CopyOverhead.Seconds(), 0)
	}
	sync := 1.0 // no bytes: a copy's overhead is waited for
	if up+down > 0 && !copies.Migrated {
		sync = min(max(nonneg(copies.SyncBytes)/(up+down), 0), 1)
	}
	bound := sync*boundC + max(boundK, (1-sync)*boundC)
	model := sync*modelC + max(modelK, (1-sync)*modelC)

	pr := Prediction{
		Bound: duration(bound), Model: duration(model),
		Compute: duration(compute), Memory: duration(memory), Launch: duration(launch), Copy: duration(modelC),
	}
	largest := 0.0
	for _, part := range []struct {
		name    string
		seconds float64
	}{{LimitCompute, computeBound}, {LimitMemory, memoryBound}, {LimitLaunch, launch}, {LimitCopy, model - modelK}} {
		if part.seconds > largest {
			pr.Limiter, largest = part.name, part.seconds
		}
	}
	return pr
}

// flopFraction is the fraction of the FP32 peak that the kernel called
// name reaches.
func (e Efficiency) flopFraction(name string) float64 {
	for _, d := range e.DenseKernels {
		if strings.EqualFold(d, name) {
			return frac(e.Dense)
		}
	}
	return frac(e.Elementwise)
}

// frac is f when it is a fraction in (0, 1], else 1.
func frac(f float64) float64 {
	if f > 0 && f <= 1 {
		return f
	}
	return 1
}

// nonneg is n as a float, 0 when negative.
func nonneg(n int64) float64 { return float64(max(n, 0)) }

// div is the seconds to do amount at rate per second: 0 for no amount,
// +Inf for an amount at no rate.
func div(amount, rate float64) float64 {
	if amount <= 0 {
		return 0
	}
	if !(rate > 0) {
		return math.Inf(1)
	}
	return amount / rate
}

// duration converts seconds to a Duration, the longest Duration when they
// do not fit.
func duration(seconds float64) time.Duration {
	ns := seconds * 1e9
	if ns >= math.MaxInt64 || math.IsNaN(ns) {
		return math.MaxInt64
	}
	return time.Duration(math.Round(ns))
}

// FlagRatio is how many times its model time a measured time must take to
// be flagged.
const FlagRatio = 3

// Flag compares a measured time with its model time. It returns their
// ratio (0 when there is no model time) and, when the ratio exceeds
// FlagRatio, the likely reasons, most likely first: at ten times the model
// and more, the driver spilling device memory to system memory (which
// slows every kernel to the PCIe rate) comes first; below, copies that did
// not overlap and launch overhead do. Reasons is nil when not flagged.
func Flag(measured, model time.Duration) (ratio float64, reasons []string) {
	if model <= 0 || measured <= 0 {
		return 0, nil
	}
	ratio = float64(measured) / float64(model)
	if ratio <= FlagRatio {
		return ratio, nil
	}
	spill := "device memory spilled to system memory: the Windows driver (since 536.40) falls back to host memory " +
		"when the GPU's is full instead of failing, and kernels then read over PCIe"
	overlap := "copies meant to overlap compute did not (pageable host memory, one stream, or a synchronize between " +
		"them), so they add to the time instead of hiding behind kernels"
	launch := "launch overhead dominating small kernels: each launch cost more than the model's overhead " +
		"(a slow driver path, WDDM batching, or a synchronize after each kernel)"
	if ratio >= 10 {
		return ratio, []string{spill, overlap, launch}
	}
	return ratio, []string{overlap, launch, spill}
}
