//go:build !purego

package hostmath

// #cgo CFLAGS: -O3
// #cgo LDFLAGS: -lm
// #include "softmax.h"
import "C"

import "unsafe"

// The float32 softmax kernels in C (softmax.h), vectorised with AVX-512 or
// AVX2 where the CPU has them. See the Go versions in softmax.go for what
// each computes.

// softmaxISA is the instruction set the C kernels use: the best the CPU
// has. Tests set it to each one the CPU supports.
var softmaxISA = int(C.gpuz_softmax_isa())

// softmaxISAs lists the instruction sets of the C kernels, worst first.
var softmaxISAs = []struct {
	name string
	isa  int
}{{"scalar", C.GPUZ_ISA_SCALAR}, {"avx2", C.GPUZ_ISA_AVX2}, {"avx512", C.GPUZ_ISA_AVX512}}

func softmaxRowsF32(p []float32, rows, n, ld, r0 int, causal bool) {
	if rows == 0 {
		return
	}
	C.gpuz_softmax_rows_f32(C.int(softmaxISA), (*C.float)(unsafe.Pointer(&p[0])), C.size_t(rows), C.size_t(n), C.size_t(ld), C.size_t(r0), cBool(causal))
}

func softmaxGradRowsF32(ds, p, dp []float32, rows, n, ld, r0 int, causal bool) {
	if rows == 0 {
		return
	}
	C.gpuz_softmax_grad_rows_f32(C.int(softmaxISA), (*C.float)(unsafe.Pointer(&ds[0])), (*C.float)(unsafe.Pointer(&p[0])), (*C.float)(unsafe.Pointer(&dp[0])),
		C.size_t(rows), C.size_t(n), C.size_t(ld), C.size_t(r0), cBool(causal))
}

func softmaxScaledRowsF32(dst, x []float32, rows, n int, scale float32, lse []float64) {
	if rows == 0 {
		return
	}
	var l *C.double
	if lse != nil {
		l = (*C.double)(unsafe.Pointer(&lse[0]))
	}
	C.gpuz_softmax_scaled_rows_f32(C.int(softmaxISA), (*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&x[0])), C.size_t(rows), C.size_t(n), C.float(scale), l)
}

func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
