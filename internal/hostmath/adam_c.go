//go:build !purego

package hostmath

// #cgo CFLAGS: -O3
// #cgo LDFLAGS: -lm
// #include "adam.h"
import "C"

import "unsafe"

// adamFloat32 is the float32 Adam update in C (adam.h), vectorised with
// AVX-512 or AVX2 where the CPU has them; its results are bit-identical to
// adamGo's, but that it flushes subnormals to zero (flush.h).
func adamFloat32(p, g, m, v []float32, c adamConstants[float32]) {
	if len(p) == 0 {
		return
	}
	C.gpuz_adam_f32((*C.float)(unsafe.Pointer(&p[0])), (*C.float)(unsafe.Pointer(&g[0])),
		(*C.float)(unsafe.Pointer(&m[0])), (*C.float)(unsafe.Pointer(&v[0])), C.size_t(len(p)),
		C.gpuz_adam_constants{
			scale: C.float(c.scale), beta1: C.float(c.beta1), beta2: C.float(c.beta2),
			one_minus_beta1: C.float(c.oneMinusBeta1), one_minus_beta2: C.float(c.oneMinusBeta2),
			step_size: C.float(c.stepSize), correction2_sqrt: C.float(c.correction2Sqrt), eps: C.float(c.eps),
		})
}
