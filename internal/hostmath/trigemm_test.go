package hostmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestTriGemm compares triGemm, in float64 (the BLAS in blocks) and in
// float32 (the AVX-512 kernel where the CPU has it), with a naive product
// for every triangle, with operands read straight and transposed, alpha
// not 1 and beta 0 or not (the kernel takes the terms in blocks with beta
// 0), and sizes that leave partial row blocks (6 rows), column panels (64)
// and BLAS blocks (attentionBlock), among them sizes one past a panel or a
// block, whose last row or column lies on the diagonal. Only the entries
// the triangle promises are compared; with beta ≠ 0 c's old values count.
// Tolerances: float64 sums in another order differ by about 1e-15
// relative; float32 by about 1e-6 over a few hundred terms.
func TestTriGemm(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type size struct{ m, n, k int }
	for _, tc := range []struct {
		tri  triangle
		size size
	}{
		{triNone, size{37, 45, 19}},
		{triNone, size{1, 1, 1}},
		{triNone, size{20, 70, 300}}, // terms in blocks of 128 with beta 0
		{triALower, size{37, 33, 37}},
		{triALower, size{300, 64, 300}},
		{triAUpper, size{37, 17, 37}},
		{triAUpper, size{300, 64, 300}},
		{triC, size{37, 37, 13}},
		{triC, size{300, 300, 64}},
		// One past a multiple of the kernel's panel (64 columns) and of
		// the BLAS path's block (attentionBlock, 128 rows): the last
		// panel's or block's one row or column lies on the diagonal.
		{triC, size{65, 65, 7}},
		{triC, size{129, 129, 5}},
		{triALower, size{65, 9, 65}},
		{triALower, size{129, 9, 129}},
		{triAUpper, size{65, 9, 65}},
		{triAUpper, size{129, 9, 129}},
	} {
		for _, tb := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			for _, beta := range []float64{-0.4, 0} {
				transA, transB := tb[0], tb[1]
				m, n, k := tc.size.m, tc.size.n, tc.size.k
				name := fmt.Sprintf("tri%d/%dx%dx%d/transA=%v/transB=%v/beta=%g", tc.tri, m, n, k, transA, transB, beta)
				t.Run(name, func(t *testing.T) {
					// A and B sit inside wider matrices, as a head's
					// columns do in qkv.
					const pad = 3
					as, bs := randomSlice(rng, (m+pad)*(k+pad)), randomSlice(rng, (k+pad)*(n+pad))
					a, b := matrix[float64]{as, k + pad, 1}, matrix[float64]{bs, n + pad, 1}
					if transA {
						a = matrix[float64]{as, 1, m + pad}
					}
					if transB {
						b = matrix[float64]{bs, 1, k + pad}
					}
					const alpha = 0.7
					ldc := n + pad
					c0 := randomSlice(rng, m*ldc)
					want := make([]float64, len(c0))
					needed := func(i, j int) bool { return tc.tri != triC || j <= i }
					for i := range m {
						for j := range n {
							s := 0.0
							for kk := range k {
								if tc.tri == triALower && kk > i || tc.tri == triAUpper && kk < i {
									continue
								}
								s += a.s[i*a.rs+kk*a.cs] * b.s[kk*b.rs+j*b.cs]
							}
							want[i*ldc+j] = alpha*s + beta*c0[i*ldc+j]
						}
					}
					c64 := append([]float64(nil), c0...)
					triGemm(tc.tri, m, n, k, alpha, a, b, beta, c64, ldc, make([]float64, triGemmLen[float64](n, k)))
					c32 := toFloat32(c0)
					a32, b32 := matrix[float32]{toFloat32(a.s), a.rs, a.cs}, matrix[float32]{toFloat32(b.s), b.rs, b.cs}
					triGemm(tc.tri, m, n, k, alpha, a32, b32, float32(beta), c32, ldc, make([]float32, triGemmLen[float32](n, k)))
					for i := range m {
						for j := range n {
							if !needed(i, j) {
								continue
							}
							w := want[i*ldc+j]
							if d := math.Abs(c64[i*ldc+j] - w); d > 1e-12*math.Sqrt(float64(k)) {
								t.Fatalf("float64 C[%d][%d] = %g, want %g", i, j, c64[i*ldc+j], w)
							}
							if d := math.Abs(float64(c32[i*ldc+j]) - w); d > 1e-5*math.Sqrt(float64(k)) {
								t.Fatalf("float32 C[%d][%d] = %g, want %g", i, j, c32[i*ldc+j], w)
							}
						}
					}
				})
			}
		}
	}
}

