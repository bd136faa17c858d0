//go:build !purego

package hostmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// sameFloat32 reports whether the C kernel's result got is the Go loop's
// want: the same bits, both NaN, or got a zero where want is below 1e-33.
// The C kernels flush subnormals (flush.h), results and intermediates:
// for gates below about −87.3 silu's σ = 1/(1 + e^−z) is subnormal, and
// the gate's gradient g·up·σ·(1 + z·(1 − σ)), under 1e-33 for |g·up| <
// 100, is 0 in C.
func sameFloat32(got, want float32) bool {
	switch {
	case math.Float32bits(got) == math.Float32bits(want):
		return true
	case got != got && want != want:
		return true
	}
	return got == 0 && math.Abs(float64(want)) < 1e-33
}

// firstDiff is the index of the first element where got is not want
// (sameFloat32), or −1.
func firstDiff(got, want []float32) int {
	for i := range want {
		if !sameFloat32(got[i], want[i]) {
			return i
		}
	}
	return -1
}

// llamaSpecials are values a kernel must treat as the Go loops do: signed
// zeros, infinities, NaN, gates around the ends of exp32's range, where
// e^−z overflows or vanishes, and around exp32's rounding of n.
var llamaSpecials = []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 88.72283, 88.72284,
	-88.72283, -88.72284, 87.33654, 87.33655, -87.33654, -87.33655, 88.5, -88.5, 100, -100, 1e4, -1e4, 3e38,
	-3e38, 0.3465736, -0.3465736, 1e-30, -1e-30}

// TestLlamaFloat32MatchesGo runs the float32 C kernels of llama.h in every
// instruction set the CPU supports and checks each result bit for bit
// against the Go loops (bar subnormals, which C flushes): SwiGLU and its
// gradient over gates that include llamaSpecials, RMSNorm and its
// gradients, and the rotary embedding and its gradient, over row lengths
// that leave every vector tail.
func TestLlamaFloat32MatchesGo(t *testing.T) {
	best := llamaISA
	defer func() { llamaISA = best }()
	rng := rand.New(rand.NewPCG(5, 33))
	randn := func(n int, scale float64) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(rng.NormFloat64() * scale)
		}
		return s
	}
	for _, impl := range llamaISAs {
		if impl.isa > best {
			continue
		}
		llamaISA = impl.isa
		for _, n := range []int{1, 7, 8, 15, 16, 17, 33, 576} {
			t.Run(fmt.Sprintf("%s/n=%d", impl.name, n), func(t *testing.T) {
				const rows = 5
				x, g := randn(rows*2*n, 4), randn(rows*n, 1)
				for i, v := range llamaSpecials {
					// The specials in gate columns, spread over the rows.
					r, j := i%rows, (i/rows)%n
					x[r*2*n+j] = float32(v)
				}
				wantY, gotY := make([]float32, rows*n), make([]float32, rows*n)
				swigluGo(wantY, x, n)
				swigluFast(gotY, x, n)
				if i := firstDiff(gotY, wantY); i >= 0 {
					t.Errorf("SwiGLU[%d] (gate %g, up %g) = %g, want %g", i, x[i/n*2*n+i%n], x[i/n*2*n+n+i%n], gotY[i], wantY[i])
				}
				wantDX, gotDX := make([]float32, rows*2*n), make([]float32, rows*2*n)
				swigluGradGo(wantDX, x, g, n)
				swigluGradFast(gotDX, x, g, n)
				if i := firstDiff(gotDX, wantDX); i >= 0 {
					t.Errorf("SwiGLUGrad[%d] = %g, want %g", i, gotDX[i], wantDX[i])
				}

				const eps = 1e-6
				xs, w, gs := randn(rows*n, 3), randn(n, 1), randn(rows*n, 1)
				xs[0], xs[len(xs)-1] = 0, 1e30
				want, got := make([]float32, rows*n), make([]float32, rows*n)
				rmsNormGo(want, xs, w, eps)
				rmsNormFast(got, xs, w, eps)
				if i := firstDiff(got, want); i >= 0 {
					t.Errorf("RMSNorm[%d] = %g, want %g", i, got[i], want[i])
				}
				rmsNormInputGradGo(want, xs, w, gs, eps)
				rmsNormInputGradFast(got, xs, w, gs, eps)
				if i := firstDiff(got, want); i >= 0 {
					t.Errorf("RMSNormInputGrad[%d] = %g, want %g", i, got[i], want[i])
				}
				wantR, gotR := make([]float32, rows), make([]float32, rows)
				for r := range rows {
					wantR[r] = rmsRstd(xs[r*n:(r+1)*n], eps)
				}
				rmsRstdFast(gotR, xs, n, eps)
				if i := firstDiff(gotR, wantR); i >= 0 {
					t.Errorf("rstd[%d] = %g, want %g", i, gotR[i], wantR[i])
				}
				c0, c1 := n/3, n
				wantW, gotW := make([]float64, c1-c0), make([]float64, c1-c0)
				rmsWeightGradGo(wantW, xs, gs, wantR, n, c0, c1)
				rmsWeightGradFast(gotW, xs, gs, wantR, n, c0, c1)
				for i := range wantW {
					if math.Float64bits(gotW[i]) != math.Float64bits(wantW[i]) {
						t.Errorf("RMSNormWeightGrad column %d = %g, want %g", c0+i, gotW[i], wantW[i])
						break
					}
				}
			})
		}
		for _, s := range []RotaryShape{
			{Heads: 1, HeadDim: 2, SeqLen: 3, Width: 2},
			{Heads: 3, HeadDim: 6, SeqLen: 4, Width: 33},
			{Heads: 12, HeadDim: 64, SeqLen: 7, Width: 15 * 64},
		} {
			t.Run(fmt.Sprintf("%s/rotary %+v", impl.name, s), func(t *testing.T) {
				const rows, r0 = 9, 5
				x := randn(rows*s.Width, 2)
				cos, sin := randn(s.SeqLen*s.HeadDim/2, 1), randn(s.SeqLen*s.HeadDim/2, 1)
				x[0], x[len(x)-1] = float32(math.Inf(1)), float32(math.NaN())
				for _, inverse := range []bool{false, true} {
					want, got := make([]float32, len(x)), make([]float32, len(x))
					rotateGo(want, x, cos, sin, s, r0, inverse)
					rotateFast(got, x, cos, sin, s, r0, inverse)
					if i := firstDiff(got, want); i >= 0 {
						t.Errorf("inverse %v: [%d] = %g, want %g", inverse, i, got[i], want[i])
					}
				}
			})
		}
	}
}
