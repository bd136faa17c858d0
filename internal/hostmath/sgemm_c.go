//go:build !purego

package hostmath

// #cgo CFLAGS: -O3
// #include "sgemm.h"
import "C"

// sgemmKernel reports whether float32 products may run gpuz's own AVX-512
// SGEMM of sgemm.h; elsewhere they run the BLAS.
var sgemmKernel = C.gpuz_sgemm_avx512() != 0

// The blocking of sgemm.h: rows of the micro-kernel, its columns (two
// vectors of 16) and the terms of a block.
const (
	sgemmMR = 12
	sgemmNR = 32
	sgemmKC = 256
)

// The Go constants must be sgemm.h's: these fail to compile otherwise.
var (
	_ [sgemmMR - C.GPUZ_SG_MR]struct{}
	_ [C.GPUZ_SG_MR - sgemmMR]struct{}
	_ [sgemmNR - C.GPUZ_SG_NR]struct{}
	_ [C.GPUZ_SG_NR - sgemmNR]struct{}
	_ [sgemmKC - C.GPUZ_SG_KC]struct{}
	_ [C.GPUZ_SG_KC - sgemmKC]struct{}
)

// sgemmPackB packs B's terms [k0, k0+kc) and columns [j0, j0+nc) into
// panels of sgemmNR columns at dst (see gpuz_sgemm_pack_b).
func sgemmPackB(trans bool, b []float32, ldb, k0, kc, j0, nc int, dst []float32) {
	C.gpuz_sgemm_pack_b(cBool(trans), floatPtr(b), C.ptrdiff_t(ldb), C.int(k0), C.int(kc), C.int(j0), C.int(nc), floatPtr(dst))
}

// sgemmTile computes C's rows [i0, i1) and columns [j0, j1) from B packed
// whole, or when packed is nil from B packed by the tile into bt, a block
// of terms at a time (see gpuz_sgemm_tile); ap is the worker's scratch for
// packed rows of A.
func sgemmTile(transA, transB bool, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, packed, bt []float32, beta float32, c []float32, ldc, i0, i1, j0, j1 int, ap []float32) {
	C.gpuz_sgemm_tile(cBool(transA), cBool(transB), C.int(n), C.int(k), C.float(alpha), floatPtr(a), C.ptrdiff_t(lda), floatPtr(b), C.ptrdiff_t(ldb),
		floatPtr(packed), floatPtr(bt), C.float(beta), floatPtr(c), C.ptrdiff_t(ldc), C.int(i0), C.int(i1), C.int(j0), C.int(j1), floatPtr(ap))
}
