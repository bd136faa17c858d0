package hostmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

func randomSlice(rng *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = rng.Float64()*2 - 1
	}
	return s
}

func toFloat32(s []float64) []float32 {
	out := make([]float32, len(s))
	for i, v := range s {
		out[i] = float32(v)
	}
	return out
}

// naiveGemm is the textbook triple loop, the reference for Gemm.
func naiveGemm(transA, transB bool, m, n, k int, alpha float64, a, b []float64, beta float64, c []float64) {
	at := func(i, p int) float64 {
		if transA {
			return a[p*m+i]
		}
		return a[i*k+p]
	}
	bt := func(p, j int) float64 {
		if transB {
			return b[j*k+p]
		}
		return b[p*n+j]
	}
	for i := range m {
		for j := range n {
			s := 0.0
			for p := range k {
				s += at(i, p) * bt(p, j)
			}
			c[i*n+j] = alpha*s + beta*c[i*n+j]
		}
	}
}

func maxAbsDiff[T Float](got []T, want []float64) float64 {
	worst := 0.0
	for i := range got {
		worst = max(worst, math.Abs(float64(got[i])-want[i]))
	}
	return worst
}

func TestGemm(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name           string
		transA, transB bool
		m, n, k        int
		alpha, beta    float64
	}{
		{"NN", false, false, 7, 5, 3, 1, 0},
		{"NT linear forward", false, true, 4, 6, 9, 1, 0},
		{"TN weight gradient", true, false, 6, 9, 4, 1, 0},
		{"TT with beta", true, true, 3, 8, 5, 0.5, 2},
		{"k=1", false, false, 5, 5, 1, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := randomSlice(rng, tc.m*tc.k)
			b := randomSlice(rng, tc.k*tc.n)
			c := randomSlice(rng, tc.m*tc.n)
			want := append([]float64(nil), c...)
			naiveGemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, b, tc.beta, want)

			got64 := append([]float64(nil), c...)
			Gemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, b, tc.beta, got64)
			// float64 products of k ≤ 9 terms of size ≤ 1: rounding stays below 1e-13.
			if d := maxAbsDiff(got64, want); d > 1e-13 {
				t.Errorf("float64: max |diff| %g", d)
			}
			got32 := toFloat32(c)
			Gemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, float32(tc.alpha), toFloat32(a), toFloat32(b), float32(tc.beta), got32)
			// float32 inputs are rounded to 6e-8 relative; sums of ≤ 9 terms stay below 1e-5.
			if d := maxAbsDiff(got32, want); d > 1e-5 {
				t.Errorf("float32: max |diff| %g", d)
			}
		})
	}
}

func TestElementwise(t *testing.T) {
	// Sizes around minChunk exercise both the serial and the parallel paths.
	for _, n := range []int{1, 7, minChunk - 1, 3*minChunk + 5} {
		rng := rand.New(rand.NewPCG(uint64(n), 3))
		x, g, y := randomSlice(rng, n), randomSlice(rng, n), randomSlice(rng, n)
		const slope = 0.01

		relu := make([]float64, n)
		LeakyReLU(relu, x, slope)
		reluGrad := make([]float64, n)
		LeakyReLUGrad(reluGrad, x, g, slope)
		sum := make([]float64, n)
		Add(sum, x, y)
		mseGrad := make([]float64, n)
		MeanSquaredErrorGrad(mseGrad, x, y, 3)

		wantSum, wantSquares, wantMSE := 0.0, 0.0, 0.0
		for i := range n {
			wantRelu, wantGrad := x[i], g[i]
			if x[i] <= 0 {
				wantRelu, wantGrad = slope*x[i], slope*g[i]
			}
			if relu[i] != wantRelu || reluGrad[i] != wantGrad {
				t.Fatalf("n=%d i=%d: LeakyReLU %g grad %g, want %g %g", n, i, relu[i], reluGrad[i], wantRelu, wantGrad)
			}
			if sum[i] != x[i]+y[i] {
				t.Fatalf("n=%d i=%d: Add %g, want %g", n, i, sum[i], x[i]+y[i])
			}
			if want := 3 * 2 / float64(n) * (x[i] - y[i]); math.Abs(mseGrad[i]-want) > 1e-15 {
				t.Fatalf("n=%d i=%d: MSE grad %g, want %g", n, i, mseGrad[i], want)
			}
			wantSum += x[i]
			wantSquares += x[i] * x[i]
			wantMSE += (x[i] - y[i]) * (x[i] - y[i])
		}
		wantMSE /= float64(n)
		// Summing n terms of size ≤ 1 in float64 in any order errs by at most
		// n·ε·Σ|terms| ≤ n²·1.1e-16.
		tol := float64(n) * float64(n) * 1.2e-16
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"Sum", Sum(x), wantSum},
			{"SumSquares", SumSquares(x), wantSquares},
			{"MeanSquaredError", MeanSquaredError(x, y), wantMSE},
		} {
			if math.Abs(c.got-c.want) > tol {
				t.Errorf("n=%d: %s = %g, want %g", n, c.name, c.got, c.want)
			}
		}
	}
}

