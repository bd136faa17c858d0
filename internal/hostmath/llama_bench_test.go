package hostmath

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkRMSNorm times the RMSNorm kernels over a batch of 2 × 512
// tokens of SmolLM2-360M's width (960) and reports a memory rate counting
// 8 bytes per element of x: the element read and one written.
func BenchmarkRMSNorm(b *testing.B) {
	const rows, cols, eps = 2 * 512, 960, 1e-5
	rng := rand.New(rand.NewPCG(1, 1))
	x, g := toFloat32(randomSlice(rng, rows*cols)), toFloat32(randomSlice(rng, rows*cols))
	w := toFloat32(randomSlice(rng, cols))
	y, dw := make([]float32, rows*cols), make([]float32, cols)
	for _, bc := range []struct {
		name string
		run  func()
	}{
		{"forward", func() { RMSNorm(y, x, w, eps) }},
		{"input-grad", func() { RMSNormInputGrad(y, x, w, g, eps) }},
		{"weight-grad", func() { RMSNormWeightGrad(dw, x, g, eps) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				bc.run()
			}
			b.ReportMetric(8*rows*cols*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkRotary times the rotary embedding and its gradient over 2 × 512
// tokens of packed queries, keys and values of SmolLM2-360M's attention
// (15 query heads and 5 key-value heads of 64: 25 heads, 20 rotated) and
// reports a memory rate counting 8 bytes per element.
func BenchmarkRotary(b *testing.B) {
	const seq, headDim = 512, 64
	s := RotaryShape{Heads: 20, HeadDim: headDim, SeqLen: seq, Width: 25 * headDim}
	rng := rand.New(rand.NewPCG(1, 1))
	x := toFloat32(randomSlice(rng, 2*seq*s.Width))
	cos, sin := toFloat32(randomSlice(rng, seq*headDim/2)), toFloat32(randomSlice(rng, seq*headDim/2))
	y := make([]float32, len(x))
	for _, bc := range []struct {
		name string
		run  func()
	}{
		{"forward", func() { Rotary(y, x, cos, sin, s) }},
		{"grad", func() { RotaryGrad(y, x, cos, sin, s) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				bc.run()
			}
			b.ReportMetric(8*float64(len(x))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkSwiGLU times the activation and its gradient over 2 × 512
// tokens of SmolLM2-360M's intermediate size (2560) and reports a memory
// rate: 12 bytes per output element forward (gate and up read, one
// written), 20 for the gradient (gate, up and g read, two written).
func BenchmarkSwiGLU(b *testing.B) {
	const rows, n = 2 * 512, 2560
	rng := rand.New(rand.NewPCG(1, 1))
	x, g := toFloat32(randomSlice(rng, rows*2*n)), toFloat32(randomSlice(rng, rows*n))
	y, dx := make([]float32, rows*n), make([]float32, rows*2*n)
	for _, bc := range []struct {
		name  string
		bytes float64
		run   func()
	}{
		{"forward", 12, func() { SwiGLU(y, x, n) }},
		{"grad", 20, func() { SwiGLUGrad(dx, x, g, n) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				bc.run()
			}
			b.ReportMetric(bc.bytes*rows*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
