package hostmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gpuz/internal/half"
)

// withPaths runs f once per GemmBF16 path this CPU and build can run: the
// AVX512_BF16 kernel where the CPU has it, on every shape (bf16DotMinK
// 0), and the convert path always.
func withPaths(t testing.TB, f func(path string)) {
	saved, savedMinK := bf16Dot, bf16DotMinK
	defer func() { bf16Dot, bf16DotMinK = saved, savedMinK }()
	bf16DotMinK = 0
	for _, dot := range []bool{false, true} {
		if dot && !saved {
			continue
		}
		bf16Dot = dot
		f(BF16Path())
	}
}

// withConversions runs f with the C conversions where the CPU has them,
// and with package half's Go loops.
func withConversions(t *testing.T, f func(name string)) {
	saved := halfAVX512
	defer func() { halfAVX512 = saved }()
	for _, c := range []bool{false, true} {
		if c && !saved {
			continue
		}
		halfAVX512 = c
		f(map[bool]string{false: "go", true: "avx512"}[c])
	}
}

// TestConversionsMatchHalf checks the bulk conversions against package
// half's scalar ones bit for bit: every 16-bit pattern to float32, and to
// 16 bits every pattern's value, the midpoints between neighbours and
// their float32 neighbours, and random float32 bits (NaNs included), at a
// length that leaves a tail past the vector width.
func TestConversionsMatchHalf(t *testing.T) {
	patterns := make([]uint16, 1<<16+5)
	for i := range patterns {
		patterns[i] = uint16(i)
	}
	var floats []float32
	for p := range 1 << 16 {
		v := half.FP16ToFloat32(uint16(p))
		w := half.BF16ToFloat32(uint16(p))
		floats = append(floats, v, math.Nextafter32(v, 0), math.Nextafter32(v, float32(math.Inf(1))), w, math.Nextafter32(w, 0))
		if p&0x7fff < 0x7bff {
			floats = append(floats, (v+half.FP16ToFloat32(uint16(p)+1))/2)
		}
	}
	rng := rand.New(rand.NewPCG(16, 21))
	for range 1 << 16 {
		floats = append(floats, math.Float32frombits(rng.Uint32()))
	}
	floats = floats[:len(floats)/16*16+7]
	for _, tc := range []struct {
		name      string
		to, toRef func([]float32, []uint16)
		fr, frRef func([]uint16, []float32)
	}{
		{"bf16", BF16ToFloat32s, half.BF16ToFloat32s, BF16FromFloat32s, half.BF16FromFloat32s},
		{"fp16", FP16ToFloat32s, half.FP16ToFloat32s, FP16FromFloat32s, half.FP16FromFloat32s},
	} {
		withConversions(t, func(impl string) {
			got, want := make([]float32, len(patterns)), make([]float32, len(patterns))
			tc.to(got, patterns)
			tc.toRef(want, patterns)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s %s: %#04x → %#08x, want %#08x", tc.name, impl, patterns[i], math.Float32bits(got[i]), math.Float32bits(want[i]))
				}
			}
			h, hRef := make([]uint16, len(floats)), make([]uint16, len(floats))
			tc.fr(h, floats)
			tc.frRef(hRef, floats)
			for i := range h {
				if h[i] != hRef[i] {
					t.Fatalf("%s %s: %g (%#08x) → %#04x, want %#04x", tc.name, impl, floats[i], math.Float32bits(floats[i]), h[i], hRef[i])
				}
			}
		})
	}
}

// bf16Case is a GemmBF16 problem: sizes, transposes, padding of the row
// strides beyond the rows' lengths, and alpha and beta.
type bf16Case struct {
	transA, transB bool
	m, n, k        int
	pad            int
	alpha, beta    float32
}

// bf16Inputs returns a case's a, b (bf16 of normal random values) and c
// (random float32), stored with its strides.
func (tc bf16Case) inputs(rng *rand.Rand) (a []uint16, lda int, b []uint16, ldb int, c []float32, ldc int) {
	ra, ca := tc.m, tc.k
	if tc.transA {
		ra, ca = ca, ra
	}
	rb, cb := tc.k, tc.n
	if tc.transB {
		rb, cb = cb, rb
	}
	lda, ldb, ldc = ca+tc.pad, cb+tc.pad, tc.n+tc.pad
	a, b, c = make([]uint16, ra*lda), make([]uint16, rb*ldb), make([]float32, tc.m*ldc)
	for i := range a {
		a[i] = half.BF16FromFloat32(float32(rng.NormFloat64()))
	}
	for i := range b {
		b[i] = half.BF16FromFloat32(float32(rng.NormFloat64()))
	}
	for i := range c {
		c[i] = float32(rng.NormFloat64())
	}
	return a, lda, b, ldb, c, ldc
}

