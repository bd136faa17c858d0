package perfmodel

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// testProfile has round figures: 1 TFLOP/s, 100 GB/s, copies at 10 GB/s
// pinned and 5 GB/s pageable, 10 µs a kernel, and no PCIe link (so the
// bound's link rate is the pinned rate).
var testProfile = Profile{
	Name: "test", FP32: 1e12, MemBandwidth: 1e11, MemoryBytes: 1 << 30,
	PinnedH2D: 1e10, PinnedD2H: 1e10, PageableH2D: 5e9, PageableD2H: 5e9,
	KernelOverhead: 10 * time.Microsecond,
}

// testEfficiency has round fractions and a round copy overhead.
var testEfficiency = Efficiency{
	Dense: 0.5, Elementwise: 0.25, Bandwidth: 0.5,
	Copy: 0.5, CopyOverhead: 100 * time.Microsecond,
	DenseKernels: []string{"gemm"},
}

// secs converts seconds to a Duration.
func secs(s float64) time.Duration { return duration(s) }

func TestPredict(t *testing.T) {
	gemm := Kernel{Name: "Gemm", Launches: 1, FLOPs: 1e12}
	for _, tt := range []struct {
		name    string
		kernels []Kernel
		copies  Copies
		p       Profile
		e       Efficiency
		want    Prediction
	}{
		{
			name: "nothing", p: testProfile, e: testEfficiency,
			want: Prediction{},
		},
		{
			// bound max(2 s, 0.01 s); model 2e12/(1e12×0.5) + 10 µs.
			name: "GEMM only", p: testProfile, e: testEfficiency,
			kernels: []Kernel{{Name: "Gemm", Launches: 1, FLOPs: 2e12, Bytes: 1e9}},
			want: Prediction{Bound: secs(2), Model: secs(4.00001), Compute: secs(4), Memory: secs(0.02),
				Launch: secs(10e-6), Limiter: LimitCompute},
		},
		{
			// 16-bit products at Tensor16 = 4 TFLOP/s: bound max(0.5 s,
			// 0.01 s); model 2e12/(4e12×0.5) + 10 µs.
			name: "16-bit GEMM", p: func() Profile { p := testProfile; p.Tensor16 = 4e12; return p }(), e: testEfficiency,
			kernels: []Kernel{{Name: "Gemm", Launches: 1, FLOPs: 2e12, Bytes: 1e9, Half: true}},
			want: Prediction{Bound: secs(0.5), Model: secs(1.00001), Compute: secs(1), Memory: secs(0.02),
				Launch: secs(10e-6), Limiter: LimitCompute},
		},
		{
			// A profile without a 16-bit unit runs them at FP32.
			name: "16-bit GEMM at FP32", p: testProfile, e: testEfficiency,
			kernels: []Kernel{{Name: "Gemm", Launches: 1, FLOPs: 2e12, Bytes: 1e9, Half: true}},
			want: Prediction{Bound: secs(2), Model: secs(4.00001), Compute: secs(4), Memory: secs(0.02),
				Launch: secs(10e-6), Limiter: LimitCompute},
		},
		{
			// bound max(1 ms, 0.12 s); model: compute 1e9/0.25e12 = 4 ms,
			// memory 1.2e10/0.5e11 = 0.24 s, launches 100 × 10 µs = 1 ms.
			name: "memory-bound element-wise", p: testProfile, e: testEfficiency,
			kernels: []Kernel{{Name: "Add", Launches: 100, FLOPs: 1e9, Bytes: 1.2e10}},
			want: Prediction{Bound: secs(0.12), Model: secs(0.241), Compute: secs(0.004), Memory: secs(0.24),
				Launch: secs(0.001), Limiter: LimitMemory},
		},
		{
			// kernels: bound 1 s, model 2 s + 10 µs; the copy: bound
			// 1e10/1e10 = 1 s, model 1e10/(1e10×0.5) + 100 µs, all waited for.
			name: "synchronous copy", p: testProfile, e: testEfficiency, kernels: []Kernel{gemm},
			copies: Copies{H2DBytes: 1e10, SyncBytes: 1e10, Count: 1},
			want: Prediction{Bound: secs(2), Model: secs(4.00011), Compute: secs(2), Launch: secs(10e-6),
				Copy: secs(2.0001), Limiter: LimitCopy},
		},
		{
			// the same copy overlapped: max(1 s, 1 s); max(2.00001 s, 2.0001 s).
			name: "overlapped copy", p: testProfile, e: testEfficiency, kernels: []Kernel{gemm},
			copies: Copies{H2DBytes: 1e10, Count: 1},
			want: Prediction{Bound: secs(1), Model: secs(2.0001), Compute: secs(2), Launch: secs(10e-6),
				Copy: secs(2.0001), Limiter: LimitCompute},
		},
		{
			// pageable, half waited for: bound at 10 GB/s each way, 1 s,
			// half serialized: 0.5 + max(0, 0.5); model at 5 GB/s × 0.5:
			// 4 s + 2 × 100 µs, half serialized.
			name: "pageable copies half synchronous", p: testProfile, e: testEfficiency,
			copies: Copies{H2DBytes: 5e9, D2HBytes: 5e9, SyncBytes: 5e9, Pageable: true, Count: 2},
			want:   Prediction{Bound: secs(1), Model: secs(4.0002), Copy: secs(4.0002), Limiter: LimitCopy},
		},
		{
			// a PCIe 4.0 x16 link (31.5 GB/s) bounds the copy below the
			// profile's pinned rate.
			name: "bound at the link rate", e: testEfficiency,
			p:      Profile{FP32: 1e12, MemBandwidth: 1e11, PCIeGen: 4, PCIeLanes: 16, PinnedH2D: 2e10, PinnedD2H: 2e10},
			copies: Copies{H2DBytes: 31_507_692_308, SyncBytes: 31_507_692_308},
			want:   Prediction{Bound: secs(1), Model: secs(3.1507692308), Copy: secs(3.1507692308), Limiter: LimitCopy},
		},
		{
			// 2000³ SGEMM on the reference laptop (Profiles' first) at the
			// default efficiency: 16 GFLOP at 11 TFLOP/s, and at 0.7 of it
			// plus 5 µs.
			name: "reference laptop SGEMM", p: Profiles()[0], e: DefaultEfficiency,
			kernels: []Kernel{{Name: "Gemm", Launches: 1, FLOPs: 16e9, Bytes: 48e6}},
			want: Prediction{Bound: secs(16e9 / 11e12), Model: secs(16e9/7.7e12 + 5e-6), Compute: secs(16e9 / 7.7e12),
				Memory: secs(48e6 / (256e9 * 0.8)), Launch: secs(5e-6), Limiter: LimitCompute},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Predict(tt.kernels, tt.copies, tt.p, tt.e)
			if !near(got, tt.want) {
				t.Errorf("Predict =\n%+v\nwant\n%+v", got, tt.want)
			}
			if got.Bound > got.Model {
				t.Errorf("bound %v exceeds the model time %v", got.Bound, got.Model)
			}
		})
	}
}

