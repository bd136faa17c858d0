//go:build !purego

package hostmath

// #cgo CFLAGS: -O3
// #include "quant.h"
import "C"

import (
	"encoding/binary"
	"math"
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
	_ [C.GPUZ_Q6_K - int(quant.Q6_K)]struct{}
	_ [int(quant.Q6_K) - C.GPUZ_Q6_K]struct{}
	_ [C.GPUZ_NF4 - int(quant.NF4)]struct{}
	_ [int(quant.NF4) - C.GPUZ_NF4]struct{}
)

func bytePtr(b []byte) *C.uint8_t { return (*C.uint8_t)(unsafe.Pointer(&b[0])) }

// nf4Code is bitsandbytes' dynamic 8-bit code of NF4's absmaxes, which the
// kernels read.
var nf4Code = quant.DynamicCode()

// quantNF4 returns what quant.h's NF4 decoding reads of qw beside a row's
// codes (gpuz_q_nf4), or zeros for the row kinds.
func quantNF4(qw quantWeight) (qabs, gabs *C.uint8_t, offset C.float, levels, code *C.float) {
	if qw.kind != quant.NF4 {
		return nil, nil, 0, nil, nil
	}
	off := math.Float32frombits(binary.LittleEndian.Uint32(qw.w[qw.nf.Offset:]))
	return bytePtr(qw.w[qw.nf.QAbsmax:]), bytePtr(qw.w[qw.nf.GroupAbsmax:]), C.float(off),
		floatPtr(quant.NF4Levels[:]), floatPtr(nf4Code[:])
}

// quantDotC computes y's columns [j0, j1) of y = x·Wᵀ for m ≤ 4 rows of x
// (gpuz_quant_dot).
func quantDotC(qw quantWeight, m int, x, y []float32, j0, j1 int) {
	qabs, gabs, off, levels, code := quantNF4(qw)
	C.gpuz_quant_dot(C.int(quantISA), C.int(qw.kind), floatPtr(x), C.int(m), C.int(qw.k), bytePtr(qw.w),
		C.ptrdiff_t(qw.rb), C.int(j0), C.int(j1), floatPtr(y), C.ptrdiff_t(qw.n), qabs, gabs, off, levels, code)
}

// quantGWC computes dx's columns [32·s0, 32·s1) of dx = g·W for m ≤ 4
// rows of g (gpuz_quant_gw).
func quantGWC(qw quantWeight, m int, g, dx []float32, s0, s1 int) {
	qabs, gabs, off, levels, code := quantNF4(qw)
	C.gpuz_quant_gw(C.int(quantISA), C.int(qw.kind), floatPtr(g), C.int(m), C.int(qw.n), bytePtr(qw.w),
		C.ptrdiff_t(qw.rb), C.int(s0), C.int(s1), floatPtr(dx), C.ptrdiff_t(qw.k), qabs, gabs, off, levels, code)
}

// quantTileC decodes sub-blocks [s0, s1) of W's rows [r0, r0 + rows) into
// dst, rows ldd apart (gpuz_quant_tile).
func quantTileC(qw quantWeight, r0, rows, s0, s1 int, dst []float32, ldd int) {
	qabs, gabs, off, levels, code := quantNF4(qw)
	C.gpuz_quant_tile(C.int(quantISA), C.int(qw.kind), bytePtr(qw.w), C.ptrdiff_t(qw.rb), C.int(r0), C.int(rows),
		C.int(s0), C.int(s1), floatPtr(dst), C.ptrdiff_t(ldd), qabs, gabs, off, levels, code)
}