// TestTriGemmBetaZero checks that with beta 0 the old values of c, NaN
// here, are not read.
func TestTriGemmBetaZero(t *testing.T) {
	const m, n, k = 20, 40, 20
	a := matrix[float32]{toFloat32(randomSlice(rand.New(rand.NewPCG(1, 1)), m*k)), k, 1}
	b := matrix[float32]{toFloat32(randomSlice(rand.New(rand.NewPCG(2, 2)), k*n)), n, 1}
	for _, tri := range []triangle{triNone, triALower, triAUpper} {
		c := make([]float32, m*n)
		for i := range c {
			c[i] = float32(math.NaN())
		}
		triGemm(tri, m, n, k, 1, a, b, 0, c, n, make([]float32, triGemmLen[float32](n, k)))
		for i, v := range c {
			if v != v {
				t.Fatalf("tri%d: C[%d] is NaN", tri, i)
			}
		}
	}
}

// BenchmarkTriGemm times one head's products of the full-scale attention
// layer (512 causal positions, heads of 64 read in place from the packed
// qkv of width 1536) through triGemm and, for comparison, the whole square
// product through the BLAS, single-threaded as the attention kernels run
// them. It reports the rate of the useful arithmetic, the lower triangle's
// 2·hd·S(S+1)/2 FLOPs, for both.
func BenchmarkTriGemm(b *testing.B) {
	const s, hd, ld = 512, 64, 1536
	defer setBLASThreads(Threads())
	setBLASThreads(1)
	rng := rand.New(rand.NewPCG(1, 2))
	qkv, p := toFloat32(randomSlice(rng, s*ld)), toFloat32(randomSlice(rng, s*s))
	out := make([]float32, s*s)
	q, kT := matrix[float32]{qkv, ld, 1}, matrix[float32]{qkv[hd:], 1, ld}
	pm, pT, v := matrix[float32]{p, s, 1}, matrix[float32]{p, 1, s}, matrix[float32]{qkv[2*hd:], ld, 1}
	for _, bc := range []struct {
		name    string
		tri     triangle
		m, n, k int
		a, b    matrix[float32]
	}{
		{"scores", triC, s, s, hd, q, kT},
		{"mix", triALower, s, hd, s, pm, v},
		{"transposed", triAUpper, s, hd, s, pT, v},
	} {
		scratch := make([]float32, triGemmLen[float32](bc.n, bc.k))
		useful := float64(hd) * s * (s + 1)
		for _, impl := range []string{"trigemm", "blas"} {
			b.Run(bc.name+"/"+impl, func(b *testing.B) {
				cpu := startCPU()
				for b.Loop() {
					if impl == "blas" {
						ta, lda := bc.a.blas()
						tb, ldb := bc.b.blas()
						gemmStrided(ta, tb, bc.m, bc.n, bc.k, 1, bc.a.s, lda, bc.b.s, ldb, 0, out, bc.n)
					} else {
						triGemm(bc.tri, bc.m, bc.n, bc.k, 1, bc.a, bc.b, 0, out, bc.n, scratch)
					}
				}
				b.ReportMetric(useful*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				b.ReportMetric(useful*float64(b.N)/cpu.seconds()/1e9, "GFLOP/cpu-s")
			})
		}
	}
}
