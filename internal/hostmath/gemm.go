package hostmath

import "gonum.org/v1/gonum/blas"

// Gemm computes c = alpha·op(a)·op(b) + beta·c for row-major matrices, where
// op(a) is m×k, op(b) is k×n and c is m×n; transA and transB select the
// transposes. a, b and c must not overlap. A float32 product of at most 32
// rows against a transposed b (c = a·bᵀ, a linear layer's forward product)
// runs the few-row kernel of fewrow.h where the CPU has AVX-512.
func Gemm[T Float](transA, transB bool, m, n, k int, alpha T, a, b []T, beta T, c []T) {
	lda, ldb := k, n
	if transA {
		lda = m
	}
	if transB {
		ldb = k
	}
	if yc, ok := any(c).([]float32); ok && !transA && transB && alpha == 1 && beta == 0 && useFewRows(m, n, k) {
		fewRowsNT(m, n, k, any(a).([]float32), any(b).([]float32), yc)
		return
	}
	gemmStrided(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, n)
}

// gemmStrided is Gemm with explicit row strides lda, ldb and ldc, so that a
// block of a larger matrix, such as one head's columns of a packed matrix
// or a tile of an image, is multiplied in place; a, b and c start at the
// blocks' first elements.
func gemmStrided[T Float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	tA, tB := blas.NoTrans, blas.NoTrans
	if transA {
		tA = blas.Trans
	}
	if transB {
		tB = blas.Trans
	}
	switch c := any(c).(type) {
	case []float32:
		impl.Sgemm(tA, tB, m, n, k, float32(alpha), any(a).([]float32), lda, any(b).([]float32), ldb, float32(beta), c, ldc)
	case []float64:
		impl.Dgemm(tA, tB, m, n, k, float64(alpha), any(a).([]float64), lda, any(b).([]float64), ldb, float64(beta), c, ldc)
	}
}
