package hostmath

import (
	"fmt"
	"sync"

	"gpuz/internal/half"
)

// GemmBF16 computes c = alpha·op(a)·op(b) + beta·c, where a and b hold
// bf16 values (bit patterns, as package half converts them), c is float32,
// op(a) is m×k and op(b) is k×n, row-major with row strides lda, ldb and
// ldc (of a and b as stored: transA and transB select the transposes, as
// Gemm's do). The products of bf16 values are exact in float32 and are
// summed in float32. It runs the path BF16Path names; the paths sum in
// different orders, so their results differ in the last bits. a, b and c
// must not overlap; a slice too short for its matrix panics.
func GemmBF16(transA, transB bool, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	checkOperands(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	switch {
	case m == 0 || n == 0:
		return
	case k == 0: // c = beta·c, c not read when beta is 0, as BLAS does
		for i := range m {
			row := c[i*ldc : i*ldc+n]
			for j := range row {
				if beta == 0 {
					row[j] = 0
				} else {
					row[j] *= beta
				}
			}
		}
		return
	}
	if !transA && transB && alpha == 1 && beta == 0 && lda == k && ldb == k && ldc == n && useFewRows16(m, n, k) {
		fewRowsNT16(m, n, k, a, b, c)
		return
	}
	if k >= bf16DotMinK && gemmBF16Fast(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) {
		return
	}
	gemmConverted(bf16ToFloat32s, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// GemmFP16 is GemmBF16 for IEEE binary16 operands: they are converted to
// float32 (exactly) and multiplied by the BLAS's SGEMM, summing in float32;
// the CPU has no fp16 dot product to do better.
func GemmFP16(transA, transB bool, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	checkOperands(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	gemmConverted(fp16ToFloat32s, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// gemmConverted converts a and b to float32 with conv, then runs SGEMM.
func gemmConverted(conv func([]float32, []uint16), transA, transB bool, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	ra, ca, rb, cb := stored(transA, transB, m, n, k)
	fa, fb := toFloat32Scratch(conv, a, ra, ca, lda), toFloat32Scratch(conv, b, rb, cb, ldb)
	gemmStrided(transA, transB, m, n, k, alpha, *fa, max(ca, 1), *fb, max(cb, 1), beta, c, ldc)
	scratch.Put(fa)
	scratch.Put(fb)
}

// bf16DotMinK is the fewest terms per entry for which GemmBF16 runs the
// AVX512_BF16 kernel: below it the kernel's packing costs more than the
// dot products save, and the convert path is faster (BenchmarkGemmBF16:
// linear training's weight gradient, 30 terms, 32 GFLOP/s against 55 on
// the convert path; its input gradient, 2000 terms, 53 against 28). The
// tests set it to 0 to run the kernel on every shape.
var bf16DotMinK = 64

// BF16Path names the path GemmBF16 runs on this CPU in this build: "AVX512_BF16
// kernel (64 terms or more; convert + … below)" (gpuz's own, bf16.h, where
// it pays: bf16DotMinK), or on CPUs without AVX512_BF16 the inputs
// converted to float32, then the float32 product (convertPath).
func BF16Path() string {
	if bf16Dot {
		return fmt.Sprintf("AVX512_BF16 kernel (%d terms or more; %s below)", bf16DotMinK, convertPath())
	}
	return convertPath()
}

// FP16Path names the path GemmFP16 runs: the conversion and the float32
// product (no CPU gpuz supports has an fp16 dot product).
func FP16Path() string { return convertPath() }

// convertPath names the path of the 16-bit products that convert their
// inputs to float32: "convert + " and what runs the float32 product
// (SGEMMPath: "gpuz AVX-512 SGEMM (…)", "OpenBLAS 0.3.21 (Haswell
// kernels)", "gonum (pure Go)").
func convertPath() string { return "convert + " + SGEMMPath() }

// stored returns the rows and columns of a and b as stored for op(a) m×k
// and op(b) k×n.
func stored(transA, transB bool, m, n, k int) (ra, ca, rb, cb int) {
	ra, ca, rb, cb = m, k, k, n
	if transA {
		ra, ca = k, m
	}
	if transB {
		rb, cb = n, k
	}
	return ra, ca, rb, cb
}

// checkOperands panics unless slices of lengths na, nb and nc hold a
// product's a, b and c with row strides lda, ldb and ldc.
func checkOperands(transA, transB bool, m, n, k, na, lda, nb, ldb, nc, ldc int) {
	ra, ca, rb, cb := stored(transA, transB, m, n, k)
	checkMatrix("a", na, ra, ca, lda)
	checkMatrix("b", nb, rb, cb, ldb)
	checkMatrix("c", nc, m, n, ldc)
}

// checkMatrix panics unless a slice of length n holds a rows×cols matrix
// with row stride ld.
func checkMatrix(name string, n, rows, cols, ld int) {
	if rows < 0 || cols < 0 || ld < max(cols, 1) {
		panic(fmt.Sprintf("hostmath: GemmBF16: %s is %d×%d with row stride %d", name, rows, cols, ld))
	}
	if rows > 0 && cols > 0 && n < (rows-1)*ld+cols {
		panic(fmt.Sprintf("hostmath: GemmBF16: %s (%d×%d, stride %d) needs %d elements, has %d", name, rows, cols, ld, (rows-1)*ld+cols, n))
	}
}

// scratch holds the float32 copies the convert path multiplies, so that
// repeated products do not allocate (and fault in) fresh memory each time.
var scratch = sync.Pool{New: func() any { return new([]float32) }}

// toFloat32Scratch converts the rows×cols bf16 matrix x (row stride ld)
// into a dense float32 matrix in a buffer from scratch.
func toFloat32Scratch(conv func([]float32, []uint16), x []uint16, rows, cols, ld int) *[]float32 {
	p := scratch.Get().(*[]float32)
	if cap(*p) < rows*cols {
		*p = make([]float32, rows*cols)
	}
	*p = (*p)[:rows*cols]
	if rows*cols == 0 {
		return p
	}
	if ld == cols {
		dst, src := *p, x[:rows*cols]
		parallelFor(len(src), 16, func(lo, hi int) { conv(dst[lo:hi], src[lo:hi]) })
		return p
	}
	dst := *p
	parallelFor(rows*cols, cols, func(lo, hi int) {
		for r := lo / cols; r < hi/cols; r++ {
			conv(dst[r*cols:(r+1)*cols], x[r*ld:r*ld+cols])
		}
	})
	return p
}

// Tile sizes of the bf16 kernel (bf16.h's GPUZ_MR and GPUZ_NR): the work is
// split between threads in whole tiles.
const bf16MR, bf16NR = 6, 64

// parallelTiles splits an m×n product between the threads, by columns in
// whole column panels when there are enough of them, else by rows, and
// calls body for each part's rows [i0, i1) and columns [j0, j1).
func parallelTiles(m, n int, body func(i0, i1, j0, j1 int)) {
	workers := Threads()
	colPanels, rowPanels := (n+bf16NR-1)/bf16NR, (m+bf16MR-1)/bf16MR
	split := func(panels, size, extent int, part func(lo, hi int)) {
		w := min(workers, panels)
		if w <= 1 {
			part(0, extent)
			return
		}
		var wg sync.WaitGroup
		for i := range w {
			lo, hi := panels*i/w*size, min(panels*(i+1)/w*size, extent)
			wg.Add(1)
			go func() {
				defer wg.Done()
				part(lo, hi)
			}()
		}
		wg.Wait()
	}
	if colPanels >= workers || colPanels >= rowPanels {
		split(colPanels, bf16NR, n, func(lo, hi int) { body(0, m, lo, hi) })
		return
	}
	split(rowPanels, bf16MR, m, func(lo, hi int) { body(lo, hi, 0, n) })
}

// BF16ToFloat32s converts the bf16 values of src into dst (exactly), with
// AVX-512 where the CPU has it and over the threads for long slices; it
// panics if dst is shorter than src.
func BF16ToFloat32s(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	parallelFor(len(src), 16, func(lo, hi int) { bf16ToFloat32s(dst[lo:hi], src[lo:hi]) })
}

// BF16FromFloat32s converts src to bf16 into dst, rounding to nearest even
// as package half does; see BF16ToFloat32s.
func BF16FromFloat32s(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	parallelFor(len(src), 16, func(lo, hi int) { bf16FromFloat32s(dst[lo:hi], src[lo:hi]) })
}

// FP16ToFloat32s converts the IEEE binary16 values of src into dst
// (exactly); see BF16ToFloat32s.
func FP16ToFloat32s(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	parallelFor(len(src), 16, func(lo, hi int) { fp16ToFloat32s(dst[lo:hi], src[lo:hi]) })
}

// FP16FromFloat32s converts src to IEEE binary16 into dst, rounding to
// nearest even as package half does; see BF16ToFloat32s.
func FP16FromFloat32s(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	parallelFor(len(src), 16, func(lo, hi int) { fp16FromFloat32s(dst[lo:hi], src[lo:hi]) })
}

// HalfToFloat32s converts the values of format f in src into dst: as
// FP16ToFloat32s for fp16, as BF16ToFloat32s for bf16.
func HalfToFloat32s(f half.Format, dst []float32, src []uint16) {
	if f == half.FP16 {
		FP16ToFloat32s(dst, src)
		return
	}
	BF16ToFloat32s(dst, src)
}

// HalfFromFloat32s converts src to format f into dst: as FP16FromFloat32s
// for fp16, as BF16FromFloat32s for bf16.
func HalfFromFloat32s(f half.Format, dst []uint16, src []float32) {
	if f == half.FP16 {
		FP16FromFloat32s(dst, src)
		return
	}
	BF16FromFloat32s(dst, src)
}
