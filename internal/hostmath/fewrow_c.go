//go:build !purego

package hostmath

// #cgo CFLAGS: -O3
// #include "fewrow.h"
import "C"

// fewRowKernel reports whether float32 products of few rows against a
// transposed weight run the AVX-512 kernel of fewrow.h; elsewhere they run
// the BLAS.
var fewRowKernel = C.gpuz_fewrow_avx512() != 0

// fewRowPack writes xt[kk·lanes + r] = x[r·k + kk], zero for rows m to
// lanes − 1 (see fewrow.h).
func fewRowPack(x []float32, m, k int, xt []float32, lanes int) {
	C.gpuz_fewrow_pack(floatPtr(x), C.int(m), C.int(k), C.ptrdiff_t(k), floatPtr(xt), C.int(lanes))
}

// fewRowColumns computes columns [j0, j1) of y = x·wᵀ from the packed xt.
func fewRowColumns(xt []float32, lanes, m, n, k int, w, y []float32, j0, j1 int) {
	C.gpuz_fewrow_nt(floatPtr(xt), C.int(lanes/16), C.int(m), C.int(k), floatPtr(w), C.ptrdiff_t(k),
		C.int(j0), C.int(j1), floatPtr(y), C.ptrdiff_t(n))
}

// fewRowDotColumns computes columns [j0, j1) of y = x·wᵀ (y m×n, m at most
// fewRowsDotMax) by dot products along k (gpuz_fewrow_dot).
func fewRowDotColumns(x []float32, m, k int, w, y []float32, n, j0, j1 int) {
	C.gpuz_fewrow_dot(floatPtr(x), C.int(m), C.int(k), floatPtr(w), C.ptrdiff_t(k), C.int(j0), C.int(j1),
		floatPtr(y), C.ptrdiff_t(n))
}
