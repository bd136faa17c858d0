//go:build !purego

package hostmath

// #cgo CFLAGS: -O3
// #include "peak.h"
import "C"

// fmaPeakLoop runs n steps of the AVX-512 FMA loop of peak.h, 512 FLOPs a
// step, and reports false (running nothing) on a CPU without AVX-512.
func fmaPeakLoop(n int) bool {
	if C.gpuz_peak_avx512() == 0 {
		return false
	}
	C.gpuz_fma_loop(C.long(n))
	return true
}

// triad sets a[i] = b[i] + s·c[i], vectorised in C.
func triad(a, b, c []float32, s float32) {
	if len(a) > 0 {
		C.gpuz_triad(floatPtr(a), floatPtr(b), floatPtr(c), C.float(s), C.size_t(len(a)))
	}
}