// near says two predictions agree within 1 µs in every time and exactly in
// the limiter.
func near(a, b Prediction) bool {
	close := func(x, y time.Duration) bool { return (x - y).Abs() <= time.Microsecond }
	return close(a.Bound, b.Bound) && close(a.Model, b.Model) && close(a.Compute, b.Compute) &&
		close(a.Memory, b.Memory) && close(a.Launch, b.Launch) && close(a.Copy, b.Copy) && a.Limiter == b.Limiter
}

// TestBoundNeverExceedsModel predicts random runs on every built-in profile
// at the default and the test efficiencies.
func TestBoundNeverExceedsModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	names := []string{"Gemm", "Conv2d", "Add", "AdamStep"}
	for i := range 2000 {
		var kernels []Kernel
		for range r.IntN(5) {
			kernels = append(kernels, Kernel{Name: names[r.IntN(len(names))], Launches: r.Int64N(1000),
				FLOPs: r.Int64N(1e13), Bytes: r.Int64N(1e11)})
		}
		up, down := r.Int64N(1e10), r.Int64N(1e10)
		copies := Copies{H2DBytes: up, D2HBytes: down, SyncBytes: r.Int64N(up + down + 1), Pageable: r.IntN(2) == 0, Count: r.Int64N(100)}
		profiles := append(Profiles(), testProfile, HostProfile(1e11, 1e10))
		p := profiles[i%len(profiles)]
		for _, e := range []Efficiency{DefaultEfficiency, testEfficiency, {}} {
			if got := Predict(kernels, copies, p, e); got.Bound > got.Model || got.Bound < 0 {
				t.Fatalf("Predict(%+v, %+v, %s, %+v) = %+v: bound above the model time", kernels, copies, p.Name, e, got)
			}
		}
	}
}