func TestRowVectorKernels(t *testing.T) {
	m := []float64{1, 2, 3, 4, 5, 6} // 2 rows × 3 columns
	AddRowVector(m, []float64{10, 20, 30})
	if want := []float64{11, 22, 33, 14, 25, 36}; !equal(m, want) {
		t.Errorf("AddRowVector = %v, want %v", m, want)
	}
	sums := []float64{99, 99, 99}
	SumRows(sums, m)
	if want := []float64{25, 47, 69}; !equal(sums, want) {
		t.Errorf("SumRows = %v, want %v", sums, want)
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestAdamByHand checks clipping and Adam against values worked out by hand.
//
// The gradient (3, 4) has norm 5, so clipping to 1 scales it to (0.6, 0.8).
// Step 1: m = 0.1·g = (0.06, 0.08), v = 0.001·g² = (0.00036, 0.00064); the
// bias corrections are 0.1 and 0.001, so the update is
// 1e-4/0.1 · m/(√(v/0.001)) = 1e-3 · 0.1 = 1e-4 for both: Adam moves each
// parameter by lr against the sign of a constant gradient.
// Step 2 with the gradient reversed, (−0.6, −0.8) after clipping:
// m = 0.9·0.06 − 0.1·0.6 = −0.006, v = 0.999·0.00036 + 0.001·0.36 = 0.00071964;
// corrections 0.19 and 0.001999; √(v/0.001999) = 0.6; the update is
// 1e-4/0.19 · (−0.006/0.6) = −5.2631579e-6: the parameter moves back by that.
func TestAdamByHand(t *testing.T) {
	p := []float64{1, -2}
	m := make([]float64, 2)
	v := make([]float64, 2)
	steps := []struct {
		grad []float64
		want []float64
	}{
		{[]float64{3, 4}, []float64{1 - 1e-4, -2 - 1e-4}},
		{[]float64{-3, -4}, []float64{1 - 1e-4 + 1e-4/0.19*0.01, -2 - 1e-4 + 1e-4/0.19*0.01}},
	}
	for i, s := range steps {
		scale := ClipScale(SumSquares(s.grad), 1)
		if want := 1 / (5 + 1e-6); math.Abs(scale-want) > 1e-15 {
			t.Fatalf("step %d: clip scale %g, want %g", i+1, scale, want)
		}
		AdamStep(DefaultAdam(), p, s.grad, m, v, scale, i+1)
		// ε = 1e-8 against a denominator of 0.6 shifts each update by
		// 1.7e-8 of itself, about 2e-12 here.
		for j := range p {
			if math.Abs(p[j]-s.want[j]) > 1e-11 {
				t.Errorf("step %d: p[%d] = %.12f, want %.12f", i+1, j, p[j], s.want[j])
			}
		}
	}
	if got := ClipScale(0.25, 1); got != 1 {
		t.Errorf("ClipScale of a norm-0.5 gradient = %g, want 1 (no clipping)", got)
	}
}

// TestAdamFloat32MatchesGo checks that the compiled float32 update gives
// the same bits as the Go loop, on values that exercise clipping, both
// signs and tiny moments.
func TestAdamFloat32MatchesGo(t *testing.T) {
	const n = 1037 // not a multiple of any vector width
	rng := rand.New(rand.NewPCG(9, 9))
	mk := func() []float32 { return toFloat32(randomSlice(rng, n)) }
	p, g, m, v := mk(), mk(), mk(), mk()
	for i := range v {
		v[i] = v[i] * v[i] * 1e-3
	}
	p2, m2, v2 := append([]float32(nil), p...), append([]float32(nil), m...), append([]float32(nil), v...)
	for step := 1; step <= 3; step++ {
		c := adamConstants[float32]{scale: 0.3, beta1: 0.9, beta2: 0.999, oneMinusBeta1: 0.1, oneMinusBeta2: 0.001,
			stepSize: float32(1e-4 / (1 - math.Pow(0.9, float64(step)))), correction2Sqrt: float32(math.Sqrt(1 - math.Pow(0.999, float64(step)))), eps: 1e-8}
		adamFloat32(p, g, m, v, c)
		adamGo(p2, g, m2, v2, c)
	}
	for i := range p {
		if p[i] != p2[i] || m[i] != m2[i] || v[i] != v2[i] {
			t.Fatalf("element %d: compiled (%g %g %g), Go (%g %g %g)", i, p[i], m[i], v[i], p2[i], m2[i], v2[i])
		}
	}
}

// TestSetThreadsReportsCountInForce: SetThreads returns the count in force,
// which Threads then reports; a count of 0 restores the default.
func TestSetThreadsReportsCountInForce(t *testing.T) {
	defer SetThreads(Threads())
	for _, n := range []int{1, 3} {
		if got := SetThreads(n); got < 1 || got > n || got != Threads() {
			t.Errorf("SetThreads(%d) = %d, Threads() = %d; want the same count, 1 to %d", n, got, Threads(), n)
		}
	}
	if got := SetThreads(0); got < 1 || got != Threads() {
		t.Errorf("SetThreads(0) = %d, Threads() = %d; want the default in both", got, Threads())
	}
}
