//go:build purego

package hostmath

import "gpuz/internal/half"

// Without cgo the conversions are package half's Go loops and GemmBF16
// converts to float32 for gonum's SGEMM.

var halfAVX512, bf16Dot = false, false

func bf16ToFloat32s(dst []float32, src []uint16)   { half.BF16ToFloat32s(dst, src) }
func bf16FromFloat32s(dst []uint16, src []float32) { half.BF16FromFloat32s(dst, src) }
func fp16ToFloat32s(dst []float32, src []uint16)   { half.FP16ToFloat32s(dst, src) }
func fp16FromFloat32s(dst []uint16, src []float32) { half.FP16FromFloat32s(dst, src) }

// gemmBF16Fast reports false: the purego build has no bf16 kernel.
func gemmBF16Fast(transA, transB bool, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) bool {
	return false
}
