package hostmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkFewRows times y = x·Wᵀ for a few rows of x against one
// 2000 × 2000 weight (16 MB: out of cache, as each of the linear model's
// 120 layers is), by the few-row kernel and by the BLAS, and reports
// GFLOP/s and the rate at which W is read. The sub-benchmarks are named
// m=M/impl=kernel|blas, so that `benchstat -col /impl` sets them side by
// side.
func BenchmarkFewRows(b *testing.B) {
	const dim, layers = 2000, 8 // 8 weights: 128 MB, beyond the caches
	rng := rand.New(rand.NewPCG(1, 1))
	w := make([][]float32, layers)
	for i := range w {
		w[i] = toFloat32(randomSlice(rng, dim*dim))
	}
	for _, m := range []int{1, 8, 16, 30, 32} {
		x := toFloat32(randomSlice(rng, m*dim))
		y := make([]float32, m*dim)
		for _, impl := range []struct {
			name string
			run  func(w []float32)
		}{
			{"kernel", func(w []float32) { fewRowsNT(m, dim, dim, x, w, y) }},
			{"blas", func(w []float32) { gemmStrided(false, true, m, dim, dim, 1, x, dim, w, dim, 0, y, dim) }},
		} {
			if impl.name == "kernel" && !useFewRows(m, dim, dim) {
				continue
			}
			b.Run(fmt.Sprintf("m=%d/impl=%s", m, impl.name), func(b *testing.B) {
				i := 0
				for b.Loop() {
					impl.run(w[i%layers])
					i++
				}
				s := b.Elapsed().Seconds()
				b.ReportMetric(2*float64(m)*dim*dim*float64(b.N)/s/1e9, "GFLOP/s")
				b.ReportMetric(4*dim*dim*float64(b.N)/s/1e9, "GB/s")
			})
		}
	}
}

// TestFewRows checks the few-row kernel against a float64 product and
// against the BLAS product it replaces, over row counts on both sides of
// 16 (one vector or two) and column counts around its blocks of 14 and its
// tiles of 56. Both float32 products are within the worst-case bound of a
// k-term float32 sum, γ_k·Σ|x||w| with γ_k ≈ k·2⁻²⁴, of the exact value; they
// sum in different orders (the kernel over k in order per output, the BLAS
// in its own blocks), so they agree with each other only to twice that
// bound.
func TestFewRows(t *testing.T) {
	if !fewRowKernel {
		t.Skip("no few-row kernel on this CPU or build")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ m, n, k int }{
		{1, 1, 1}, {1, 14, 5}, {5, 13, 7}, {16, 15, 33}, {17, 57, 64}, {30, 200, 300}, {32, 113, 129},
		{30, 2000, 200}, // many tiles: several workers
	} {
		t.Run(fmt.Sprintf("%dx%dx%d", tc.m, tc.n, tc.k), func(t *testing.T) {
			m, n, k := tc.m, tc.n, tc.k
			x, w := toFloat32(randomSlice(rng, m*k)), toFloat32(randomSlice(rng, n*k))
			got := make([]float32, m*n)
			for i := range got {
				got[i] = float32(i) // the kernel must overwrite every element
			}
			fewRowsNT(m, n, k, x, w, got)
			blas := make([]float32, m*n)
			gemmStrided(false, true, m, n, k, 1, x, k, w, k, 0, blas, n)
			gammaK := float64(k) * 0x1p-24 / (1 - float64(k)*0x1p-24)
			for i := range m {
				for j := range n {
					exact, mag := 0.0, 0.0
					for p := range k {
						xw := float64(x[i*k+p]) * float64(w[j*k+p])
						exact += xw
						mag += math.Abs(xw)
					}
					bound := gammaK * mag
					if d := math.Abs(float64(got[i*n+j]) - exact); d > bound {
						t.Fatalf("y[%d][%d] = %g, exact %g: off by %g, bound %g", i, j, got[i*n+j], exact, d, bound)
					}
					if d := math.Abs(float64(got[i*n+j] - blas[i*n+j])); d > 2*bound {
						t.Fatalf("y[%d][%d] = %g, the BLAS's %g: off by %g, bound %g", i, j, got[i*n+j], blas[i*n+j], d, 2*bound)
					}
				}
			}
		})
	}
}
