package device

import (
	"testing"
	"time"

	"gpuz/internal/perfmodel"
)

// hostGemm is one n×n×n SGEMM as the roofline counts it: 2n³ FLOPs, and
// its three n×n float32 matrices read or written once.
func hostGemm(n int64) perfmodel.Kernel {
	return perfmodel.Kernel{Name: "Gemm", Launches: 1, FLOPs: 2 * n * n * n, Bytes: 3 * 4 * n * n}
}

// TestHostBoundArithmetic checks the roofline bound of host SGEMMs on the
// host's profile with fixed rates, the figures computed by hand: four
// 192³ SGEMMs are 4 × 14,155,776 FLOPs and 4 × 442,368 bytes, and each
// takes the longer of its compute and its memory time, the memory's rate
// being twice the memcpy rate (each byte read and written). Unlike the
// measured comparison (BenchmarkHostBoundAgainstMeasured) it does not
// depend on the machine's load.
func TestHostBoundArithmetic(t *testing.T) {
	const runs = 4
	for _, tt := range []struct {
		name          string
		flops, memcpy float64
		bound         time.Duration
	}{
		// 14,155,776 / 1e11 = 141.55776 µs a run, over 442,368 / 1e10.
		{"compute-bound", 1e11, 5e9, 4 * 141_558 * time.Nanosecond},
		// 442,368 / (2 × 1e9) = 221.184 µs a run, over 14,155,776 / 1e12.
		{"memory-bound", 1e12, 1e9, 4 * 221_184 * time.Nanosecond},
		// Equal: 14,155,776 / 64e9 = 442,368 / (2 × 1e9) = 221.184 µs.
		{"balanced", 64e9, 1e9, 4 * 221_184 * time.Nanosecond},
	} {
		kernels := make([]perfmodel.Kernel, runs)
		for i := range kernels {
			kernels[i] = hostGemm(192)
		}
		p := perfmodel.Predict(kernels, perfmodel.Copies{}, perfmodel.HostProfile(tt.flops, tt.memcpy), perfmodel.DefaultEfficiency)
		if d := p.Bound - tt.bound; d < -runs || d > runs || p.Model < p.Bound {
			t.Errorf("%s: %d SGEMMs of 192³ at %.3g FLOP/s, memcpy %.3g B/s: bound %v, model %v; want bound %v (± %d ns), model ≥ bound",
				tt.name, runs, tt.flops, tt.memcpy, p.Bound, p.Model, tt.bound, runs)
		}
	}
}

// BenchmarkHostBoundAgainstMeasured sets the roofline bound beside real
// host SGEMMs: with the host as the profile (its SGEMM and memcpy rates as
// Measure times them), the bound of one 192³ SGEMM should be no more than
// its measured time. It reports the ratio (measured/bound, at least 1 when
// the bound holds) rather than asserting it: a busy machine slows the
// products, not the bound, and tests never assert on wall-clock time.
func BenchmarkHostBoundAgainstMeasured(b *testing.B) {
	const n = 192
	dev := NewHost()
	info, err := Measure(dev, n)
	if err != nil {
		b.Fatal(err)
	}
	var bufs [3]Buffer
	for i := range bufs {
		if bufs[i], err = dev.Alloc(n * n); err != nil {
			b.Fatal(err)
		}
		defer dev.Free(bufs[i])
	}
	p := perfmodel.Predict([]perfmodel.Kernel{hostGemm(n)}, perfmodel.Copies{},
		perfmodel.HostProfile(info.GemmFLOPS, info.UploadPageable), perfmodel.DefaultEfficiency)
	var measured time.Duration
	for b.Loop() {
		start := time.Now()
		dev.Kernels().Gemm(false, false, n, n, n, bufs[0], bufs[1], bufs[2])
		measured += time.Since(start)
	}
	b.ReportMetric(float64(measured)/float64(b.N)/float64(p.Bound), "measured/bound")
}
