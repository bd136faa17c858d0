package selftest

import (
	"fmt"
	"math/rand/v2"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
)

// llamaCases are the Cases of the Llama family's kernels: RMS norms over
// rows wider than a block, the rotary embedding over several blocks with
// unrotated columns and two sequences, and SwiGLU with gates large enough
// that e^−z overflows.
func llamaCases() []Case {
	const rows, cols, eps = 5, 300, 1e-6
	rot := hostmath.RotaryShape{Heads: 3, HeadDim: 6, SeqLen: 4, Width: 33}
	tokens, table := 2*rot.SeqLen, rot.SeqLen*rot.HeadDim/2
	const glu, n = 7, 45
	gates := func(r *rand.Rand) []float32 {
		x := randn(r, glu*2*n)
		for i := range x {
			x[i] *= 3
		}
		x[0], x[1], x[2*n+3] = 100, -100, -95 // e^−z overflows or vanishes
		return x
	}
	cases := []Case{
		{Name: "RMSNorm", Bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(rows*cols), randn(r, rows*cols), randn(r, cols))
		}, Call: noValue(func(k device.Kernels, b []device.Buffer) { k.RMSNorm(b[0], b[1], b[2], eps) })},
		{Name: "RMSNormInputGrad", Bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(rows*cols), randn(r, rows*cols), randn(r, cols), randn(r, rows*cols))
		}, Call: noValue(func(k device.Kernels, b []device.Buffer) { k.RMSNormInputGrad(b[0], b[1], b[2], b[3], eps) })},
		{Name: "RMSNormWeightGrad", Bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(30), randn(r, 9*30), randn(r, 9*30))
		}, Call: noValue(func(k device.Kernels, b []device.Buffer) { k.RMSNormWeightGrad(b[0], b[1], b[2], eps) })},
		{Name: "SwiGLU", Bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(glu*n), gates(r)) },
			Call: noValue(func(k device.Kernels, b []device.Buffer) { k.SwiGLU(b[0], b[1], n) })},
		{Name: "SwiGLUGrad", Bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(glu*2*n), gates(r), randn(r, glu*n)) },
			Call: noValue(func(k device.Kernels, b []device.Buffer) { k.SwiGLUGrad(b[0], b[1], b[2], n) })},
	}
	for _, grad := range []bool{false, true} {
		name := fmt.Sprintf("Rotary/heads=%d,width=%d", rot.Heads, rot.Width)
		if grad {
			name = "RotaryGrad" + name[len("Rotary"):]
		}
		cases = append(cases, Case{Name: name, Bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(tokens*rot.Width), randn(r, tokens*rot.Width), randn(r, table), randn(r, table))
		}, Call: noValue(func(k device.Kernels, b []device.Buffer) {
			if grad {
				k.RotaryGrad(b[0], b[1], b[2], b[3], rot)
			} else {
				k.Rotary(b[0], b[1], b[2], b[3], rot)
			}
		})})
	}
	return cases
}
