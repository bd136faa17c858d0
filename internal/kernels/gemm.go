package kernels

import "gonum.org/v1/gonum/blas"

// Gemm computes c = alpha·op(a)·op(b) + beta·c for row-major matrices, where
// op(a) is m×k, op(b) is k×n and c is m×n; transA and transB select the
// transposes. a, b and c must not overlap.
func Gemm[T Float](transA, transB bool, m, n, k int, alpha T, a, b []T, beta T, c []T) {
	if m == 0 || n == 0 {
		return
	}
	tA, lda := blas.NoTrans, k
	if transA {
		tA, lda = blas.Trans, m
	}
	tB, ldb := blas.NoTrans, n
	if transB {
		tB, ldb = blas.Trans, k
	}
	switch c := any(c).(type) {
	case []float32:
		impl.Sgemm(tA, tB, m, n, k, float32(alpha), any(a).([]float32), lda, any(b).([]float32), ldb, float32(beta), c, n)
	case []float64:
		impl.Dgemm(tA, tB, m, n, k, float64(alpha), any(a).([]float64), lda, any(b).([]float64), ldb, float64(beta), c, n)
	}
}
