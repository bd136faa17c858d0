package hostmath

import (
	"math/rand/v2"
	"testing"
)

// GPT-2 small's sizes at a batch of one 1024-token sequence: d = 768, the
// MLP's hidden width 3072, a vocabulary of 50257 and 1024 positions.
const (
	gpt2Tokens = 1024
	gpt2Dim    = 768
	gpt2Hidden = 4 * gpt2Dim
	gpt2Vocab  = 50257
)

// BenchmarkGELUTanh times the activation and its gradient over the MLP's
// hidden layer (1024 × 3072) and reports a memory rate counting the
// elements read and written (8 bytes per element forward, 12 backward).
func BenchmarkGELUTanh(b *testing.B) {
	const n = gpt2Tokens * gpt2Hidden
	rng := rand.New(rand.NewPCG(1, 1))
	x, g := toFloat32(randomSlice(rng, n)), toFloat32(randomSlice(rng, n))
	y := make([]float32, n)
	for _, bc := range []struct {
		name  string
		bytes float64
		run   func()
	}{
		{"forward", 8 * n, func() { GELUTanh(y, x) }},
		{"grad", 12 * n, func() { GELUTanhGrad(y, x, g) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				bc.run()
			}
			b.ReportMetric(bc.bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkTokenEmbedding times the lookup of 1024 tokens in GPT-2's
// table (50257 × 768) and reports a memory rate counting the rows read and
// written (8 bytes per output element).
func BenchmarkTokenEmbedding(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	weight := toFloat32(randomSlice(rng, gpt2Vocab*gpt2Dim))
	ids := make([]float32, gpt2Tokens)
	for i := range ids {
		ids[i] = float32(rng.IntN(gpt2Vocab))
	}
	y := make([]float32, gpt2Tokens*gpt2Dim)
	for b.Loop() {
		if err := TokenEmbedding(y, ids, weight); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(8*float64(len(y))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

// BenchmarkPositions times AddPositions and PositionsGrad over 4 sequences
// of 256 tokens with GPT-2's table (1024 × 768) and reports a memory rate
// counting each element of x (or g) read and of the result written once.
func BenchmarkPositions(b *testing.B) {
	p := Positions{SeqLen: 256, Dim: gpt2Dim}
	rng := rand.New(rand.NewPCG(1, 1))
	x, pos := toFloat32(randomSlice(rng, gpt2Tokens*gpt2Dim)), toFloat32(randomSlice(rng, 1024*gpt2Dim))
	y, dpos := make([]float32, len(x)), make([]float32, len(pos))
	for _, bc := range []struct {
		name  string
		bytes float64
		run   func()
	}{
		{"add", 8 * float64(len(x)), func() { AddPositions(y, x, pos, p) }},
		{"grad", 4 * float64(len(x)+len(dpos)), func() { PositionsGrad(dpos, x, p) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				bc.run()
			}
			b.ReportMetric(bc.bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
