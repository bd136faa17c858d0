package hostmath

import "testing"

// TestTriad checks the triad's arithmetic, which the bandwidth benchmark
// times.
func TestTriad(t *testing.T) {
	b, c := make([]float32, 1<<16+3), make([]float32, 1<<16+3)
	for i := range b {
		b[i], c[i] = float32(i), float32(2*i)
	}
	a := make([]float32, len(b))
	if got, want := triadParallel(a, b, c, 0.5), 12*float64(len(a)); got != want {
		t.Errorf("triad moved %g bytes, want %g", got, want)
	}
	for i, v := range a {
		if want := float32(2 * i); v != want {
			t.Fatalf("a[%d] = %g, want %g", i, v, want)
		}
	}
}

// BenchmarkFMAPeak measures the FP32 FMA peak of the kernel threads: an
// AVX-512 FMA loop, 16 independent chains on each thread (-cpu sets none:
// the threads are the kernels', SetThreads). Skipped without AVX-512.
func BenchmarkFMAPeak(b *testing.B) {
	const steps = 1 << 22
	var flops float64
	cpu := startCPU()
	for b.Loop() {
		if flops += fmaPeak(steps); flops == 0 {
			b.Skip("no AVX-512 on this CPU")
		}
	}
	b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	b.ReportMetric(flops/cpu.seconds()/1e9, "GFLOP/cpu-s")
}

// BenchmarkTriad measures the memory bandwidth of the kernel threads: the
// STREAM triad over three arrays of 64 MiB, far larger than any cache,
// counted as STREAM counts it (12 bytes an element).
func BenchmarkTriad(b *testing.B) {
	const n = 16 << 20
	a, x, y := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = 1, 2
	}
	triadParallel(a, x, y, 3) // touch a's pages before timing
	var bytes float64
	cpu := startCPU()
	for b.Loop() {
		bytes += triadParallel(a, x, y, 3)
	}
	b.ReportMetric(bytes/b.Elapsed().Seconds()/1e9, "GB/s")
	b.ReportMetric(bytes/cpu.seconds()/1e9, "GB/cpu-s")
}
