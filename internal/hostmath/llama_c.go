//go:build !purego

package hostmath

// #cgo CFLAGS: -O3
// #cgo LDFLAGS: -lm
// #include "llama.h"
import "C"

import "unsafe"

// The float32 kernels of the Llama family in C (llama.h), each element
// computed as the Go loops compute it. Each function reports whether it
// ran: false for float64 slices, which the Go loops serve.

// llamaISA is the instruction set the C kernels use: the best the CPU has.
// Tests set it to each one the CPU supports.
var llamaISA = int(C.gpuz_lm_isa())

// llamaISAs lists the instruction sets of the C kernels, worst first.
var llamaISAs = []struct {
	name string
	isa  int
}{{"scalar", C.GPUZ_LM_SCALAR}, {"avx2", C.GPUZ_LM_AVX2}, {"avx512", C.GPUZ_LM_AVX512}}

// f32s returns s as float32 values and whether it holds them.
func f32s[T Float](s []T) ([]float32, bool) {
	v, ok := any(s).([]float32)
	return v, ok
}

func cf(s []float32) *C.float {
	if len(s) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&s[0]))
}

func swigluFast[T Float](y, x []T, n int) bool {
	y32, ok := f32s(y)
	if ok && len(y) > 0 {
		C.gpuz_swiglu_f32(C.int(llamaISA), cf(y32), cf(any(x).([]float32)), C.size_t(len(y)/n), C.size_t(n))
	}
	return ok
}

func swigluGradFast[T Float](dx, x, g []T, n int) bool {
	d32, ok := f32s(dx)
	if ok && len(g) > 0 {
		C.gpuz_swiglu_grad_f32(C.int(llamaISA), cf(d32), cf(any(x).([]float32)), cf(any(g).([]float32)),
			C.size_t(len(g)/n), C.size_t(n))
	}
	return ok
}

func rmsNormFast[T Float](y, x, w []T, eps float64) bool {
	y32, ok := f32s(y)
	if ok && len(x) > 0 {
		C.gpuz_rmsnorm_f32(C.int(llamaISA), cf(y32), cf(any(x).([]float32)), cf(any(w).([]float32)),
			C.size_t(len(x)/len(w)), C.size_t(len(w)), C.double(eps))
	}
	return ok
}

func rmsNormInputGradFast[T Float](dx, x, w, g []T, eps float64) bool {
	d32, ok := f32s(dx)
	if ok && len(x) > 0 {
		C.gpuz_rmsnorm_input_grad_f32(C.int(llamaISA), cf(d32), cf(any(x).([]float32)), cf(any(w).([]float32)),
			cf(any(g).([]float32)), C.size_t(len(x)/len(w)), C.size_t(len(w)), C.double(eps))
	}
	return ok
}

func rmsRstdFast[T Float](rstd, x []T, cols int, eps float64) bool {
	r32, ok := f32s(rstd)
	if ok && len(rstd) > 0 {
		C.gpuz_rms_rstd_f32(C.int(llamaISA), cf(r32), cf(any(x).([]float32)), C.size_t(len(rstd)), C.size_t(cols), C.double(eps))
	}
	return ok
}

// rmsWeightGradFast adds the columns [c0, c1) of Σ_r g ⊙ x·rstd[r] into
// acc, the rows of x and g cols apart.
func rmsWeightGradFast[T Float](acc []float64, x, g, rstd []T, cols, c0, c1 int) bool {
	x32, ok := f32s(x)
	if ok && c1 > c0 && len(rstd) > 0 {
		C.gpuz_rmsnorm_weight_grad_f32(C.int(llamaISA), (*C.double)(unsafe.Pointer(&acc[0])), cf(x32),
			cf(any(g).([]float32)), cf(any(rstd).([]float32)), C.size_t(len(rstd)), C.size_t(cols), C.size_t(c0), C.size_t(c1))
	}
	return ok
}

// rotateFast runs rotate over the rows of y and x, the first of them row
// r0 of the whole.
func rotateFast[T Float](y, x, cos, sin []T, s RotaryShape, r0 int, inverse bool) bool {
	y32, ok := f32s(y)
	if ok && len(y) > 0 {
		C.gpuz_rotary_f32(C.int(llamaISA), cf(y32), cf(any(x).([]float32)), cf(any(cos).([]float32)), cf(any(sin).([]float32)),
			C.size_t(len(y)/s.Width), C.size_t(r0), C.size_t(s.Heads), C.size_t(s.HeadDim), C.size_t(s.SeqLen),
			C.size_t(s.Width), cBool(inverse))
	}
	return ok
}