// TestGemmBF16 checks every path against the product of the same bf16
// values in float64, element by element, within the bound of float32
// summation: |c − exact| ≤ (k+2)·u·(|alpha|·Σ|a·b| + |beta·c₀|), u = 2⁻²⁴.
// Each product of two bf16 values is exact in float32 (8 × 8 significant
// bits); a sum of k terms in any order errs by at most (k−1)·u·Σ|terms|
// (Higham, Accuracy and Stability of Numerical Algorithms, §3.1), and the
// scaling by alpha, the add of beta·c and the kernel's per-block sums add
// a few units more, covered by the +2 (and k+2 ≥ 2 blocks' worth for the k
// here). The bound holds for any summation order, so neither path's order
// is assumed; a wrong element, a lost k pair or a misplaced tile errs by
// about one term, |a·b| ~ Σ|a·b|/k, far above it. Padding beyond each row
// must stay untouched.
func TestGemmBF16(t *testing.T) {
	cases := []bf16Case{
		{false, false, 1, 1, 1, 0, 1, 0},
		{false, true, 30, 200, 64, 0, 1, 0},
		{false, false, 7, 65, 3, 2, 1, 0},
		{true, false, 13, 130, 513, 1, 0.5, 0}, // k past one block (512), odd
		{true, true, 200, 7, 1025, 3, 1, 1},    // rows split between threads, beta
		{false, true, 6, 64, 2, 0, -2, 0.25},   // one whole tile
		{false, false, 400, 70, 20, 0, 1, 0},   // rows past one block (192)
		{true, true, 5, 600, 9, 5, 1, -1},      // columns past one block (512)
		{false, false, 3, 17, 0, 1, 1, 0.5},    // k = 0: c = beta·c
		{true, false, 61, 129, 1030, 1, 1, 1},  // every tail at once
		{false, true, 512, 64, 512, 0, 1, 0},   // attention's P·V shape, small k for speed
		// Few rows against a transposed weight (fewrow16.h on AVX512_BF16):
		{false, true, 17, 45, 33, 0, 1, 0},   // two row vectors, odd k, a tail of W's rows
		{false, true, 1, 3, 1, 0, 1, 0},      // one row, one term
		{false, true, 16, 15, 3, 0, 1, 0},    // one whole row vector
		{false, true, 32, 29, 2001, 0, 1, 0}, // the most rows, odd k past a few pairs
	}
	rng := rand.New(rand.NewPCG(2, 1))
	withPaths(t, func(path string) {
		for _, tc := range cases {
			name := fmt.Sprintf("%s %v", path, tc)
			a, lda, b, ldb, c, ldc := tc.inputs(rng)
			c0 := append([]float32(nil), c...)
			GemmBF16(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, c, ldc)
			at := func(i, kk int) float64 {
				if tc.transA {
					return float64(half.BF16ToFloat32(a[kk*lda+i]))
				}
				return float64(half.BF16ToFloat32(a[i*lda+kk]))
			}
			bt := func(kk, j int) float64 {
				if tc.transB {
					return float64(half.BF16ToFloat32(b[j*ldb+kk]))
				}
				return float64(half.BF16ToFloat32(b[kk*ldb+j]))
			}
			bad := 0
			for i := range tc.m {
				for j := range ldc {
					got := c[i*ldc+j]
					if j >= tc.n {
						if got != c0[i*ldc+j] {
							t.Fatalf("%s: c[%d][%d] beyond the row was written", name, i, j)
						}
						continue
					}
					var exact, mag float64
					for kk := range tc.k {
						p := at(i, kk) * bt(kk, j)
						exact += p
						mag += math.Abs(p)
					}
					old := float64(c0[i*ldc+j])
					exact = float64(tc.alpha)*exact + float64(tc.beta)*old
					tol := float64(tc.k+2) * 0x1p-24 * (math.Abs(float64(tc.alpha))*mag + math.Abs(float64(tc.beta)*old))
					if d := math.Abs(float64(got) - exact); !(d <= tol) {
						t.Errorf("%s: c[%d][%d] = %g, want %g ± %.3g (off by %.3g)", name, i, j, got, exact, tol, d)
						if bad++; bad == 5 {
							t.FailNow()
						}
					}
				}
			}
		}
	})
}

