//go:build !purego

package hostmath

import (
	"math"
	"runtime"
	"testing"
)

// tiny is a float32 whose square is subnormal (1e-40): a kernel that
// flushes subnormals (flush.h) computes every product of two of them as
// zero, one that does not leaves a nonzero subnormal sum.
const tiny = float32(1e-20)

// subnormal is a subnormal float32 input: read as zero under DAZ.
var subnormal = math.Float32frombits(1 << 20)

// TestKernelsFlushSubnormals runs each C kernel on the hot paths with
// operands whose products are subnormal, or that are subnormal themselves,
// and checks that the results are those of zeros; and that the Go code
// after a kernel, on the same thread, still computes a subnormal result:
// the caller's MXCSR is restored.
func TestKernelsFlushSubnormals(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fill := func(n int, v float32) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = v
		}
		return s
	}
	allZero := func(t *testing.T, name string, s []float32) {
		t.Helper()
		for i, v := range s {
			if v != 0 {
				t.Fatalf("%s[%d] = %g, want 0: the kernel kept a subnormal", name, i, v)
			}
		}
	}
	cases := []struct {
		name string
		skip bool
		run  func(t *testing.T)
	}{
		{"sgemm", !sgemmKernel, func(t *testing.T) {
			const m, n, k = 64, 96, 32
			c := fill(m*n, 1)
			sgemm(true, false, m, n, k, 1, fill(m*k, tiny), m, fill(k*n, tiny), n, 0, c, n)
			allZero(t, "c", c)
		}},
		{"few rows", !fewRowKernel, func(t *testing.T) {
			const m, n, k = 4, 64, 48
			c := fill(m*n, 1)
			fewRowsNT(m, n, k, fill(m*k, tiny), fill(n*k, tiny), c)
			allZero(t, "c", c)
		}},
		{"causal product", !directTriGemm, func(t *testing.T) {
			const n, k = 24, 16
			c := fill(n*n, 1)
			a, b := matrix[float32]{fill(n*k, tiny), k, 1}, matrix[float32]{fill(k*n, tiny), n, 1}
			triGemm(triALower, n, n, k, 1, a, b, 0, c, n, make([]float32, triGemmLen[float32](n, k)))
			allZero(t, "c", c)
		}},
		{"fused attention", !fusedAttentionC, func(t *testing.T) {
			// Queries of ones, keys of ±1/2: normal scores and
			// probabilities; values and output gradients of ±tiny, so that
			// dP = G·Vᵀ and D = rowsum(G ⊙ O) are subnormal, and with them
			// dS, and so the query and key gradients dS·K and dSᵀ·Q.
			a := Attention{Batch: 1, Seq: 8, Heads: 1, HeadDim: 16}
			ld, dh := a.QKVWidth(), a.HeadDim
			qkv, g := make([]float32, a.Seq*ld), make([]float32, a.Seq*dh)
			for r := range a.Seq {
				for j := range dh {
					sign := float32(1 - 2*((r*7+j*3)%2))
					qkv[r*ld+j] = 1
					qkv[r*ld+dh+j] = sign * float32((r+j)%5) / 8
					qkv[r*ld+2*dh+j] = sign * tiny * float32(1+(r*j)%3)
					g[r*dh+j] = -sign * tiny * float32(1+(r+2*j)%4)
				}
			}
			out, lse, dqkv := make([]float32, len(g)), make([]float32, a.Seq), fill(len(qkv), 1)
			FusedAttention(out, lse, qkv, a)
			FusedAttentionGrad(dqkv, qkv, out, lse, g, nil, a)
			for r := range a.Seq {
				allZero(t, "dQ and dK", dqkv[r*ld:r*ld+2*dh])
			}
		}},
		{"adam", false, func(t *testing.T) {
			const n = 40
			p, m, v := fill(n, 1), fill(n, 0), fill(n, 0)
			AdamStep(DefaultAdam(), p, fill(n, subnormal), m, v, 1, 1)
			allZero(t, "m", m)
			allZero(t, "v", v)
		}},
		{"element-wise", false, func(t *testing.T) {
			const n = 40
			relu, sum := fill(n, 1), fill(n, 1)
			LeakyReLU(relu, fill(n, -subnormal), 0.5)
			allZero(t, "LeakyReLU", relu)
			Add(sum, fill(n, subnormal), fill(n, subnormal))
			allZero(t, "Add", sum)
		}},
		{"llama", false, func(t *testing.T) {
			const n = 40
			y, x := fill(n, 1), fill(2*n, 1)
			for i := range n {
				x[i] = subnormal // the gates: silu(z)·1 = z/2 in Go
			}
			SwiGLU(y, x, n)
			allZero(t, "SwiGLU", y)
			norm := fill(n, 1)
			RMSNorm(norm, fill(n, subnormal), fill(n, 1), 1e-6)
			allZero(t, "RMSNorm", norm)
			rot := fill(2*n, 1)
			Rotary(rot, fill(2*n, subnormal), fill(1, 1), fill(1, 0.5), RotaryShape{Heads: 1, HeadDim: 2, SeqLen: 1, Width: 2})
			allZero(t, "Rotary", rot)
		}},
		{"sum of squares", false, func(t *testing.T) {
			if got := SumSquares(fill(40, subnormal)); got != 0 {
				t.Fatalf("SumSquares = %g, want 0", got)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.skip {
				t.Skip("the kernel does not run on this CPU")
			}
			c.run(t)
			if x := goSubnormal(tiny); x == 0 {
				t.Fatal("Go code after the kernel flushed a subnormal: MXCSR was not restored")
			}
		})
	}
}

// goSubnormal is x² computed by Go code (x is subnormal-squared for tiny).
//
//go:noinline
func goSubnormal(x float32) float32 { return x * x }
