//go:build !purego

package hostmath

// #cgo CFLAGS: -O3
// #include "elementwise.h"
import "C"

// The float32 element-wise kernels in C (elementwise.h), each element
// computed as the Go loops compute it.

func leakyFloat32(dst, src []float32, slope float32) {
	if len(dst) > 0 {
		C.gpuz_leaky_f32(floatPtr(dst), floatPtr(src), C.size_t(len(dst)), C.float(slope))
	}
}

func leakyGradFloat32(dst, x, g []float32, slope float32) {
	if len(dst) > 0 {
		C.gpuz_leaky_grad_f32(floatPtr(dst), floatPtr(x), floatPtr(g), C.size_t(len(dst)), C.float(slope))
	}
}

func addFloat32(dst, a, b []float32) {
	if len(dst) > 0 {
		C.gpuz_add_f32(floatPtr(dst), floatPtr(a), floatPtr(b), C.size_t(len(dst)))
	}
}

func addRowFloat32(m, v []float32) {
	if len(m) > 0 && len(v) > 0 {
		C.gpuz_add_row_f32(floatPtr(m), C.size_t(len(m)/len(v)), floatPtr(v), C.size_t(len(v)))
	}
}

// sumRowsFloat32 sets dst to the sum of the rows of m (rows ld apart),
// over the len(dst) columns.
func sumRowsFloat32(dst, m []float32, rows, ld int) {
	if len(dst) > 0 {
		C.gpuz_sum_rows_f32(floatPtr(dst), floatPtr(m), C.size_t(rows), C.size_t(len(dst)), C.size_t(ld))
	}
}