// TestGemmBF16ShortSlice checks that a slice too short for its matrix
// panics with a message instead of letting the C kernel read past it.
func TestGemmBF16ShortSlice(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Error("no panic for a 2×3 matrix in 5 elements")
		}
	}()
	GemmBF16(false, false, 2, 2, 3, 1, make([]uint16, 5), 3, make([]uint16, 6), 2, 0, make([]float32, 4), 2)
}

// BenchmarkGemmBF16 times GemmBF16 on each path, and float32 Gemm beside
// it, on the workloads' products at their full sizes, and reports GFLOP/s:
// linear's three (batch 30, 2000 wide), attention's projection (30 × 512
// tokens, d-model 512) and one head's score and value products (sequence
// 512, head 64), resnet's im2col products (10 → 30 and 30 → 10 channels,
// 5×5 kernel, a 2 MiB tile of 512-wide rows) and a weight gradient.
func BenchmarkGemmBF16(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, s := range []struct {
		name string
		bf16Case
	}{
		{"linear-forward", bf16Case{false, true, 30, 2000, 2000, 0, 1, 0}},
		{"linear-input-grad", bf16Case{false, false, 30, 2000, 2000, 0, 1, 0}},
		{"linear-weight-grad", bf16Case{true, false, 2000, 2000, 30, 0, 1, 0}},
		{"attention-projection", bf16Case{false, false, 15360, 512, 512, 0, 1, 0}},
		{"attention-scores", bf16Case{false, true, 512, 512, 64, 0, 1, 0}},
		{"attention-values", bf16Case{false, false, 512, 64, 512, 0, 1, 0}},
		{"resnet-conv-10to30", bf16Case{false, false, 30, 2048, 250, 0, 1, 0}},
		{"resnet-conv-30to10", bf16Case{false, false, 10, 512, 750, 0, 1, 0}},
		{"resnet-weight-grad", bf16Case{false, true, 30, 250, 2048, 0, 1, 0}},
	} {
		a, lda, bm, ldb, c, ldc := s.inputs(rng)
		flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
		report := func(b *testing.B) {
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		}
		withPaths(b, func(path string) {
			name := map[bool]string{true: "dot", false: "convert"}[bf16Dot]
			b.Run(s.name+"/"+name, func(b *testing.B) {
				for b.Loop() {
					GemmBF16(s.transA, s.transB, s.m, s.n, s.k, 1, a, lda, bm, ldb, 0, c, ldc)
				}
				report(b)
			})
		})
		fa, fb := make([]float32, len(a)), make([]float32, len(bm))
		BF16ToFloat32s(fa, a)
		BF16ToFloat32s(fb, bm)
		b.Run(s.name+"/float32", func(b *testing.B) {
			for b.Loop() {
				gemmStrided(s.transA, s.transB, s.m, s.n, s.k, 1, fa, lda, fb, ldb, 0, c, ldc)
			}
			report(b)
		})
	}
}

// BenchmarkConversions times the bulk conversions of 2²⁰ elements, in C
// where the CPU has AVX-512 and in package half's Go loops, on one thread.
func BenchmarkConversions(b *testing.B) {
	const n = 1 << 20
	saved := SetThreads(1)
	defer SetThreads(saved)
	rng := rand.New(rand.NewPCG(1, 2))
	src := toFloat32(randomSlice(rng, n))
	h, dst := make([]uint16, n), make([]float32, n)
	savedC := halfAVX512
	defer func() { halfAVX512 = savedC }()
	for _, c := range []bool{false, true} {
		if c && !savedC {
			continue
		}
		halfAVX512 = c
		impl := map[bool]string{false: "go", true: "avx512"}[c]
		for _, bc := range []struct {
			name string
			run  func()
		}{
			{"bf16-from-float32", func() { BF16FromFloat32s(h, src) }},
			{"bf16-to-float32", func() { BF16ToFloat32s(dst, h) }},
			{"fp16-from-float32", func() { FP16FromFloat32s(h, src) }},
			{"fp16-to-float32", func() { FP16ToFloat32s(dst, h) }},
		} {
			b.Run(bc.name+"/"+impl, func(b *testing.B) {
				for b.Loop() {
					bc.run()
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
			})
		}
	}
}
