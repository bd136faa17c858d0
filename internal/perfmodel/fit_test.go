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
// profile with known factors that differ from DefaultEfficiency's.
var fitTruth = Profile{
	Name: "truth", FP32: 1e11, MemBandwidth: 2e10, MemoryBytes: 1 << 30,
	PinnedH2D: 1e10, PinnedD2H: 1e10, PageableH2D: 1e10, PageableD2H: 1e10,
	KernelOverhead: 700 * time.Nanosecond,
	Fitted:         &Efficiency{Dense: 0.6, Elementwise: 0.3, Bandwidth: 0.5, Copy: 0.8, CopyOverhead: 3 * time.Microsecond},
}

// syntheticSamples times, on truth's model, what calibration runs: GEMMs
// from 32³ to 512³, Adds from 16 floats to 4 Mi, element-wise kernels heavy
// in FLOPs when withElementwise (so that Elementwise is decided), and copies
// each way from 4 KiB to 64 MiB. Each is repeated to at least 100 µs so
// that a nanosecond's rounding stays below 1e-5.
func syntheticSamples(truth Profile, withElementwise bool) []Sample {
	var samples []Sample
	add := func(name string, k Kernel, reps int64) {
		k.Launches, k.FLOPs, k.Bytes = reps*k.Launches, reps*k.FLOPs, reps*k.Bytes
		samples = append(samples, Sample{Name: fmt.Sprintf("%s ×%d", name, reps), Kernels: []Kernel{k}})
	}
	for _, n := range []int64{32, 64, 128, 256, 512} {
		add(fmt.Sprintf("Gemm %d³", n), Kernel{Name: "Gemm", Launches: 1, FLOPs: 2 * n * n * n, Bytes: 12 * n * n}, max(1, 1<<24/(n*n*n)))
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
// model: Fit must find truth's factors and fixed costs, and the model's
// median error on the samples must fall from far off to nothing.
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
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"Dense", e.Dense, want.Dense}, {"Elementwise", e.Elementwise, want.Elementwise},
		{"Bandwidth", e.Bandwidth, want.Bandwidth}, {"Copy", e.Copy, want.Copy},
		{"CopyOverhead", e.CopyOverhead.Seconds(), want.CopyOverhead.Seconds()},
		{"KernelOverhead", p.KernelOverhead.Seconds(), fitTruth.KernelOverhead.Seconds()},
		{"FP32", p.FP32, fitTruth.FP32}, {"MemBandwidth", p.MemBandwidth, fitTruth.MemBandwidth},
	} {
		if !relClose(f.got, f.want) {
			t.Errorf("fitted %s = %g, want %g", f.name, f.got, f.want)
		}
	}
	if len(got.Kept) != 0 {
		t.Errorf("kept %v, want every factor decided", got.Kept)
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
// compute, Elementwise keeps the starting profile's value and is named.
func TestFitKeepsWhatNoSampleDecides(t *testing.T) {
	got, err := Fit(fitTruth, syntheticSamples(fitTruth, false))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Kept, []string{FactorElementwise}) || got.Profile.Efficiency().Elementwise != 0.3 {
		t.Errorf("kept %v, Elementwise %g; want only Elementwise kept at 0.3", got.Kept, got.Profile.Efficiency().Elementwise)
	}
}

// TestFitRaisesALowPeak: a profile whose FP32 and bandwidth are half what
// the device reaches fits fractions above 1; Fit raises the peaks to the
// rates reached, with fractions of 1, and the model still matches.
func TestFitRaisesALowPeak(t *testing.T) {
	fast := fitTruth
	fast.Fitted = &Efficiency{Dense: 1, Elementwise: 0.5, Bandwidth: 1, Copy: 1}
	start := fitTruth
	start.FP32, start.MemBandwidth, start.Fitted = fitTruth.FP32/2, fitTruth.MemBandwidth/2, nil
	samples := syntheticSamples(fast, true)
	got, err := Fit(start, samples)
	if err != nil {
		t.Fatal(err)
	}
	p := got.Profile
	if e := p.Efficiency(); e.Dense != 1 || e.Bandwidth != 1 || !relClose(p.FP32, fitTruth.FP32) || !relClose(p.MemBandwidth, fitTruth.MemBandwidth) {
		t.Errorf("fitted FP32 %g at %g, bandwidth %g at %g; want the peaks raised to %g and %g at fractions of 1",
			p.FP32, e.Dense, p.MemBandwidth, e.Bandwidth, fitTruth.FP32, fitTruth.MemBandwidth)
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
