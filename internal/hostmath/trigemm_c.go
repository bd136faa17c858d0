//go:build !purego

package hostmath

// #cgo CFLAGS: -O3
// #include "trigemm.h"
import "C"

// directTriGemm reports whether the float32 attention products run the
// AVX-512 kernel of trigemm.h; elsewhere they run the BLAS in blocks.
var directTriGemm = C.gpuz_trigemm_avx512() != 0

// triGemmScratch is the scratch, in elements, that triGemmFloat32 needs for
// a product of n columns and k terms.
func triGemmScratch(n, k int) int { return int(C.gpuz_trigemm_scratch(C.int(n), C.int(k))) }

// triGemmFloat32 is triGemm in the AVX-512 kernel of trigemm.h.
func triGemmFloat32(tri triangle, m, n, k int, alpha float32, a []float32, rsa, csa int, b []float32, rsb, csb int, beta float32, c []float32, ldc int, scratch []float32) {
	C.gpuz_trigemm(C.int(tri), C.int(m), C.int(n), C.int(k), C.float(alpha), floatPtr(a), C.ptrdiff_t(rsa), C.ptrdiff_t(csa),
		floatPtr(b), C.ptrdiff_t(rsb), C.ptrdiff_t(csb), C.float(beta), floatPtr(c), C.ptrdiff_t(ldc), floatPtr(scratch))
}
