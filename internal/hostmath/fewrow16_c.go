//go:build !purego

package hostmath

// #cgo CFLAGS: -O3
// #include "fewrow16.h"
import "C"

import "unsafe"

// fewRow16Pack writes x's pairs transposed into xt (see fewrow16.h).
func fewRow16Pack(x []uint16, m, k int, xt []uint32, lanes int) {
	C.gpuz_fewrow16_pack((*C.uint16_t)(unsafe.Pointer(&x[0])), C.int(m), C.int(k), C.ptrdiff_t(k),
		(*C.uint32_t)(unsafe.Pointer(&xt[0])), C.int(lanes))
}

// fewRow16Columns computes columns [j0, j1) of y = x·wᵀ from the packed xt.
func fewRow16Columns(xt []uint32, lanes, m, n, k int, w []uint16, y []float32, j0, j1 int) {
	C.gpuz_fewrow16_nt((*C.uint32_t)(unsafe.Pointer(&xt[0])), C.int(lanes/16), C.int(m), C.int(k),
		(*C.uint16_t)(unsafe.Pointer(&w[0])), C.ptrdiff_t(k), C.int(j0), C.int(j1), floatPtr(y), C.ptrdiff_t(n))
}
