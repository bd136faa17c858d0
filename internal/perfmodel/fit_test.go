package perfmodel

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// fitTruth is the device the synthetic samples are timed on: a host-like
// profile with known factors that differ from DefaultEfficiency's, each
// class of KernelClasses with factors of its own.
var fitTruth = Profile{
	Name: "truth", FP32: 1e11, MemBandwidth: 2e10, MemoryBytes: 1 << 30,
	PinnedH2D: 1e10, PinnedD2H: 1e10, PageableH2D: 1e10, PageableD2H: 1e10,
	KernelOverhead: 700 * time.Nanosecond,
	Fitted: &Efficiency{Dense: 0.7, Elementwise: 0.3, Bandwidth: 0.5, Copy: 0.8, CopyOverhead: 3 * time.Microsecond,
		Classes: withFactors(KernelClasses(), []classFactors{
			{0.6, 0.4, 400 * time.Nanosecond}, {0.2, 0.9, 900 * time.Nanosecond},
			{0.1, 0.25, 200 * time.Nanosecond}, {0.35, 0.45, 500 * time.Nanosecond}, {0.15, 0.6, 300 * time.Nanosecond}})},
}

// classFactors are a class's compute and bandwidth fractions and overhead.
type classFactors struct {
	compute, bandwidth float64
	overhead           time.Duration
}

// withFactors returns classes with the factors f, in order.
func withFactors(classes []KernelClass, f []classFactors) []KernelClass {
	for i := range classes {
		classes[i].Compute, classes[i].Bandwidth, classes[i].Overhead = f[i].compute, f[i].bandwidth, f[i].overhead
	}
	return classes
}

// syntheticSamples times, on truth's model, what calibration runs: for
// every class of KernelClasses, each of its kernels at one size heavy in
// FLOPs and at three sizes heavy in bytes (from 16 floats, where the
// launch decides, to 1 Mi); Adds from 16 floats to 4 Mi, element-wise
// kernels heavy in FLOPs when withElementwise (so that Elementwise is
// decided), and copies each way from 4 KiB to 64 MiB. Each is repeated to
// at least 100 µs so that a nanosecond's rounding stays below 1e-5.
func syntheticSamples(truth Profile, withElementwise bool) []Sample {
	var samples []Sample
	add := func(name string, k Kernel, reps int64) {
		k.Launches, k.FLOPs, k.Bytes = reps*k.Launches, reps*k.FLOPs, reps*k.Bytes
		samples = append(samples, Sample{Name: fmt.Sprintf("%s ×%d", name, reps), Kernels: []Kernel{k}})
	}
	for _, c := range KernelClasses() {
		for _, name := range c.Kernels {
			add(name+" compute", Kernel{Name: name, Launches: 1, FLOPs: 200 << 14, Bytes: 4 << 14}, 100)
			for _, n := range []int64{16, 1 << 12, 1 << 20} {
				add(fmt.Sprintf("%s %d", name, n), Kernel{Name: name, Launches: 1, FLOPs: n, Bytes: 12 * n}, max(1, 1<<24/n))
			}
		}
	}
	for _, n := range []int64{16, 1 << 10, 1 << 16, 1 << 22} {
		add(fmt.Sprintf("Add %d", n), Kernel{Name: "Add", Launches: 1, FLOPs: n, Bytes: 12 * n}, max(1, 1<<24/n))
	}
	if withElementwise {
		for _, n := range []int64{1 << 12, 1 << 18} {
			add(fmt.Sprintf("Exp %d", n), Kernel{Name: "Exp", Launches: 1, FLOPs: 40 * n, Bytes: 8 * n}, max(1, 1<<22/n))
		}
	}
	for _, b := range []int64{4 << 10, 1 << 20, 64 << 20} {
		reps := max(1, (16<<20)/b)
		samples = append(samples,
			Sample{Name: fmt.Sprintf("upload %d", b), Copies: Copies{H2DBytes: reps * b, SyncBytes: reps * b, Count: reps, Pageable: true}},
			Sample{Name: fmt.Sprintf("download %d", b), Copies: Copies{D2HBytes: reps * b, SyncBytes: reps * b, Count: reps, Pageable: true}})
	}
	for i := range samples {
		samples[i].Time = samples[i].Model(truth)
	}
	return samples
}

