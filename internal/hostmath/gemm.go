package hostmath

import "gonum.org/v1/gonum/blas"

// Gemm computes c = alpha·op(a)·op(b) + beta·c for row-major matrices, where
// op(a) is m×k, op(b) is k×n and c is m×n; transA and transB select the
// transposes. a, b and c must not overlap. A float32 product of at most 32
// rows against a transposed b (c = a·bᵀ, a linear layer's forward product)
// runs the few-row kernel of fewrow.h where the CPU has AVX-512; the other
// products run as gemmStrided says.
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
// blocks' first elements. Float32 products that useSgemm accepts run gpuz's
// own SGEMM (sgemm.h); the others run the BLAS.
func gemmStrided[T Float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	switch c := any(c).(type) {
	case []float32:
		a, b := any(a).([]float32), any(b).([]float32)
		if useSgemm(m, n, k) {
			sgemm(transA, transB, m, n, k, float32(alpha), a, lda, b, ldb, float32(beta), c, ldc)
			return
		}
		blasSgemm(transA, transB, m, n, k, float32(alpha), a, lda, b, ldb, float32(beta), c, ldc)
	case []float64:
		tA, tB := blasTrans(transA), blasTrans(transB)
		impl.Dgemm(tA, tB, m, n, k, float64(alpha), any(a).([]float64), lda, any(b).([]float64), ldb, float64(beta), c, ldc)
	}
}

// blasSgemm is gemmStrided's float32 product in the BLAS.
func blasSgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	impl.Sgemm(blasTrans(transA), blasTrans(transB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// blasTrans is the BLAS's name for a transpose or none.
func blasTrans(trans bool) blas.Transpose {
	if trans {
		return blas.Trans
	}
	return blas.NoTrans
}
