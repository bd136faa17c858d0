package hostmath

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// sgemmCase is one product of TestSgemm: shape, transposes, the padding
// of each operand's rows beyond their length (a stride wider than the
// matrix), alpha and beta, whether B is packed whole before the tiles
// run or by each tile, and into how many stripes the terms are cut
// (sgemmWith).
type sgemmCase struct {
	transA, transB bool
	m, n, k        int
	pad            int
	alpha, beta    float32
	packB          bool
	stripes        int
}

func (c sgemmCase) String() string {
	return fmt.Sprintf("tA=%v/tB=%v/%dx%dx%d/pad=%d/alpha=%g/beta=%g/packB=%v/stripes=%d", c.transA, c.transB, c.m, c.n, c.k, c.pad, c.alpha, c.beta, c.packB, c.stripes)
}

// sgemmCases are the shapes TestSgemm runs under every transpose: single
// rows, columns and terms; sizes around the micro-kernel's 12 rows and 32
// columns (its tails: 1, 5, 11, 13, 17, 31, 33 left over); around its
// blocks of 256 terms; and tiles of 192 rows and 1024 columns with tails.
var sgemmCases = []struct{ m, n, k int }{
	{1, 1, 1}, {1, 5, 17}, {5, 1, 33}, {17, 33, 1}, {5, 17, 33},
	{11, 31, 5}, {12, 32, 256}, {13, 33, 257}, {24, 64, 100}, {100, 100, 100},
	{33, 17, 513}, {193, 47, 300}, {37, 1025, 40}, {200, 97, 17},
}

// TestSgemm checks gpuz's own SGEMM against a float64 product for every
// pair of transposes over sgemmCases, with dense and padded operands, with
// alpha and beta other than 1 and 0, B packed whole or by the tiles, and
// the terms of products of more than one block cut into stripes (the last
// one shorter, or fewer stripes than asked). The float32 result is within the
// worst-case bound of a k-term float32 sum of the exact value,
// γ_k·(|alpha|·Σ|a||b| + |beta·c|) with γ_k ≈ (k+2)·2⁻²⁴; the padding of c
// must stay untouched.
func TestSgemm(t *testing.T) {
	if !sgemmKernel {
		t.Skip("no SGEMM kernel on this CPU or build")
	}
	var cases []sgemmCase
	for _, packB := range []bool{false, true} {
		for _, s := range sgemmCases {
			for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
				cases = append(cases, sgemmCase{tr[0], tr[1], s.m, s.n, s.k, 0, 1, 0, packB, 1})
				if s.k > sgemmKC {
					cases = append(cases, sgemmCase{tr[0], tr[1], s.m, s.n, s.k, 0, 1, 0, packB, 3})
				}
			}
		}
		for _, stripes := range []int{1, 2, 3} {
			cases = append(cases,
				sgemmCase{false, true, 29, 70, 300, 3, 1, 0, packB, stripes},
				sgemmCase{true, false, 70, 29, 300, 5, 1, 0, packB, stripes},
				sgemmCase{false, false, 50, 40, 600, 7, 0.5, 2, packB, stripes},
				sgemmCase{true, true, 26, 90, 70, 1, -1.5, 0.25, packB, stripes},
				sgemmCase{false, true, 13, 33, 257, 2, 1, 1, packB, stripes},
				sgemmCase{true, true, 40, 70, 800, 4, 2, -1, packB, stripes},
			)
		}
	}
	rng := rand.New(rand.NewPCG(3, 5))
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			checkSgemm(t, rng, c)
		})
	}
}

// checkSgemm runs one case of TestSgemm.
func checkSgemm(t *testing.T, rng *rand.Rand, c sgemmCase) {
	t.Helper()
	ra, ca := c.m, c.k
	if c.transA {
		ra, ca = c.k, c.m
	}
	rb, cb := c.k, c.n
	if c.transB {
		rb, cb = c.n, c.k
	}
	lda, ldb, ldc := ca+c.pad, cb+c.pad, c.n+c.pad
	a, b := toFloat32(randomSlice(rng, ra*lda)), toFloat32(randomSlice(rng, rb*ldb))
	out := toFloat32(randomSlice(rng, c.m*ldc))
	before := append([]float32(nil), out...)
	sgemmWith(c.packB, c.stripes, c.transA, c.transB, c.m, c.n, c.k, c.alpha, a, lda, b, ldb, c.beta, out, ldc)
	at := func(i, kk int) float64 {
		if c.transA {
			return float64(a[kk*lda+i])
		}
		return float64(a[i*lda+kk])
	}
	bt := func(kk, j int) float64 {
		if c.transB {
			return float64(b[j*ldb+kk])
		}
		return float64(b[kk*ldb+j])
	}
	gamma := float64(c.k+2) * 0x1p-24
	for i := range c.m {
		for j := range ldc {
			got := out[i*ldc+j]
			if j >= c.n {
				if got != before[i*ldc+j] {
					t.Fatalf("c[%d][%d] (padding) changed from %g to %g", i, j, before[i*ldc+j], got)
				}
				continue
			}
			sum, abs := 0.0, 0.0
			for kk := range c.k {
				sum += at(i, kk) * bt(kk, j)
				abs += math.Abs(at(i, kk) * bt(kk, j))
			}
			old := float64(before[i*ldc+j])
			want := float64(c.alpha)*sum + float64(c.beta)*old
			bound := gamma*(math.Abs(float64(c.alpha))*abs+math.Abs(float64(c.beta)*old)) + 1e-30
			if diff := math.Abs(float64(got) - want); diff > bound {
				t.Fatalf("c[%d][%d] = %g, want %g (off by %.3g, bound %.3g)", i, j, got, want, diff, bound)
			}
		}
	}
}

