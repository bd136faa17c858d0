//go:build purego

package hostmath

// winogradConv is false without cgo: the convolutions run im2col and the
// BLAS.
const winogradConv = false

func winogradRing(s ConvShape) int { return 0 }

func winogradWeights(w []float32, s ConvShape, wt []float32) {
	panic("hostmath: no Winograd convolution in a purego build")
}

func winogradRows(in []float32, s ConvShape, img, y0, rows int, wt, bias, out, ring []float32) {
	panic("hostmath: no Winograd convolution in a purego build")
}
