//go:build !purego

package hostmath

// #cgo CFLAGS: -O3
// #include "layernorm.h"
import "C"

import "unsafe"

// layerNormAVX512 says whether the CPU runs the C LayerNorm kernels
// (layernorm.h); without AVX-512 the Go loops run.
var layerNormAVX512 = C.gpuz_layernorm_avx512() != 0

// layerNormFast runs LayerNorm on float32 rows in C when it can and
// reports whether it did.
func layerNormFast(y, x, gamma, beta any, eps float64) bool {
	y32, ok := y.([]float32)
	if !ok || !layerNormAVX512 || len(y32) == 0 {
		return false
	}
	x32, g32, b32 := x.([]float32), gamma.([]float32), beta.([]float32)
	C.gpuz_layernorm_f32(f32p(y32), f32p(x32), f32p(g32), f32p(b32), C.size_t(len(x32)/len(g32)), C.size_t(len(g32)), C.float(eps))
	return true
}

// layerNormInputGradFast runs LayerNormInputGrad on float32 rows in C when
// it can and reports whether it did.
func layerNormInputGradFast(dx, x, gamma, g any, eps float64) bool {
	dx32, ok := dx.([]float32)
	if !ok || !layerNormAVX512 || len(dx32) == 0 {
		return false
	}
	x32, gm32, g32 := x.([]float32), gamma.([]float32), g.([]float32)
	C.gpuz_layernorm_input_grad_f32(f32p(dx32), f32p(x32), f32p(gm32), f32p(g32), C.size_t(len(x32)/len(gm32)), C.size_t(len(gm32)), C.float(eps))
	return true
}

// layerNormWeightGradFast adds the float32 rows' Σ g ⊙ x̂ into acc in C
// when it can and reports whether it did.
func layerNormWeightGradFast(acc []float64, x, g any, eps float64) bool {
	x32, ok := x.([]float32)
	if !ok || !layerNormAVX512 || len(x32) == 0 {
		return false
	}
	g32 := g.([]float32)
	C.gpuz_layernorm_weight_grad_f32((*C.double)(unsafe.Pointer(&acc[0])), f32p(x32), f32p(g32), C.size_t(len(x32)/len(acc)), C.size_t(len(acc)), C.float(eps))
	return true
}

func f32p(s []float32) *C.float { return (*C.float)(unsafe.Pointer(&s[0])) }
