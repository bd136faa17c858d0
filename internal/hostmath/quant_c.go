//go:build !purego

package hostmath

// #cgo CFLAGS: -O3
// #include "quant.h"
import "C"

import (
	"unsafe"

	"gpuz/internal/quant"
)

// The instruction sets of quant.h's kernels; quantGo runs quant.go's Go
// loops.
const (
	quantGo     = C.GPUZ_Q_GO
	quantAVX2   = C.GPUZ_Q_AVX2
	quantAVX512 = C.GPUZ_Q_AVX512
)

// quantISA is the instruction set the products by a quantized weight run:
// the best this CPU has. Tests set it to each one the CPU supports.
var quantISA = int(C.gpuz_quant_isa())

// The kind numbers of quant.h must be quant.Kind's: these fail to compile
// otherwise.
var (
	_ [C.GPUZ_Q8_0 - int(quant.Q8_0)]struct{}
	_ [int(quant.Q8_0) - C.GPUZ_Q8_0]struct{}
	_ [C.GPUZ_Q4_0 - int(quant.Q4_0)]struct{}
	_ [int(quant.Q4_0) - C.GPUZ_Q4_0]struct{}
	_ [C.GPUZ_Q4_K - int(quant.Q4_K)]struct{}
	_ [int(quant.Q4_K) - C.GPUZ_Q4_K]struct{}
)

func bytePtr(b []byte) *C.uint8_t { return (*C.uint8_t)(unsafe.Pointer(&b[0])) }

// quantDotC computes y's columns [j0, j1) of y = x·Wᵀ for m ≤ 4 rows of x
// (gpuz_quant_dot); w holds W's rows, rb bytes each, from row 0.
func quantDotC(kind quant.Kind, m, n, k int, x []float32, w []byte, rb int, y []float32, j0, j1 int) {
	C.gpuz_quant_dot(C.int(quantISA), C.int(kind), floatPtr(x), C.int(m), C.int(k), bytePtr(w), C.ptrdiff_t(rb),
		C.int(j0), C.int(j1), floatPtr(y), C.ptrdiff_t(n))
}

// quantGWC computes dx's columns [32·s0, 32·s1) of dx = g·W for m ≤ 4
// rows of g (gpuz_quant_gw).
func quantGWC(kind quant.Kind, m, n, k int, g []float32, w []byte, rb int, dx []float32, s0, s1 int) {
	C.gpuz_quant_gw(C.int(quantISA), C.int(kind), floatPtr(g), C.int(m), C.int(n), bytePtr(w), C.ptrdiff_t(rb),
		C.int(s0), C.int(s1), floatPtr(dx), C.ptrdiff_t(k))
}

// quantTileC decodes sub-blocks [s0, s1) of the rows of W at w, rows of
// them rb bytes apart, into dst, rows ldd apart (gpuz_quant_tile).
func quantTileC(kind quant.Kind, w []byte, rb, rows, s0, s1 int, dst []float32, ldd int) {
	C.gpuz_quant_tile(C.int(quantISA), C.int(kind), bytePtr(w), C.ptrdiff_t(rb), C.int(rows), C.int(s0), C.int(s1),
		floatPtr(dst), C.ptrdiff_t(ldd))
}
