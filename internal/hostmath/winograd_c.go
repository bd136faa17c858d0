//go:build !purego

package hostmath

// #cgo CFLAGS: -O3
// #include "winograd.h"
import "C"

// winogradConv reports whether the float32 forward convolutions of 5 × 5
// kernels may run the Winograd kernels of winograd.h.
var winogradConv = C.gpuz_wino_avx512() != 0

// winogradRing is the scratch, in floats, of winogradRows: a ring of
// transformed input rows (see winograd.h).
func winogradRing(s ConvShape) int {
	return int(C.gpuz_wino_ring(C.int(s.InC), C.int(s.OutC), C.int(s.OutW)))
}

// winogradWeights transforms the weights w of s into wt (OutC·InC·30
// floats) as winogradRows reads them.
func winogradWeights(w []float32, s ConvShape, wt []float32) {
	C.gpuz_wino_weights(floatPtr(w), C.int(s.OutC), C.int(s.InC), floatPtr(wt))
}

// winogradRows computes every output channel of output rows [y0, y0 +
// rows) of image img from the transformed weights wt; ring is scratch of
// winogradRing floats, 64-byte aligned.
func winogradRows(in []float32, s ConvShape, img, y0, rows int, wt, bias, out, ring []float32) {
	plane := s.InH * s.InW
	oplane := s.OutH * s.OutW
	rc := C.gpuz_wino_rows(floatPtr(in[img*s.InC*plane:]), C.int(s.InC), C.int(s.InH), C.int(s.InW), C.int(s.Pad),
		C.int(y0), C.int(rows), floatPtr(wt), C.int(s.OutC), floatPtr(bias),
		floatPtr(out[img*s.OutC*oplane+y0*s.OutW:]), C.ptrdiff_t(oplane), C.int(s.OutW), floatPtr(ring))
	if rc != 0 {
		panic("hostmath: no memory for the convolution's table of rows")
	}
}
