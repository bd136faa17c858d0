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

// convForwardTile computes every output channel of one padded tile (see
// conv.h); out starts at the tile's first output element of channel 0.
func convForwardTile(tile []float32, s ConvShape, rows int, w, bias, out []float32) {
	C.gpuz_conv_fwd_tile(floatPtr(tile), C.int(s.InC), C.int(s.OutW+s.Kernel-1), C.int(rows+s.Kernel-1),
		floatPtr(w), C.int(s.OutC), C.int(s.Kernel), floatPtr(bias), floatPtr(out),
		C.ptrdiff_t(s.OutH*s.OutW), C.int(rows), C.int(s.OutW))
}

// convWeightGradTile stores one padded tile's contribution to the weight
// gradient as 16-lane partial sums in acc; g starts at the tile's first
// gradient element of channel 0.
func convWeightGradTile(tile []float32, s ConvShape, rows int, g, acc []float32) {
	C.gpuz_conv_wgrad_tile(floatPtr(tile), C.int(s.InC), C.int(s.OutW+s.Kernel-1), C.int(rows+s.Kernel-1),
		floatPtr(g), C.ptrdiff_t(s.OutH*s.OutW), C.int(s.OutC), C.int(s.Kernel), C.int(rows), C.int(s.OutW),
		floatPtr(acc))
}
