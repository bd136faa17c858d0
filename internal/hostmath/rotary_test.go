package hostmath

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// rotaryTables returns transformers' cos and sin tables [seq, headDim/2]
// for base 10000: angle s·base^(−2j/headDim).
func rotaryTables(seq, headDim int) (cos, sin []float64) {
	half := headDim / 2
	cos, sin = make([]float64, seq*half), make([]float64, seq*half)
	for s := range seq {
		for j := range half {
			a := float64(s) * math.Pow(10000, -2*float64(j)/float64(headDim))
			cos[s*half+j], sin[s*half+j] = math.Cos(a), math.Sin(a)
		}
	}
	return cos, sin
}

// TestRotaryUnitVector checks that a head of two columns holding (1, 0)
// comes out at angle θ, (cos θ, sin θ), for the row's position: rotation
// towards positive angles, as rotate_half.
func TestRotaryUnitVector(t *testing.T) {
	s := RotaryShape{Heads: 1, HeadDim: 2, SeqLen: 4, Width: 2}
	cos, sin := rotaryTables(s.SeqLen, s.HeadDim)
	for i := range cos { // angles 0, 0.7, 1.4, 2.1
		cos[i], sin[i] = math.Cos(0.7*float64(i)), math.Sin(0.7*float64(i))
	}
	x := []float64{1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0} // 8 tokens: two sequences
	y := make([]float64, len(x))
	Rotary(y, x, cos, sin, s)
	for r := range 8 {
		theta := 0.7 * float64(r%4)
		if want := []float64{math.Cos(theta), math.Sin(theta)}; !equal(y[2*r:2*r+2], want) {
			t.Errorf("row %d: (1, 0) rotated to %v, want %v", r, y[2*r:2*r+2], want)
		}
	}
}

// TestRotary compares Rotary with the formula written out on heads of 6
// columns, two rotated heads and three unrotated columns per row, two
// sequences of 3; exact in float64 (the same operations), within 1e-6 in
// float32. It also checks RotaryGrad: the transpose (⟨Rotary(x), g⟩ =
// ⟨x, RotaryGrad(g)⟩ for any tables) and, with true angles, the inverse.
func TestRotary(t *testing.T) {
	s := RotaryShape{Heads: 2, HeadDim: 6, SeqLen: 3, Width: 15}
	tokens, half := 6, 3
	rng := rand.New(rand.NewPCG(2, 6))
	x, g := randomSlice(rng, tokens*s.Width), randomSlice(rng, tokens*s.Width)
	cos, sin := rotaryTables(s.SeqLen, s.HeadDim)
	want := make([]float64, len(x))
	for r := range tokens {
		pos := r % s.SeqLen
		for c := range s.Width {
			i, h, j := r*s.Width+c, c/s.HeadDim, c%s.HeadDim
			switch {
			case h >= s.Heads:
				want[i] = x[i]
			case j < half:
				want[i] = x[i]*cos[pos*half+j] - x[i+half]*sin[pos*half+j]
			default:
				want[i] = x[i]*cos[pos*half+j-half] + x[i-half]*sin[pos*half+j-half]
			}
		}
	}
	y := make([]float64, len(x))
	Rotary(y, x, cos, sin, s)
	if d := maxAbsDiff(y, want); d != 0 {
		t.Errorf("Rotary off by %.3g", d)
	}
	y32 := make([]float32, len(x))
	Rotary(y32, toFloat32(x), toFloat32(cos), toFloat32(sin), s)
	if d := maxAbsDiff(y32, want); d > 1e-6 {
		t.Errorf("Rotary in float32 off by %.3g", d)
	}

	back := make([]float64, len(x))
	RotaryGrad(back, y, cos, sin, s)
	if d := maxAbsDiff(back, x); d > 1e-15 {
		t.Errorf("RotaryGrad∘Rotary is not the identity: off by %.3g", d)
	}

	rc, rs := randomSlice(rng, len(cos)), randomSlice(rng, len(sin))
	Rotary(y, x, rc, rs, s)
	RotaryGrad(back, g, rc, rs, s)
	lhs, rhs := 0.0, 0.0
	for i := range x {
		lhs += y[i] * g[i]
		rhs += x[i] * back[i]
	}
	if math.Abs(lhs-rhs) > 1e-12 {
		t.Errorf("RotaryGrad is not Rotary's transpose: ⟨Rx, g⟩ = %v, ⟨x, Rᵀg⟩ = %v", lhs, rhs)
	}
}

// TestRotaryShapeCheck checks the layouts RotaryShape rejects.
func TestRotaryShapeCheck(t *testing.T) {
	for _, tc := range []struct {
		s    RotaryShape
		want string
	}{
		{RotaryShape{Heads: 2, HeadDim: 6, SeqLen: 3, Width: 15}, ""},
		{RotaryShape{Heads: 2, HeadDim: 5, SeqLen: 3, Width: 15}, "even"},
		{RotaryShape{Heads: 2, HeadDim: 0, SeqLen: 3, Width: 15}, "even"},
		{RotaryShape{Heads: 3, HeadDim: 6, SeqLen: 3, Width: 15}, "cannot hold"},
		{RotaryShape{Heads: 0, HeadDim: 6, SeqLen: 3, Width: 15}, "positive"},
		{RotaryShape{Heads: 2, HeadDim: 6, SeqLen: 0, Width: 15}, "positive"},
	} {
		err := tc.s.Check()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one saying %q", tc.s, err, tc.want)
		}
	}
}
