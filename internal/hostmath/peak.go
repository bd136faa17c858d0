package hostmath

import "sync"

// The machine's peaks against which the kernels' benchmarks are read
// (scripts/machine-peaks.sh runs them; docs/benchmarks.md): the FP32 FMA
// peak, an AVX-512 FMA loop on every kernel thread, and the memory
// bandwidth, the STREAM triad on every kernel thread.

// fmaPeak runs steps steps of the FMA loop on each of Threads() threads at
// once and returns the FLOPs done, or 0 on a CPU without AVX-512.
func fmaPeak(steps int) float64 {
	workers := Threads()
	var wg sync.WaitGroup
	ok := make([]bool, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok[w] = fmaPeakLoop(steps)
		}()
	}
	wg.Wait()
	if !ok[0] {
		return 0
	}
	return float64(workers) * float64(steps) * 2 * 16 * 16
}

// triadParallel runs the triad a = b + s·c split over the kernel threads
// and returns the bytes it moves by STREAM's count: 12 a element, b and c
// read and a written.
func triadParallel(a, b, c []float32, s float32) float64 {
	parallelFor(len(a), 16, func(lo, hi int) { triad(a[lo:hi], b[lo:hi], c[lo:hi], s) })
	return 12 * float64(len(a))
}