func TestFlag(t *testing.T) {
	for _, tt := range []struct {
		measured, model time.Duration
		ratio           float64
		first           string // the first reason's start; "" for none
	}{
		{time.Second, 0, 0, ""},
		{0, time.Second, 0, ""},
		{time.Second, time.Second, 1, ""},
		{3 * time.Second, time.Second, 3, ""}, // exactly FlagRatio: not flagged
		{3*time.Second + time.Nanosecond, time.Second, 3.000000001, "copies meant to overlap"},
		{4 * time.Second, time.Second, 4, "copies meant to overlap"},
		{10*time.Second - time.Nanosecond, time.Second, 9.999999999, "copies meant to overlap"},
		{10 * time.Second, time.Second, 10, "device memory spilled"}, // exactly ten times: spill first
		{20 * time.Second, time.Second, 20, "device memory spilled"},
		{3 * time.Millisecond, time.Millisecond, 3, ""}, // the ratio, not the difference
		{30 * time.Millisecond, time.Millisecond, 30, "device memory spilled"},
	} {
		ratio, reasons := Flag(tt.measured, tt.model)
		if ratio != tt.ratio || (tt.first == "") != (reasons == nil) {
			t.Errorf("Flag(%v, %v) = %g, %q; want %g and reasons: %v", tt.measured, tt.model, ratio, reasons, tt.ratio, tt.first != "")
			continue
		}
		if tt.first != "" && (len(reasons) != 3 || !strings.HasPrefix(reasons[0], tt.first)) {
			t.Errorf("Flag(%v, %v) reasons %q; want three, the first starting %q", tt.measured, tt.model, reasons, tt.first)
		}
	}
}

// TestPredictManaged: migrations are waited for at the pinned rates with
// FaultCost per started 2 MiB batch; accesses in place at the pinned
// host-to-device rate. 4 MiB up and 2 MiB down: 3 batches.
func TestPredictManaged(t *testing.T) {
	p := Profile{Name: "p", FP32: 1e12, MemBandwidth: 1e11, PinnedH2D: 1e10, PinnedD2H: 1e10, PageableH2D: 5e9, PageableD2H: 5e9}
	e := Efficiency{Dense: 1, Elementwise: 1, Bandwidth: 1, Copy: 1}
	got := Predict(nil, Copies{H2DBytes: 4 << 20, D2HBytes: 2 << 20, Count: 3, Migrated: true, RemoteBytes: 1e9}, p, e)
	want := float64(6<<20)/1e10 + 3*FaultCost.Seconds() + 1e9/1e10
	if d := got.Model.Seconds() - want; d > 1e-9 || d < -1e-9 {
		t.Errorf("model %v, want %.6f s", got.Model, want)
	}
	if got.Bound > got.Model {
		t.Errorf("bound %v above the model %v", got.Bound, got.Model)
	}
}
