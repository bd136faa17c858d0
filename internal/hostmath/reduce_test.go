package hostmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSumSquaresFloat32 checks the float32 sum of squares (the vector loop
// of reduce.h and its scalar tail) against a float64 loop, at lengths
// around the loop's 32-element step and one long enough for two threads.
// Both sum exact float64 squares of float32 values in different orders:
// within n·ε of the total.
func TestSumSquaresFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 31, 32, 33, 95, 1<<16 + 7} {
		x := toFloat32(randomSlice(rng, n))
		want := 0.0
		for _, v := range x {
			want += float64(v) * float64(v)
		}
		if got := SumSquares(x); math.Abs(got-want) > float64(n)*1.2e-16*want {
			t.Errorf("n=%d: SumSquares = %.17g, want %.17g", n, got, want)
		}
	}
}