// TestSgemmDeterministic checks that gpuz's own SGEMM gives bit-identical
// results whatever the thread count (1, 2, 3 and 5 workers split the tiles
// differently) and whether B is packed whole (odd counts) or by the tiles,
// for a product large enough to make many tiles and blocks of
// terms, under every pair of transposes, its terms in one stripe or three.
func TestSgemmDeterministic(t *testing.T) {
	if !sgemmKernel {
		t.Skip("no SGEMM kernel on this CPU or build")
	}
	defer SetThreads(Threads())
	const m, n, k = 401, 1100, 530
	rng := rand.New(rand.NewPCG(7, 11))
	a, b := toFloat32(randomSlice(rng, m*k)), toFloat32(randomSlice(rng, k*n))
	for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
		lda, ldb := k, n
		if tr[0] {
			lda = m
		}
		if tr[1] {
			ldb = k
		}
		for _, stripes := range []int{1, 3} {
			var first []float32
			for _, threads := range []int{1, 2, 3, 5} {
				if got := SetThreads(threads); got != threads {
					t.Skipf("SetThreads(%d) gave %d", threads, got)
				}
				c := make([]float32, m*n)
				sgemmWith(threads%2 == 1, stripes, tr[0], tr[1], m, n, k, 1, a, lda, b, ldb, 0, c, n)
				if first == nil {
					first = c
					continue
				}
				for i := range c {
					if math.Float32bits(c[i]) != math.Float32bits(first[i]) {
						t.Fatalf("tA=%v tB=%v stripes=%d: %d threads: c[%d] = %g, 1 thread: %g", tr[0], tr[1], stripes, threads, i, c[i], first[i])
					}
				}
			}
		}
	}
}

// sgemmShapes are the float32 products of the full-scale workloads that
// gpuz's own SGEMM may run: the attention model's Linear layers at 30 × 512
// tokens and d-model 512 (in_proj to 1536 columns, out_proj and ff to 512,
// the head to a vocabulary of 1024: forward x·Wᵀ, input gradient g·W,
// weight gradient gᵀ·x), and the linear model's gradients at batch 30 and
// width 2000 (its forward product runs the few-row kernel); and two small
// squares, below and above the fewest multiply-adds that useSgemm takes.
var sgemmShapes = []struct {
	name           string
	transA, transB bool
	m, n, k        int
}{
	{"attn-qkv-fwd", false, true, 15360, 1536, 512},
	{"attn-ff-fwd", false, true, 15360, 512, 512},
	{"attn-head-fwd", false, true, 15360, 1024, 512},
	{"attn-qkv-dx", false, false, 15360, 512, 1536},
	{"attn-ff-dx", false, false, 15360, 512, 512},
	{"attn-qkv-dw", true, false, 1536, 512, 15360},
	{"attn-ff-dw", true, false, 512, 512, 15360},
	{"linear-dx", false, false, 30, 2000, 2000},
	{"linear-dw", true, false, 2000, 2000, 30},
	{"square-128", false, false, 128, 128, 128}, // 2^21 multiply-adds: the BLAS runs it
	{"square-256", false, true, 256, 256, 256},
}

// BenchmarkSgemm times the products of sgemmShapes by gpuz's own SGEMM
// (impl=gpuz) and by the BLAS (impl=blas: OpenBLAS, whose kernels
// OPENBLAS_CORETYPE chooses) on the kernels' threads, and reports GFLOP/s
// per second and per CPU-second of the process (on a machine shared with
// other work, the second says more; OpenBLAS's idle threads spinning after
// a product count in it).
// The sub-benchmarks are named shape=S/impl=I, so that
// `benchstat -col /impl` sets the two side by side.
func BenchmarkSgemm(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, s := range sgemmShapes {
		lda, ldb := s.k, s.n
		if s.transA {
			lda = s.m
		}
		if s.transB {
			ldb = s.k
		}
		x, y := toFloat32(randomSlice(rng, s.m*s.k)), toFloat32(randomSlice(rng, s.k*s.n))
		c := toFloat32(randomSlice(rng, s.m*s.n)) // its pages faulted in before timing
		for _, impl := range []struct {
			name string
			run  func()
		}{
			{"gpuz", func() { sgemm(s.transA, s.transB, s.m, s.n, s.k, 1, x, lda, y, ldb, 0, c, s.n) }},
			{"blas", func() { blasSgemm(s.transA, s.transB, s.m, s.n, s.k, 1, x, lda, y, ldb, 0, c, s.n) }},
		} {
			if impl.name == "gpuz" && !sgemmKernel {
				continue
			}
			b.Run(fmt.Sprintf("shape=%s/impl=%s", s.name, impl.name), func(b *testing.B) {
				impl.run() // the scratch and c's pages in place before timing
				cpu := startCPU()
				for b.Loop() {
					impl.run()
				}
				flops := 2 * float64(s.m) * float64(s.n) * float64(s.k) * float64(b.N)
				b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				b.ReportMetric(flops/cpu.seconds()/1e9, "GFLOP/cpu-s")
			})
		}
	}
}

// TestSgemmMinWorkName checks that the messages name the threshold in force.
func TestSgemmMinWorkName(t *testing.T) {
	if got := fmt.Sprintf("2^%d", bits.TrailingZeros(sgemmMinWork)); sgemmMinWork&(sgemmMinWork-1) != 0 || got != sgemmMinWorkName {
		t.Errorf("sgemmMinWork = %d, named %q", sgemmMinWork, sgemmMinWorkName)
	}
}
