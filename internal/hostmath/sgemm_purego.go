//go:build purego

package hostmath

// sgemmKernel is false without cgo: every product runs the BLAS.
const sgemmKernel = false

// The blocking of sgemm.h, which a purego build does not run.
const (
	sgemmMR = 12
	sgemmNR = 32
	sgemmKC = 256
)

func sgemmPackB(trans bool, b []float32, ldb, k0, kc, j0, nc int, dst []float32) {
	panic("hostmath: no SGEMM kernel in a purego build")
}

func sgemmTile(transA, transB bool, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, packed, bt []float32, beta float32, c []float32, ldc, i0, i1, j0, j1 int, ap []float32) {
	panic("hostmath: no SGEMM kernel in a purego build")
}
