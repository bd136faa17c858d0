package hostmath

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// geluTanh64 is transformers' gelu_new written out in float64.
func geluTanh64(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

// geluTanhDeriv64 is its derivative written out in float64.
func geluTanhDeriv64(x float64) float64 {
	t := math.Tanh(math.Sqrt(2/math.Pi) * (x + 0.044715*x*x*x))
	return 0.5*(1+t) + 0.5*x*(1-t*t)*math.Sqrt(2/math.Pi)*(1+3*0.044715*x*x)
}

// TestGELUTanhValues checks the activation and its derivative at known
// points in both element types: 0, gelu_new(1) = 0.84119199060827680
// (0.8411920071 rounded to float32, as torch prints it), ±30 (where tanh
// is ±1 exactly) and values whose cube overflows, where both must stay
// finite. float32 results are compared with the value rounded to float32.
func TestGELUTanhValues(t *testing.T) {
	for _, tc := range []struct {
		x, y, dy float64
		tol      float64 // relative, on the float32 result; float64's is 1e-15
	}{
		{0, 0, 0.5, 0},
		{1, 0.8411919906082768, 1.0829640838457826, 1e-7},
		{30, 30, 1, 0},
		{-30, 0, 0, 0},
		{1e20, 1e20, 1, 0},
		{-1e20, 0, 0, 0},
		{math.MaxFloat32, math.MaxFloat32, 1, 0},
		{-math.MaxFloat32, 0, 0, 0},
	} {
		y64, dy64 := make([]float64, 1), make([]float64, 1)
		GELUTanh(y64, []float64{tc.x})
		GELUTanhGrad(dy64, []float64{tc.x}, []float64{1})
		y32, dy32 := make([]float32, 1), make([]float32, 1)
		GELUTanh(y32, []float32{float32(tc.x)})
		GELUTanhGrad(dy32, []float32{float32(tc.x)}, []float32{1})
		for _, got := range []struct {
			name         string
			y, dy        float64
			wantY, wantD float64
			tol          float64
		}{
			{"float64", y64[0], dy64[0], tc.y, tc.dy, 1e-15},
			{"float32", float64(y32[0]), float64(dy32[0]), float64(float32(tc.y)), float64(float32(tc.dy)), tc.tol},
		} {
			if math.Abs(got.y-got.wantY) > got.tol*math.Abs(got.wantY) || math.IsNaN(got.y) {
				t.Errorf("%s: GELUTanh(%g) = %v, want %v", got.name, tc.x, got.y, got.wantY)
			}
			if math.Abs(got.dy-got.wantD) > got.tol*math.Abs(got.wantD) || math.IsNaN(got.dy) {
				t.Errorf("%s: GELUTanh'(%g) = %v, want %v", got.name, tc.x, got.dy, got.wantD)
			}
		}
	}
}

// TestGELUTanhMatchesFormula compares the kernels with the formulas
// written out in float64 on random inputs in [-8, 8], which cover the
// curve's bend and both tails, and checks the derivative formula itself
// against central differences of the activation. Tolerances: float64
// 1e-14 (a different order of a few roundings); float32 4e-7·(1 + |x|),
// since 1 + tanh cancels for negative x and each of about eight float32
// roundings moves the result by 2^-24 of terms as large as |x|.
func TestGELUTanhMatchesFormula(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	x := randomSlice(rng, 4000)
	g := randomSlice(rng, len(x))
	for i := range x {
		x[i] *= 8
	}
	y, dy := make([]float64, len(x)), make([]float64, len(x))
	GELUTanh(y, x)
	GELUTanhGrad(dy, x, g)
	x32, g32 := toFloat32(x), toFloat32(g)
	y32, dy32 := make([]float32, len(x)), make([]float32, len(x))
	GELUTanh(y32, x32)
	GELUTanhGrad(dy32, x32, g32)
	for i, v := range x {
		if d := math.Abs(y[i] - geluTanh64(v)); d > 1e-14*(1+math.Abs(v)) {
			t.Fatalf("float64 GELUTanh(%g) = %v, formula %v", v, y[i], geluTanh64(v))
		}
		if want := g[i] * geluTanhDeriv64(v); math.Abs(dy[i]-want) > 1e-14*(1+math.Abs(v)) {
			t.Fatalf("float64 GELUTanhGrad(%g) = %v, formula %v", v, dy[i], want)
		}
		v32 := float64(x32[i])
		if d := math.Abs(float64(y32[i]) - geluTanh64(v32)); d > 4e-7*(1+math.Abs(v32)) {
			t.Fatalf("float32 GELUTanh(%g) = %v, formula %v", v32, y32[i], geluTanh64(v32))
		}
		if want := float64(g32[i]) * geluTanhDeriv64(v32); math.Abs(float64(dy32[i])-want) > 4e-7*(1+math.Abs(v32)) {
			t.Fatalf("float32 GELUTanhGrad(%g) = %v, formula %v", v32, dy32[i], want)
		}
		const h = 1e-5 // central differences: error ~h²·f‴ ≈ 1e-10
		if num := (geluTanh64(v+h) - geluTanh64(v-h)) / (2 * h); math.Abs(num-geluTanhDeriv64(v)) > 1e-8 {
			t.Fatalf("derivative formula at %g: %v, central difference %v", v, geluTanhDeriv64(v), num)
		}
	}
}

// TestTokenEmbedding checks the lookup, with repeated ids, against the
// rows written out (exact), and that bad ids and sizes are errors that
// leave the output unwritten.
func TestTokenEmbedding(t *testing.T) {
	ids := []float64{2, 0, 2, 1, 2, 2}
	weight := []float64{1, 2, 10, 20, 100, 200}
	got := make([]float64, 12)
	if err := TokenEmbedding(got, ids, weight); err != nil {
		t.Fatal(err)
	}
	if want := []float64{100, 200, 1, 2, 100, 200, 10, 20, 100, 200, 100, 200}; !equal(got, want) {
		t.Errorf("TokenEmbedding = %v, want %v", got, want)
	}
	for _, tc := range []struct {
		name       string
		y, ids, w  []float32
		wantErrSub string
	}{
		{"too large", make([]float32, 6), []float32{0, 3, 1}, make([]float32, 6), "element 1: class id 3 is not an integer in [0, 3)"},
		{"negative", make([]float32, 6), []float32{0, 1, -1}, make([]float32, 6), "element 2: class id -1 is not"},
		{"fraction", make([]float32, 6), []float32{0.5, 1, 1}, make([]float32, 6), "class id 0.5 is not"},
		{"NaN", make([]float32, 6), []float32{0, float32(math.NaN()), 1}, make([]float32, 6), "class id NaN is not"},
		{"ragged output", make([]float32, 7), []float32{0, 1, 1}, make([]float32, 6), "7 outputs do not split into 3 rows"},
		{"no ids", make([]float32, 6), nil, make([]float32, 6), "do not split into 0 rows"},
		{"no columns", nil, []float32{0, 1}, make([]float32, 6), "0 outputs do not split"},
		{"ragged weight", make([]float32, 6), []float32{0, 1, 1}, make([]float32, 5), "5 weights are not rows of 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.y {
				tc.y[i] = 7
			}
			err := TokenEmbedding(tc.y, tc.ids, tc.w)
			if err == nil || !strings.Contains(err.Error(), tc.wantErrSub) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErrSub)
			}
			for i, v := range tc.y {
				if v != 7 {
					t.Fatalf("element %d written (%v) despite the error", i, v)
				}
			}
		})
	}
}

