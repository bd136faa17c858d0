package hostmath

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestLayerNorm compares LayerNorm with the formula written out, on rows
// with a large common offset (which a one-pass variance would lose).
// Tolerance: float64 sums in another order, 1e-12.
func TestLayerNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	rows, cols, eps := 7, 33, 1e-5
	x := randomSlice(rng, rows*cols)
	for i := range x {
		x[i] += 1000
	}
	gamma, beta := randomSlice(rng, cols), randomSlice(rng, cols)
	want := make([]float64, len(x))
	for r := range rows {
		row := x[r*cols : (r+1)*cols]
		mean, variance := 0.0, 0.0
		for _, v := range row {
			mean += v / float64(cols)
		}
		for _, v := range row {
			variance += (v - mean) * (v - mean) / float64(cols)
		}
		for i, v := range row {
			want[r*cols+i] = (v-mean)/math.Sqrt(variance+eps)*gamma[i] + beta[i]
		}
	}
	got := make([]float64, len(x))
	LayerNorm(got, x, gamma, beta, eps)
	if d := maxAbsDiff(got, want); d > 1e-9 {
		t.Errorf("LayerNorm off by %.3g", d)
	}
}

// TestLayerNormWeightGradThreads checks that the weight gradient, summed
// from per-thread partial sums, does not depend on the thread count beyond
// float64 rounding of the partial sums (1e-12).
func TestLayerNormWeightGradThreads(t *testing.T) {
	defer SetThreads(Threads())
	rng := rand.New(rand.NewPCG(1, 3))
	rows, cols := 2000, 40
	x, g := randomSlice(rng, rows*cols), randomSlice(rng, rows*cols)
	run := func(threads int) []float64 {
		SetThreads(threads)
		out := make([]float64, cols)
		LayerNormWeightGrad(out, x, g, 1e-5)
		return out
	}
	one, two := run(1), run(2)
	if d := maxAbsDiff(two, one); d > 1e-12 {
		t.Errorf("one and two threads differ by %.3g", d)
	}
}

// TestEmbedding checks the lookup plus positions and the scatter-add of
// its gradient, with repeated ids, against loops written out; both are
// exact.
func TestEmbedding(t *testing.T) {
	ids := []float64{2, 0, 2, 1, 2, 2} // 3 sequences of 2 tokens
	weight := []float64{1, 2, 10, 20, 100, 200}
	positions := []float64{0.5, 0.25, 0.125, 0.0625}
	got := make([]float64, 12)
	if err := Embedding(got, ids, weight, positions); err != nil {
		t.Fatal(err)
	}
	want := []float64{100.5, 200.25, 1.125, 2.0625, 100.5, 200.25, 10.125, 20.0625, 100.5, 200.25, 100.125, 200.0625}
	if !equal(got, want) {
		t.Errorf("Embedding = %v, want %v", got, want)
	}
	g := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	dw := []float64{9, 9, 9, 9, 9, 9} // overwritten, not added to
	if err := EmbeddingGrad(dw, ids, g); err != nil {
		t.Fatal(err)
	}
	if want := []float64{3, 4, 7, 8, 1 + 5 + 9 + 11, 2 + 6 + 10 + 12}; !equal(dw, want) {
		t.Errorf("EmbeddingGrad = %v, want %v", dw, want)
	}
}

// TestClassIDErrors checks that ids which are not integers in range are
// reported, not used.
func TestClassIDErrors(t *testing.T) {
	weight, positions := make([]float32, 6), make([]float32, 2)
	for _, tc := range []struct {
		name string
		ids  []float32
		want string
	}{
		{"negative", []float32{0, -1, 2}, "-1 is not an integer in [0, 3)"},
		{"too large", []float32{3, 0, 0}, "3 is not an integer in [0, 3)"},
		{"fraction", []float32{0, 1.5, 0}, "1.5 is not"},
		{"NaN", []float32{float32(math.NaN()), 0, 0}, "NaN is not"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := []error{
				Embedding(make([]float32, 6), tc.ids, weight, positions),
				EmbeddingGrad(make([]float32, 6), tc.ids, make([]float32, 6)),
				SoftmaxCrossEntropyGrad(make([]float32, 9), make([]float32, 9), tc.ids, 1),
			}
			_, err := SoftmaxCrossEntropy(make([]float32, 9), tc.ids)
			errs = append(errs, err)
			for i, err := range errs {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("kernel %d: error %v, want one containing %q", i, err, tc.want)
				}
			}
		})
	}
}

