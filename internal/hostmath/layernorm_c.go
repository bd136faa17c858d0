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
func layerNormFast[T Float](y, x, gamma, beta []T, eps float64) bool {
	p, rows, n, ok := cRows(len(gamma), y, x, gamma, beta)
	if ok {
		C.gpuz_layernorm_f32(p[0], p[1], p[2], p[3], rows, n, C.float(eps))
	}
	return ok
}

// layerNormInputGradFast runs LayerNormInputGrad on float32 rows in C when
// it can and reports whether it did.
func layerNormInputGradFast[T Float](dx, x, gamma, g []T, eps float64) bool {
	p, rows, n, ok := cRows(len(gamma), dx, x, gamma, g)
	if ok {
		C.gpuz_layernorm_input_grad_f32(p[0], p[1], p[2], p[3], rows, n, C.float(eps))
	}
	return ok
}

// layerNormWeightGradFast adds the float32 rows' Σ g ⊙ x̂ into acc in C
// when it can and reports whether it did.
func layerNormWeightGradFast[T Float](acc []float64, x, g []T, eps float64) bool {
	p, rows, n, ok := cRows(len(acc), x, g)
	if ok {
		C.gpuz_layernorm_weight_grad_f32((*C.double)(unsafe.Pointer(&acc[0])), p[0], p[1], rows, n, C.float(eps))
	}
	return ok
}

// cRows returns the slices s (at most four) of a LayerNorm kernel as C
// pointers, with the rows and the columns of the first, rows of cols
// values. ok is false, and the C kernels do not run, unless they hold
// float32 values, the first is not empty and the CPU has AVX-512.
func cRows[T Float](cols int, s ...[]T) (p [4]*C.float, rows, n C.size_t, ok bool) {
	if _, ok := any(s[0]).([]float32); !ok || !layerNormAVX512 || len(s[0]) == 0 {
		return p, 0, 0, false
	}
	for i, v := range s {
		p[i] = f32p(any(v).([]float32))
	}
	return p, C.size_t(len(s[0]) / cols), C.size_t(cols), true
}

func f32p(s []float32) *C.float { return (*C.float)(unsafe.Pointer(&s[0])) }
