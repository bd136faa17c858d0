package hostmath

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkGemm times the three products of one Linear(2000→2000) layer at
// batch 30, the reference linear workload, and reports GFLOP/s.
func BenchmarkGemm(b *testing.B) {
	const batch, dim = 30, 2000
	rng := rand.New(rand.NewPCG(1, 1))
	x := toFloat32(randomSlice(rng, batch*dim))
	w := toFloat32(randomSlice(rng, dim*dim))
	y := make([]float32, batch*dim)
	dw := make([]float32, dim*dim)
	for _, bc := range []struct {
		name string
		run  func()
	}{
		{"forward", func() { Gemm(false, true, batch, dim, dim, 1, x, w, 0, y) }},
		{"input-grad", func() { Gemm(false, false, batch, dim, dim, 1, y, w, 0, x) }},
		{"weight-grad", func() { Gemm(true, false, dim, dim, batch, 1, y, x, 0, dw) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				bc.run()
			}
			b.ReportMetric(2*batch*dim*dim*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkAdamStep times a clipped Adam update of one linear block's
// weights (10 × 2000²) and reports the memory rate it reaches.
func BenchmarkAdamStep(b *testing.B) {
	const n = 10 * 2000 * 2000
	rng := rand.New(rand.NewPCG(1, 1))
	p, g := toFloat32(randomSlice(rng, n)), toFloat32(randomSlice(rng, n))
	m, v := make([]float32, n), make([]float32, n)
	for i := range m { // fault the moments' pages in before timing
		m[i], v[i] = 1e-3, 1e-6
	}
	step := 0
	cpu := startCPU()
	for b.Loop() {
		step++
		AdamStep(DefaultAdam(), p, g, m, v, 0.5, step)
	}
	// Reads p, g, m, v and writes p, m, v: 7 × 4 bytes per element.
	b.ReportMetric(28*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
	b.ReportMetric(28*n*float64(b.N)/cpu.seconds()/1e9, "GB/cpu-s")
}

// BenchmarkLeakyReLU times the activation over a 30 × 2000 batch.
func BenchmarkLeakyReLU(b *testing.B) {
	x := toFloat32(randomSlice(rand.New(rand.NewPCG(1, 1)), 30*2000))
	y := make([]float32, len(x))
	for b.Loop() {
		LeakyReLU(y, x, 0.01)
	}
}

// BenchmarkSumSquares times the gradient norm of one linear block's weights
// and reports the memory rate it reaches.
func BenchmarkSumSquares(b *testing.B) {
	const n = 10 * 2000 * 2000
	g := toFloat32(randomSlice(rand.New(rand.NewPCG(1, 1)), n))
	cpu := startCPU()
	for b.Loop() {
		SumSquares(g)
	}
	b.ReportMetric(4*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
	b.ReportMetric(4*n*float64(b.N)/cpu.seconds()/1e9, "GB/cpu-s")
}

// BenchmarkLayerNorm times the LayerNorm kernels over one full-scale
// attention batch (2 × 512 tokens of 512) and reports a memory rate
// counting 8 bytes per element of x: the element read and one written.
func BenchmarkLayerNorm(b *testing.B) {
	const rows, cols, eps = 2 * 512, 512, 1e-5
	rng := rand.New(rand.NewPCG(1, 1))
	x, g := toFloat32(randomSlice(rng, rows*cols)), toFloat32(randomSlice(rng, rows*cols))
	gamma, beta := toFloat32(randomSlice(rng, cols)), toFloat32(randomSlice(rng, cols))
	y, dgamma := make([]float32, rows*cols), make([]float32, cols)
	for _, bc := range []struct {
		name string
		run  func()
	}{
		{"forward", func() { LayerNorm(y, x, gamma, beta, eps) }},
		{"input-grad", func() { LayerNormInputGrad(y, x, gamma, g, eps) }},
		{"weight-grad", func() { LayerNormWeightGrad(dgamma, x, g, eps) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				bc.run()
			}
			b.ReportMetric(8*rows*cols*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
