//go:build !purego

package hostmath

// #cgo CFLAGS: -O3
// #cgo LDFLAGS: -lm
// #include "adam.h"
import "C"

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// adamPath is the loop adamFloat32 runs: the widest this CPU has. Tests set
// it to each loop the CPU can run (adamPaths), so that a CPU with AVX-512
// runs the AVX2 loop that one without it (Haswell, Zen 2) runs.
var adamPath C.int = C.GPUZ_ADAM_WIDEST

// adamPaths names the loops of adam.h this CPU can run.
func adamPaths() map[string]C.int {
	paths := map[string]C.int{"scalar": C.GPUZ_ADAM_SCALAR}
	if cpu.X86.HasAVX2 {
		paths["avx2"] = C.GPUZ_ADAM_AVX2
	}
	if cpu.X86.HasAVX512F {
		paths["avx512"] = C.GPUZ_ADAM_AVX512
	}
	return paths
}

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
		}, adamPath)
}
