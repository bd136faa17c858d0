//go:build purego

package hostmath

// directConv is false without cgo: the convolutions run im2col and the BLAS.
const directConv = false

func convForwardTile(tile []float32, s ConvShape, rows int, w, bias, out []float32) {
	panic("kernels: no direct convolution in a purego build")
}

func convWeightGradTile(tile []float32, s ConvShape, rows int, g, acc []float32) {
	panic("kernels: no direct convolution in a purego build")
}
