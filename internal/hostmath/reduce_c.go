//go:build !purego

package hostmath

// #cgo CFLAGS: -O3
// #include "reduce.h"
import "C"

// sumSquaresFloat32 is the sum of squares of x in double, in C (reduce.h):
// vectorised with AVX-512 where the CPU has it.
func sumSquaresFloat32(x []float32) float64 {
	if len(x) == 0 {
		return 0
	}
	return float64(C.gpuz_sumsq_f32(floatPtr(x), C.size_t(len(x))))
}

// sumFloat32 is the sum of x in double, in C (reduce.h): vectorised with
// AVX-512 where the CPU has it.
func sumFloat32(x []float32) float64 {
	if len(x) == 0 {
		return 0
	}
	return float64(C.gpuz_sum_f32(floatPtr(x), C.size_t(len(x))))
}
