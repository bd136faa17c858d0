package selftest

import (
	"math/rand/v2"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
)

// gelu returns n inputs for GELU: normal values, their tails scaled to
// ±40 (where tanh saturates), zeros and values large enough that x³
// overflows float32.
func gelu(r *rand.Rand, n int) []float32 {
	x := randn(r, n)
	for i := range x {
		switch i % 50 {
		case 0:
			x[i] = 0
		case 1:
			x[i] *= 15
		case 2:
			x[i] = 3e13
		case 3:
			x[i] = -3e13
		}
	}
	return x
}

// gpt2Cases are the cases of GPT-2's kernels and the token embedding:
// sequences of 5 positions in a table of 7 rows (the last 2 unused, so
// PositionsGrad must zero them), 3 sequences, rows of 6; ids with repeats
// and out of range.
func gpt2Cases() []Case {
	pos := hostmath.Positions{SeqLen: 5, Dim: 6}
	const rows, batch = 7, 3
	tokens := batch * pos.SeqLen
	return []Case{
		{Name: "GELUTanh", Bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(1000), gelu(r, 1000)) },
			Call: noValue(func(k device.Kernels, b []device.Buffer) { k.GELUTanh(b[0], b[1]) })},
		{Name: "GELUTanhGrad", Bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(1000), gelu(r, 1000), randn(r, 1000)) },
			Call: noValue(func(k device.Kernels, b []device.Buffer) { k.GELUTanhGrad(b[0], b[1], b[2]) })},
		{Name: "TokenEmbedding", Bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(20*6), ints(r, 20, 11), randn(r, 11*6))
		}, Call: errOnly(func(k device.Kernels, b []device.Buffer) error { return k.TokenEmbedding(b[0], b[1], b[2]) })},
		{Name: "TokenEmbedding/bad-id", Bufs: func(r *rand.Rand) [][]float32 {
			ids := ints(r, 20, 11)
			ids[7] = 11
			return bufs(zeros(20*6), ids, randn(r, 11*6))
		}, Call: errOnly(func(k device.Kernels, b []device.Buffer) error { return k.TokenEmbedding(b[0], b[1], b[2]) })},
		{Name: "TokenEmbedding/fractional-id", Bufs: func(r *rand.Rand) [][]float32 {
			ids := ints(r, 20, 11)
			ids[2] = 0.5
			return bufs(zeros(20*6), ids, randn(r, 11*6))
		}, Call: errOnly(func(k device.Kernels, b []device.Buffer) error { return k.TokenEmbedding(b[0], b[1], b[2]) })},
		{Name: "AddPositions", Bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(tokens*pos.Dim), randn(r, tokens*pos.Dim), randn(r, rows*pos.Dim))
		}, Call: noValue(func(k device.Kernels, b []device.Buffer) { k.AddPositions(b[0], b[1], b[2], pos) })},
		{Name: "PositionsGrad", Bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(rows*pos.Dim), randn(r, tokens*pos.Dim))
		}, Call: noValue(func(k device.Kernels, b []device.Buffer) { k.PositionsGrad(b[0], b[1], pos) })},
	}
}
