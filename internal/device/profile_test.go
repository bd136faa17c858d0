package device

import (
	"testing"
	"time"

	"gpuz/internal/perfmodel"
)

// TestHostBoundBelowMeasured checks the roofline bound against a real run:
// with the host as the profile (its measured SGEMM and memcpy rates), the
// bound of a few host SGEMMs is no more than their measured time. A rate
// measured once can be beaten by a later run by chance, so each rate is
// the larger of Measure's and the fastest timed run's; the bound of k runs
// is then at most k times the fastest, whatever the load on the machine,
// and the test checks Predict and its wiring rather than the clock.
func TestHostBoundBelowMeasured(t *testing.T) {
	const n, runs = 192, 4
	dev := NewHost()
	info, err := Measure(dev, n)
	if err != nil {
		t.Fatal(err)
	}
	var bufs [3]Buffer
	for i := range bufs {
		if bufs[i], err = dev.Alloc(n * n); err != nil {
			t.Fatal(err)
		}
		defer dev.Free(bufs[i])
	}
	var measured, fastest time.Duration
	for i := range runs {
		start := time.Now()
		dev.Kernels().Gemm(false, false, n, n, n, bufs[0], bufs[1], bufs[2])
		d := max(time.Since(start), time.Nanosecond)
		measured += d
		if i == 0 || d < fastest {
			fastest = d
		}
	}
	gemm := perfmodel.Kernel{Name: "Gemm", Launches: 1, FLOPs: 2 * n * n * n, Bytes: 3 * 4 * n * n}
	flops := max(info.GemmFLOPS, float64(gemm.FLOPs)/fastest.Seconds())
	bandwidth := max(info.UploadPageable, float64(gemm.Bytes)/fastest.Seconds())
	kernels := make([]perfmodel.Kernel, runs)
	for i := range kernels {
		kernels[i] = gemm
	}
	p := perfmodel.Predict(kernels, perfmodel.Copies{}, perfmodel.HostProfile(flops, bandwidth), perfmodel.DefaultEfficiency)
	if p.Bound > measured || p.Bound <= 0 || p.Model < p.Bound {
		t.Errorf("%d SGEMMs of %d³ took %v; bound %v, model %v (host %.3g FLOP/s, %.3g B/s)",
			runs, n, measured, p.Bound, p.Model, flops, bandwidth)
	}
	t.Logf("%d SGEMMs of %d³: measured %v, bound %v, model %v, limiter %s", runs, n, measured, p.Bound, p.Model, p.Limiter)
}