// relClose says a and b agree within a relative 1e-4.
func relClose(a, b float64) bool { return math.Abs(a-b) <= 1e-4*math.Max(math.Abs(a), math.Abs(b)) }

// TestFitRecoversKnownFactors fits a profile that starts at the default
// efficiency and the GPU's 5 µs per kernel to samples timed on fitTruth's
// model: Fit must find truth's factors and fixed costs, each class's
// included, and the model's median error on the samples must fall from
// far off to nothing. Dense alone is kept: every dense kernel is in a
// class.
func TestFitRecoversKnownFactors(t *testing.T) {
	start := fitTruth
	start.Fitted, start.KernelOverhead = nil, GPULaunchOverhead
	samples := syntheticSamples(fitTruth, true)
	got, err := Fit(start, samples)
	if err != nil {
		t.Fatal(err)
	}
	p, want := got.Profile, fitTruth.Efficiency()
	e := p.Efficiency()
	type factor struct {
		name      string
		got, want float64
	}
	factors := []factor{
		{"Elementwise", e.Elementwise, want.Elementwise},
		{"Bandwidth", e.Bandwidth, want.Bandwidth}, {"Copy", e.Copy, want.Copy},
		{"CopyOverhead", e.CopyOverhead.Seconds(), want.CopyOverhead.Seconds()},
		{"KernelOverhead", p.KernelOverhead.Seconds(), fitTruth.KernelOverhead.Seconds()},
		{"FP32", p.FP32, fitTruth.FP32}, {"MemBandwidth", p.MemBandwidth, fitTruth.MemBandwidth},
	}
	if len(e.Classes) != len(want.Classes) {
		t.Fatalf("fitted %d classes, want %d", len(e.Classes), len(want.Classes))
	}
	for i, c := range e.Classes {
		w := want.Classes[i]
		factors = append(factors, factor{c.Name + " Compute", c.Compute, w.Compute}, factor{c.Name + " Bandwidth", c.Bandwidth, w.Bandwidth},
			factor{c.Name + " Overhead", c.Overhead.Seconds(), w.Overhead.Seconds()})
	}
	for _, f := range factors {
		if !relClose(f.got, f.want) {
			t.Errorf("fitted %s = %g, want %g", f.name, f.got, f.want)
		}
	}
	if !slices.Equal(got.Kept, []string{FactorDense}) {
		t.Errorf("kept %v, want only Dense (no dense kernel outside the classes)", got.Kept)
	}
	before, after := MedianError(start, samples), MedianError(p, samples)
	if before < 0.1 || after > 1e-4 {
		t.Errorf("median error %.3g before the fit, %.3g after; want above 0.1, then below 1e-4", before, after)
	}
	if !slices.Equal(e.DenseKernels, DefaultEfficiency.DenseKernels) || p.Fitted.DenseKernels != nil {
		t.Errorf("dense kernels %v (stored %v), want the default's, not stored", e.DenseKernels, p.Fitted.DenseKernels)
	}
}

// TestFitKeepsWhatNoSampleDecides: without an element-wise kernel bound by
// compute, Elementwise keeps the starting profile's value and is named;
// without attention samples, the attention class keeps the factors its
// kernels had before the fit (the element-wise ones, from a profile
// without classes) and all three are named.
func TestFitKeepsWhatNoSampleDecides(t *testing.T) {
	got, err := Fit(fitTruth, syntheticSamples(fitTruth, false))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Kept, []string{FactorDense, FactorElementwise}) || got.Profile.Efficiency().Elementwise != 0.3 {
		t.Errorf("kept %v, Elementwise %g; want Dense and Elementwise kept, Elementwise at 0.3", got.Kept, got.Profile.Efficiency().Elementwise)
	}
	start := fitTruth
	start.Fitted = &Efficiency{Dense: 0.7, Elementwise: 0.3, Bandwidth: 0.5, Copy: 0.8, CopyOverhead: 3 * time.Microsecond}
	var noAttention []Sample
	for _, s := range syntheticSamples(fitTruth, true) {
		if !strings.HasPrefix(s.Name, "Attention") {
			noAttention = append(noAttention, s)
		}
	}
	if got, err = Fit(start, noAttention); err != nil {
		t.Fatal(err)
	}
	want := []string{FactorDense, ClassAttention + " Compute", ClassAttention + " Bandwidth", ClassAttention + " Overhead"}
	c, b, o := got.Profile.KernelFactors("AttentionMix")
	if !slices.Equal(got.Kept, want) || c != 0.3 || b != 0.5 || o != fitTruth.KernelOverhead {
		t.Errorf("kept %v, attention at %g, %g, %v; want %v kept, at 0.3, 0.5 and %v", got.Kept, c, b, o, want, fitTruth.KernelOverhead)
	}
}

