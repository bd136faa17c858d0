//go:build purego

package hostmath

// directConv is false without cgo: the convolutions run im2col and the BLAS.
const directConv = false

func convForwardRing(s ConvShape) int { return 0 }

func convForwardRows(in []float32, s ConvShape, img, y0, rows int, w, bias, out, ring []float32) {
	panic("hostmath: no direct convolution in a purego build")
}

func convWeightGradRing(s ConvShape, maxRows int) int { return 0 }

func convWeightGradRows(x []float32, s ConvShape, img, y0, rows, maxRows int, g, acc, ring []float32) {
	panic("hostmath: no direct convolution in a purego build")
}
