//go:build !purego

package hostmath

// #cgo CFLAGS: -O3
// #include "conv.h"
import "C"

import "unsafe"

// directConv reports whether the float32 convolutions run the direct AVX-512
// kernels of conv.h; elsewhere they run im2col and the BLAS.
var directConv = C.gpuz_conv_avx512() != 0

func floatPtr(s []float32) *C.float {
	if len(s) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&s[0]))
}

// convForwardRing is the scratch, in floats, of convForwardRows: a ring of
// padded input rows (see conv.h).
func convForwardRing(s ConvShape) int {
	return int(C.gpuz_conv_fwd_ring(C.int(s.InC), C.int(s.Kernel), C.int(s.OutW)))
}

// convForwardRows computes every output channel of output rows [y0, y0 +
// rows) of image img; ring is scratch of convForwardRing floats.
func convForwardRows(in []float32, s ConvShape, img, y0, rows int, w, bias, out, ring []float32) {
	plane := s.InH * s.InW
	oplane := s.OutH * s.OutW
	rc := C.gpuz_conv_fwd_rows(floatPtr(in[img*s.InC*plane:]), C.int(s.InC), C.int(s.InH), C.int(s.InW), C.int(s.Pad),
		C.int(y0), C.int(rows), floatPtr(w), C.int(s.OutC), C.int(s.Kernel), floatPtr(bias),
		floatPtr(out[img*s.OutC*oplane+y0*s.OutW:]), C.ptrdiff_t(oplane), C.int(s.OutW), floatPtr(ring))
	if rc != 0 {
		panic("hostmath: no memory for the convolution's table of rows")
	}
}

// convWeightGradRing is the scratch, in floats, of convWeightGradRows for
// tiles of at most maxRows rows.
func convWeightGradRing(s ConvShape, maxRows int) int {
	return int(C.gpuz_conv_wgrad_ring(C.int(s.InC), C.int(s.OutC), C.int(s.Kernel), C.int(s.OutW), C.int(maxRows)))
}

// convWeightGradRows stores the contribution of output rows [y0, y0 + rows)
// of image img to the weight gradient as 16-lane partial sums in acc; ring
// is scratch of convWeightGradRing(s, maxRows) floats, maxRows ≥ rows.
func convWeightGradRows(x []float32, s ConvShape, img, y0, rows, maxRows int, g, acc, ring []float32) {
	plane := s.InH * s.InW
	gplane := s.OutH * s.OutW
	rc := C.gpuz_conv_wgrad_rows(floatPtr(x[img*s.InC*plane:]), C.int(s.InC), C.int(s.InH), C.int(s.InW), C.int(s.Pad),
		C.int(y0), C.int(rows), floatPtr(g[img*s.OutC*gplane+y0*s.OutW:]), C.ptrdiff_t(gplane), C.int(s.OutC),
		C.int(s.Kernel), C.int(s.OutW), floatPtr(acc), floatPtr(ring), C.int(maxRows))
	if rc != 0 {
		panic("hostmath: no memory for the convolution's table of rows")
	}
}