// TestPositions checks AddPositions and PositionsGrad against loops
// written out, exactly, on 3 sequences of 2 tokens and a table of 4 rows
// whose last 2 are unused: they must not be read (they hold values that
// would show) and their gradient is zero, written over what dpos held.
func TestPositions(t *testing.T) {
	p := Positions{SeqLen: 2, Dim: 2}
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	pos := []float64{0.5, 0.25, 0.125, 0.0625, 1e6, 1e6, 1e6, 1e6}
	y := make([]float64, len(x))
	AddPositions(y, x, pos, p)
	want := []float64{1.5, 2.25, 3.125, 4.0625, 5.5, 6.25, 7.125, 8.0625, 9.5, 10.25, 11.125, 12.0625}
	if !equal(y, want) {
		t.Errorf("AddPositions = %v, want %v", y, want)
	}
	dpos := []float64{9, 9, 9, 9, 9, 9, 9, 9}
	PositionsGrad(dpos, x, p)
	if want := []float64{1 + 5 + 9, 2 + 6 + 10, 3 + 7 + 11, 4 + 8 + 12, 0, 0, 0, 0}; !equal(dpos, want) {
		t.Errorf("PositionsGrad = %v, want %v", dpos, want)
	}
}

// TestPositionsGradThreads checks that PositionsGrad is bit-identical on
// one thread and on two: each element is one sum in a fixed order, whatever
// the split.
func TestPositionsGradThreads(t *testing.T) {
	defer SetThreads(Threads())
	p := Positions{SeqLen: 64, Dim: 1024}
	g := toFloat32(randomSlice(rand.New(rand.NewPCG(2, 9)), 4*p.SeqLen*p.Dim))
	run := func(threads int) []float32 {
		SetThreads(threads)
		out := make([]float32, 80*p.Dim)
		PositionsGrad(out, g, p)
		return out
	}
	one, two := run(1), run(2)
	for i := range one {
		if math.Float32bits(one[i]) != math.Float32bits(two[i]) {
			t.Fatalf("element %d: one thread %v, two %v", i, one[i], two[i])
		}
	}
}