// TestSoftmaxCrossEntropy compares the loss and its gradient with the
// formulas written out, on logits large enough that exp would overflow
// without the shift by the row maximum. Tolerances: float64 1e-12; float32
// 1e-5 relative to the logits' scale of 100 (exp32 adds 2 ulp).
func TestSoftmaxCrossEntropy(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	rows, classes := 40, 1100
	logits := randomSlice(rng, rows*classes)
	for i := range logits {
		logits[i] = logits[i]*5 + 800
	}
	targets := make([]float64, rows)
	for i := range targets {
		targets[i] = float64(rng.IntN(classes))
	}
	seed := 0.7
	wantLoss := 0.0
	wantGrad := make([]float64, len(logits))
	for r := range rows {
		row := logits[r*classes : (r+1)*classes]
		m := row[0]
		for _, v := range row {
			m = max(m, v)
		}
		sum := 0.0
		for _, v := range row {
			sum += math.Exp(v - m)
		}
		wantLoss += (m + math.Log(sum) - row[int(targets[r])]) / float64(rows)
		for i, v := range row {
			wantGrad[r*classes+i] = seed * math.Exp(v-m) / sum / float64(rows)
		}
		wantGrad[r*classes+int(targets[r])] -= seed / float64(rows)
	}

	loss, err := SoftmaxCrossEntropy(logits, targets)
	if err != nil || math.Abs(loss-wantLoss) > 1e-12*wantLoss {
		t.Errorf("float64 loss %v (%v), want %v", loss, err, wantLoss)
	}
	loss32, err := SoftmaxCrossEntropy(toFloat32(logits), toFloat32(targets))
	if err != nil || math.Abs(loss32-wantLoss) > 1e-5*800 {
		t.Errorf("float32 loss %v (%v), want %v", loss32, err, wantLoss)
	}
	grad := make([]float64, len(logits))
	if err := SoftmaxCrossEntropyGrad(grad, logits, targets, seed); err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(grad, wantGrad); d > 1e-15 {
		t.Errorf("float64 gradient off by %.3g", d)
	}
	grad32 := make([]float32, len(logits))
	if err := SoftmaxCrossEntropyGrad(grad32, toFloat32(logits), toFloat32(targets), float32(seed)); err != nil {
		t.Fatal(err)
	}
	// The gradient's entries are at most seed/rows; float32 logits near 800
	// carry an absolute error of 3e-5, which exp turns into that relative
	// error of the probabilities.
	if d := maxAbsDiff(grad32, wantGrad); d > 1e-4*seed/float64(rows) {
		t.Errorf("float32 gradient off by %.3g", d)
	}
}

// TestLayerNormFloat32 compares the float32 LayerNorm kernels (in C where
// the CPU has AVX-512) with the float64 Go loops, on rows of 33 (vector
// tails) and 512 columns. Tolerance: float32 results of order 1 through a
// few sums of ≤ 512 terms, 1e-5 absolute; the weight gradient sums 2000
// rows, 1e-4.
func TestLayerNormFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 1))
	for _, cols := range []int{33, 512} {
		rows, eps := 2000, 1e-5
		x, g := randomSlice(rng, rows*cols), randomSlice(rng, rows*cols)
		gamma, beta := randomSlice(rng, cols), randomSlice(rng, cols)
		for i := range x {
			x[i] = x[i]*3 + 5
		}
		want := make([]float64, len(x))
		LayerNorm(want, x, gamma, beta, eps)
		got := make([]float32, len(x))
		LayerNorm(got, toFloat32(x), toFloat32(gamma), toFloat32(beta), eps)
		if d := maxAbsDiff(got, want); d > 1e-5 {
			t.Errorf("%d columns: LayerNorm off by %.3g", cols, d)
		}
		LayerNormInputGrad(want, x, gamma, g, eps)
		LayerNormInputGrad(got, toFloat32(x), toFloat32(gamma), toFloat32(g), eps)
		if d := maxAbsDiff(got, want); d > 1e-5 {
			t.Errorf("%d columns: LayerNormInputGrad off by %.3g", cols, d)
		}
		wantW, gotW := make([]float64, cols), make([]float32, cols)
		LayerNormWeightGrad(wantW, x, g, eps)
		LayerNormWeightGrad(gotW, toFloat32(x), toFloat32(g), eps)
		if d := maxAbsDiff(gotW, wantW); d > 1e-4 {
			t.Errorf("%d columns: LayerNormWeightGrad off by %.3g", cols, d)
		}
	}
}
