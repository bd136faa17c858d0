//go:build purego

package hostmath

import "gpuz/internal/quant"

// quantGo is the only instruction set of a purego build: quant.go's Go
// loops.
const (
	quantGo     = 0
	quantAVX2   = 1
	quantAVX512 = 2
)

// quantISA is quantGo without cgo.
var quantISA = quantGo

func quantDotC(kind quant.Kind, m, n, k int, x []float32, w []byte, rb int, y []float32, j0, j1 int) {
	panic("hostmath: no quantized kernels in a purego build")
}

func quantGWC(kind quant.Kind, m, n, k int, g []float32, w []byte, rb int, dx []float32, s0, s1 int) {
	panic("hostmath: no quantized kernels in a purego build")
}

func quantTileC(kind quant.Kind, w []byte, rb, rows, s0, s1 int, dst []float32, ldd int) {
	panic("hostmath: no quantized kernels in a purego build")
}