// TestFitRaisesALowPeak: a profile whose FP32 and bandwidth are half what
// the device reaches fits fractions above 1; Fit raises the peaks to the
// rates reached, with fractions of 1, and the model still matches.
func TestFitRaisesALowPeak(t *testing.T) {
	fast := fitTruth
	fast.Fitted = &Efficiency{Dense: 1, Elementwise: 0.5, Bandwidth: 1, Copy: 1,
		Classes: withFactors(KernelClasses(), []classFactors{{1, 0.5, 0}, {0.5, 0.5, 0}, {0.5, 0.5, 0}, {0.5, 0.5, 0}, {0.5, 0.5, 0}})}
	start := fitTruth
	start.FP32, start.MemBandwidth, start.Fitted = fitTruth.FP32/2, fitTruth.MemBandwidth/2, nil
	samples := syntheticSamples(fast, true)
	got, err := Fit(start, samples)
	if err != nil {
		t.Fatal(err)
	}
	p := got.Profile
	if e := p.Efficiency(); e.Classes[0].Compute != 1 || e.Bandwidth != 1 || !relClose(p.FP32, fitTruth.FP32) || !relClose(p.MemBandwidth, fitTruth.MemBandwidth) {
		t.Errorf("fitted FP32 %g at %g, bandwidth %g at %g; want the peaks raised to %g and %g at fractions of 1",
			p.FP32, e.Classes[0].Compute, p.MemBandwidth, e.Bandwidth, fitTruth.FP32, fitTruth.MemBandwidth)
	}
	if err := MedianError(p, samples); err > 1e-4 {
		t.Errorf("median error %.3g after the fit, want below 1e-4", err)
	}
}

func TestFitErrors(t *testing.T) {
	gemm := Kernel{Name: "Gemm", Launches: 1, FLOPs: 1e9, Bytes: 1e6}
	for _, tt := range []struct {
		name    string
		samples []Sample
		want    string
	}{
		{"none", nil, "no samples"},
		{"no time", []Sample{{Name: "g", Kernels: []Kernel{gemm}}}, `sample "g": no measured time`},
		{"kernels and copies", []Sample{{Name: "both", Kernels: []Kernel{gemm}, Copies: Copies{H2DBytes: 1, Count: 1}, Time: time.Millisecond}},
			`sample "both": a sample times kernels alone or plain copies alone`},
		{"migrations", []Sample{{Name: "m", Copies: Copies{H2DBytes: 1, Migrated: true}, Time: time.Millisecond}}, "alone"},
		{"one sample, two factors", []Sample{{Name: "g", Kernels: []Kernel{gemm}, Time: time.Millisecond}}, "1 samples for 2 factors"},
	} {
		if _, err := Fit(fitTruth, tt.samples); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Fit error = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestMedianError(t *testing.T) {
	p := Profile{FP32: 1e9, MemBandwidth: 1e9}
	k := func(flops int64) []Kernel { return []Kernel{{Name: "Gemm", FLOPs: flops}} }
	// Models of 1, 1 and 1 s (Dense 0.7 of 1 GFLOP/s: 0.7e9 FLOPs a
	// second) against 1, 2 and 4 s measured: errors 0, 0.5 and 0.75.
	samples := []Sample{{Kernels: k(7e8), Time: time.Second}, {Kernels: k(7e8), Time: 2 * time.Second}, {Kernels: k(7e8), Time: 4 * time.Second}}
	if got := MedianError(p, samples); !relClose(got, 0.5) {
		t.Errorf("MedianError = %g, want 0.5", got)
	}
	if got := MedianError(p, samples[:2]); !relClose(got, 0.25) {
		t.Errorf("MedianError of two = %g, want 0.25", got)
	}
	if got := MedianError(p, nil); !math.IsNaN(got) {
		t.Errorf("MedianError of none = %g, want NaN", got)
	}
}
