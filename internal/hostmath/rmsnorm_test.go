package hostmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// rmsNormRef is RMSNorm and its two gradients written out in float64 from
// the formulas: y = w ⊙ x̂, dx = (ĝ − x̂·mean(ĝ ⊙ x̂))·rstd, dw = Σ_rows g ⊙ x̂.
func rmsNormRef(x, w, g []float64, eps float64) (y, dx, dw []float64) {
	cols := len(w)
	y, dx, dw = make([]float64, len(x)), make([]float64, len(x)), make([]float64, cols)
	for r := range len(x) / cols {
		xr, gr := x[r*cols:(r+1)*cols], g[r*cols:(r+1)*cols]
		ms := 0.0
		for _, v := range xr {
			ms += v * v / float64(cols)
		}
		rstd := 1 / math.Sqrt(ms+eps)
		dot := 0.0
		for i, v := range xr {
			dot += gr[i] * w[i] * v * rstd / float64(cols)
		}
		for i, v := range xr {
			y[r*cols+i] = w[i] * v * rstd
			dx[r*cols+i] = (gr[i]*w[i] - v*rstd*dot) * rstd
			dw[i] += gr[i] * v * rstd
		}
	}
	return y, dx, dw
}

// TestRMSNorm compares the forward and both gradients with the formulas
// written out, in float64 (tolerance 1e-12: sums in another order) and in
// float32 (1e-5 of values of order 1: float32 products, float64 sums).
func TestRMSNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	for _, tc := range []struct {
		name       string
		rows, cols int
		eps        float64
	}{
		{"d7", 5, 7, 1e-6},
		{"d33 eps 0.5", 3, 33, 0.5},
		{"one column", 4, 1, 1e-5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, g := randomSlice(rng, tc.rows*tc.cols), randomSlice(rng, tc.rows*tc.cols)
			w := randomSlice(rng, tc.cols)
			wantY, wantDX, wantDW := rmsNormRef(x, w, g, tc.eps)
			y, dx, dw := make([]float64, len(x)), make([]float64, len(x)), make([]float64, tc.cols)
			RMSNorm(y, x, w, tc.eps)
			RMSNormInputGrad(dx, x, w, g, tc.eps)
			RMSNormWeightGrad(dw, x, g, tc.eps)
			y32, dx32, dw32 := make([]float32, len(x)), make([]float32, len(x)), make([]float32, tc.cols)
			RMSNorm(y32, toFloat32(x), toFloat32(w), tc.eps)
			RMSNormInputGrad(dx32, toFloat32(x), toFloat32(w), toFloat32(g), tc.eps)
			RMSNormWeightGrad(dw32, toFloat32(x), toFloat32(g), tc.eps)
			for _, c := range []struct {
				name string
				got  float64
				tol  float64
			}{
				{"RMSNorm", maxAbsDiff(y, wantY), 1e-12},
				{"RMSNormInputGrad", maxAbsDiff(dx, wantDX), 1e-12},
				{"RMSNormWeightGrad", maxAbsDiff(dw, wantDW), 1e-12},
				{"RMSNorm float32", maxAbsDiff(y32, wantY), 1e-5},
				{"RMSNormInputGrad float32", maxAbsDiff(dx32, wantDX), 1e-5},
				{"RMSNormWeightGrad float32", maxAbsDiff(dw32, wantDW), 1e-5},
			} {
				if c.got > c.tol {
					t.Errorf("%s off by %.3g, tolerance %.1g", c.name, c.got, c.tol)
				}
			}
		})
	}
}

// TestRMSNormConstantRow checks that a constant row normalises to ±1, so
// that the output is the weight (negated for a negative constant): with
// eps 0, x/√(x²) is exact up to one rounding of the square root and the
// division.
func TestRMSNormConstantRow(t *testing.T) {
	w := []float64{0.5, -2, 3, 1.25, 7}
	for _, c := range []float64{2.5, -0.1, 1e-3, 300} {
		x := make([]float64, 2*len(w))
		for i := range x {
			x[i] = c
		}
		y := make([]float64, len(x))
		RMSNorm(y, x, w, 0)
		for i, v := range y {
			want := math.Copysign(1, c) * w[i%len(w)]
			if math.Abs(v-want) > 1e-15*math.Abs(want) {
				t.Errorf("constant %v: y[%d] = %v, want %v", c, i, v, want)
			}
		}
	}
}

// TestRMSNormWeightGradThreads checks that the weight gradient is the same
// bit for bit whatever the thread count: each column is summed over the
// rows in order by one thread.
func TestRMSNormWeightGradThreads(t *testing.T) {
	defer SetThreads(Threads())
	rng := rand.New(rand.NewPCG(1, 4))
	rows, cols := 3000, 41
	x, g := toFloat32(randomSlice(rng, rows*cols)), toFloat32(randomSlice(rng, rows*cols))
	run := func(threads int) []float32 {
		SetThreads(threads)
		out := make([]float32, cols)
		RMSNormWeightGrad(out, x, g, 1e-6)
		return out
	}
	one, three := run(1), run(3)
	for i := range one {
		if math.Float32bits(one[i]) != math.Float32bits(three[i]) {
			t.Fatalf("column %d: one thread %v, three %v", i, one[i], three[i])
		}
	}
}
