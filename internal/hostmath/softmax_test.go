package hostmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestSoftmaxRowKernels runs the float32 row kernels in every instruction
// set the CPU supports on rows whose lengths cover the vector tails, masked
// and causal, and compares them with the float64 Go loops. Tolerance: the
// float32 results are probabilities ≤ 1 built from exp within 2 ulp and
// sums of up to 1000 terms, so 2e-6 absolute; the log-sum-exp, of values
// up to 30, 1e-5.
func TestSoftmaxRowKernels(t *testing.T) {
	best := softmaxISA
	defer func() { softmaxISA = best }()
	rng := rand.New(rand.NewPCG(2, 7))
	for _, impl := range softmaxISAs {
		if impl.isa > best {
			continue
		}
		softmaxISA = impl.isa
		for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 33, 512, 1000} {
			for _, causal := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s n=%d causal=%v", impl.name, n, causal), func(t *testing.T) {
					rows, ld, r0 := 3, n+5, max(0, n-3)
					x := randomSlice(rng, rows*ld)
					for i := range x {
						x[i] *= 30
					}
					dp := randomSlice(rng, rows*ld)

					want := append([]float64(nil), x...)
					softmaxRowsGo(want, rows, n, ld, r0, causal)
					got := toFloat32(x)
					softmaxRows(got, rows, n, ld, r0, causal)
					for r := range rows {
						// Entries past n belong to the next row's stride and stay.
						if d := maxAbsDiff(got[r*ld:r*ld+n], want[r*ld:r*ld+n]); d > 2e-6 {
							t.Errorf("softmax row %d off by %.3g", r, d)
						}
						if got[r*ld+n] != float32(x[r*ld+n]) && r < rows-1 {
							t.Errorf("softmax row %d wrote past its %d entries", r, n)
						}
					}

					wantGrad := make([]float64, rows*ld)
					softmaxGradRowsGo(wantGrad, want, dp, rows, n, ld, r0, causal)
					gotGrad := make([]float32, rows*ld)
					softmaxGradRows(gotGrad, toFloat32(want), toFloat32(dp), rows, n, ld, r0, causal)
					if d := maxAbsDiff(gotGrad, wantGrad); d > 2e-6 {
						t.Errorf("softmax gradient off by %.3g", d)
					}

					dense := x[:rows*n]
					wantScaled, wantLSE := make([]float64, len(dense)), make([]float64, rows)
					softmaxScaledRowsGo(wantScaled, dense, rows, n, 0.5, wantLSE)
					gotScaled, gotLSE := make([]float32, len(dense)), make([]float64, rows)
					softmaxScaledRows(gotScaled, toFloat32(dense), rows, n, 0.5, gotLSE)
					if d := maxAbsDiff(gotScaled, wantScaled); d > 2e-6 {
						t.Errorf("scaled softmax off by %.3g", d)
					}
					if d := maxAbsDiff(gotLSE, wantLSE); d > 1e-5 {
						t.Errorf("log-sum-exp off by %.3g", d)
					}
				})
			}
		}
	}
}

// TestSoftmaxExtremes checks rows whose differences reach past the range
// of float32 exp: the small terms vanish, nothing overflows or turns NaN.
func TestSoftmaxExtremes(t *testing.T) {
	best := softmaxISA
	defer func() { softmaxISA = best }()
	for _, impl := range softmaxISAs {
		if impl.isa > best {
			continue
		}
		softmaxISA = impl.isa
		row := []float32{0, -200, 1e30, -1e30, 1e30 - 1e24, 5}
		softmaxRows(row, 1, len(row), len(row), 0, false)
		sum := float32(0)
		for _, v := range row {
			if math.IsNaN(float64(v)) || v < 0 || v > 1 {
				t.Fatalf("%s: softmax gave %v", impl.name, row)
			}
			sum += v
		}
		if math.Abs(float64(sum)-1) > 1e-6 || row[0] > 1e-37 || row[2] < 0.5 {
			t.Errorf("%s: softmax gave %v", impl.name, row)
		}
	}
}
