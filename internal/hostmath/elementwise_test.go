package hostmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestElementwiseFloat32MatchesGo runs the float32 element-wise kernels
// (C where cgo is built, elementwise.h) and the Go loops on the same
// operands, with zeros of both signs, infinities and NaNs among them, at
// lengths around the vector widths and past the threads' split: every
// result must have the same bits.
func TestElementwiseFloat32MatchesGo(t *testing.T) {
	defer SetThreads(0)
	SetThreads(3)
	rng := rand.New(rand.NewPCG(3, 5))
	operand := func(n int) []float32 {
		s := make([]float32, n)
		specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
		for i := range s {
			if rng.IntN(10) == 0 {
				s[i] = specials[rng.IntN(len(specials))]
			} else {
				s[i] = float32(rng.NormFloat64())
			}
		}
		return s
	}
	same := func(t *testing.T, what string, got, want []float32) {
		t.Helper()
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s[%d] = %g (%#x), the Go loop %g (%#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
		}
	}
	const slope = 0.01
	for _, n := range []int{0, 1, 15, 16, 17, 63, 1000, 3*minChunk + 7} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			x, g, b := operand(n), operand(n), operand(n)
			got, want := make([]float32, n), make([]float32, n)

			LeakyReLU(got, x, slope)
			leakyGo(want, x, slope)
			same(t, "LeakyReLU", got, want)

			LeakyReLUGrad(got, x, g, slope)
			leakyGradGo(want, x, g, slope)
			same(t, "LeakyReLUGrad", got, want)

			Add(got, x, b)
			addGo(want, x, b)
			same(t, "Add", got, want)
			copy(got, x)
			Add(got, got, b) // dst the same slice as a
			same(t, "Add in place", got, want)

			for _, cols := range []int{1, 7, 16, 33} {
				if n%cols != 0 {
					continue
				}
				v := operand(cols)
				copy(got, x)
				copy(want, x)
				AddRowVector(got, v)
				addRowGo(want, v)
				same(t, fmt.Sprintf("AddRowVector/cols=%d", cols), got, want)

				sums, wantSums := make([]float32, cols), make([]float32, cols)
				SumRows(sums, x)
				sumRowsGo(wantSums, x, n/cols, cols)
				same(t, fmt.Sprintf("SumRows/cols=%d", cols), sums, wantSums)
			}
		})
	}
}
