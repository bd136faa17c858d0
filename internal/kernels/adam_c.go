//go:build !purego

package kernels

// #cgo CFLAGS: -O3
// #cgo LDFLAGS: -lm
// #include "adam.h"
import "C"

import "unsafe"

// adamFloat32 is the float32 Adam update compiled from C, which the C
// compiler vectorises (one clone each for AVX-512, AVX2 and plain x86-64,
// picked at load time). Contraction into fused multiply-adds is off, so
// every operation rounds as in the Go loop and the results are identical.
func adamFloat32(p, g, m, v []float32, c adamConstants[float32]) {
	if len(p) == 0 {
		return
	}
	C.gpuz_adam_f32((*C.float)(unsafe.Pointer(&p[0])), (*C.float)(unsafe.Pointer(&g[0])),
		(*C.float)(unsafe.Pointer(&m[0])), (*C.float)(unsafe.Pointer(&v[0])), C.size_t(len(p)),
		C.float(c.scale), C.float(c.beta1), C.float(c.beta2), C.float(c.oneMinusBeta1), C.float(c.oneMinusBeta2),
		C.float(c.stepSize), C.float(c.correction2Sqrt), C.float(c.eps))
}
