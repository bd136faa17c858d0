//go:build !purego

package hostmath

// #cgo CFLAGS: -O3
// #include "bf16.h"
import "C"

import (
	"fmt"
	"unsafe"

	"gpuz/internal/half"
)

// halfAVX512 says whether the CPU runs the C conversions (bf16.h); without
// AVX-512 package half's Go loops run. Tests clear it to run those.
var halfAVX512 = C.gpuz_half_avx512() != 0

// bf16Dot says whether the CPU has the AVX512_BF16 dot instruction, and so
// whether GemmBF16 runs the kernel of bf16.h rather than converting to
// float32 for the BLAS. Tests and benchmarks set it to run each path.
var bf16Dot = C.gpuz_bf16_dot() != 0

func bf16ToFloat32s(dst []float32, src []uint16) {
	if !halfAVX512 || len(src) == 0 {
		half.BF16ToFloat32s(dst, src)
		return
	}
	dst = dst[:len(src)]
	C.gpuz_bf16_to_f32_avx512((*C.float)(&dst[0]), (*C.uint16_t)(&src[0]), C.size_t(len(src)))
}

func bf16FromFloat32s(dst []uint16, src []float32) {
	if !halfAVX512 || len(src) == 0 {
		half.BF16FromFloat32s(dst, src)
		return
	}
	dst = dst[:len(src)]
	C.gpuz_bf16_from_f32_avx512((*C.uint16_t)(&dst[0]), (*C.float)(&src[0]), C.size_t(len(src)))
}

func fp16ToFloat32s(dst []float32, src []uint16) {
	if !halfAVX512 || len(src) == 0 {
		half.FP16ToFloat32s(dst, src)
		return
	}
	dst = dst[:len(src)]
	C.gpuz_fp16_to_f32_avx512((*C.float)(&dst[0]), (*C.uint16_t)(&src[0]), C.size_t(len(src)))
}

func fp16FromFloat32s(dst []uint16, src []float32) {
	if !halfAVX512 || len(src) == 0 {
		half.FP16FromFloat32s(dst, src)
		return
	}
	dst = dst[:len(src)]
	C.gpuz_fp16_from_f32_avx512((*C.uint16_t)(&dst[0]), (*C.float)(&src[0]), C.size_t(len(src)))
}

// gemmBF16Fast computes GemmBF16's product with the AVX512_BF16 kernel
// of bf16.h, spread over the threads, when bf16Dot is set, and reports
// whether it did.
func gemmBF16Fast(transA, transB bool, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) bool {
	if !bf16Dot {
		return false
	}
	pa, pb := (*C.uint16_t)(unsafe.Pointer(unsafe.SliceData(a))), (*C.uint16_t)(unsafe.Pointer(unsafe.SliceData(b)))
	parallelTiles(m, n, func(i0, i1, j0, j1 int) {
		if C.gpuz_gemm_bf16(cBool(transA), cBool(transB), C.size_t(k), C.float(alpha), pa, C.size_t(lda), pb, C.size_t(ldb),
			C.float(beta), (*C.float)(&c[0]), C.size_t(ldc), C.size_t(i0), C.size_t(i1), C.size_t(j0), C.size_t(j1)) != 0 {
			panic(fmt.Sprintf("hostmath: GemmBF16 could not allocate its packing buffers (k = %d)", k))
		}
	})
	return true
}
