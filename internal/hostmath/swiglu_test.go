package hostmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSwiGLU compares SwiGLU and its gradient with the formulas written
// out in float64 (within 1e-15 relative: math.Exp both ways, another order
// of the same products) and float32 (within 1e-6 of values of order 1:
// exp32 is within 2 ulp).
func TestSwiGLU(t *testing.T) {
	const rows, n = 5, 7
	rng := rand.New(rand.NewPCG(3, 7))
	x, g := randomSlice(rng, rows*2*n), randomSlice(rng, rows*n)
	for i := range x {
		x[i] *= 4
	}
	wantY, wantDX := make([]float64, rows*n), make([]float64, rows*2*n)
	for r := range rows {
		for j := range n {
			z, up, gr := x[r*2*n+j], x[r*2*n+n+j], g[r*n+j]
			sig := 1 / (1 + math.Exp(-z))
			wantY[r*n+j] = z * sig * up
			wantDX[r*2*n+j] = gr * up * (sig + z*sig*(1-sig))
			wantDX[r*2*n+n+j] = gr * z * sig
		}
	}
	y, dx := make([]float64, rows*n), make([]float64, rows*2*n)
	SwiGLU(y, x, n)
	SwiGLUGrad(dx, x, g, n)
	y32, dx32 := make([]float32, rows*n), make([]float32, rows*2*n)
	SwiGLU(y32, toFloat32(x), n)
	SwiGLUGrad(dx32, toFloat32(x), toFloat32(g), n)
	for _, c := range []struct {
		name     string
		got, tol float64
	}{
		{"SwiGLU", maxAbsDiff(y, wantY), 1e-14},
		{"SwiGLUGrad", maxAbsDiff(dx, wantDX), 1e-14},
		{"SwiGLU float32", maxAbsDiff(y32, wantY), 1e-5},
		{"SwiGLUGrad float32", maxAbsDiff(dx32, wantDX), 1e-5},
	} {
		if c.got > c.tol {
			t.Errorf("%s off by %.3g, tolerance %.1g", c.name, c.got, c.tol)
		}
	}
}

// TestSwiGLULargeGate checks that gates far out on either side, where
// e^−z overflows or vanishes, give silu(z) = z or 0 and its derivative 1 or
// 0, finite, in both element types.
func TestSwiGLULargeGate(t *testing.T) {
	gates := []float64{-3e38, -1e4, -100, -89, 89, 100, 1e4, 3e38}
	check := func(name string, y, dgate, dup []float64) {
		for i, z := range gates {
			wantY, wantD := 0.0, 0.0 // silu(z)·up with up = 1, and silu'(z)
			if z > 0 {
				wantY, wantD = z, 1
			}
			if math.IsNaN(y[i]) || math.IsNaN(dgate[i]) || math.IsNaN(dup[i]) ||
				math.Abs(y[i]-wantY) > 1e-6*math.Abs(wantY)+1e-30 || math.Abs(dgate[i]-wantD) > 1e-6 || dup[i] != y[i] {
				t.Errorf("%s: gate %g: silu %v, derivative %v, up's gradient %v; want %v, %v, %v", name, z, y[i], dgate[i], dup[i], wantY, wantD, wantY)
			}
		}
	}
	n := len(gates)
	x := append(append([]float64(nil), gates...), make([]float64, n)...)
	for i := range n {
		x[n+i] = 1
	}
	ones := x[n:]
	y, dx := make([]float64, n), make([]float64, 2*n)
	SwiGLU(y, x, n)
	SwiGLUGrad(dx, x, ones, n)
	check("float64", y, dx[:n], dx[n:])
	y32, dx32 := make([]float32, n), make([]float32, 2*n)
	SwiGLU(y32, toFloat32(x), n)
	SwiGLUGrad(dx32, toFloat32(x), toFloat32(ones), n)
	widen := func(s []float32) []float64 {
		out := make([]float64, len(s))
		for i, v := range s {
			out[i] = float64(v)
		}
		return out
	}
	check("float32", widen(y32), widen(dx32[:n]), widen(dx32[n:]))
}
