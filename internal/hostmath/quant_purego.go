//go:build purego

package hostmath

// quantGo is the only instruction set of a purego build: quant.go's Go
// loops.
const (
	quantGo     = 0
	quantAVX2   = 1
	quantAVX512 = 2
)

// quantISA is quantGo without cgo.
var quantISA = quantGo

func quantDotC(qw quantWeight, m int, x, y []float32, j0, j1 int) {
	panic("hostmath: no quantized kernels in a purego build")
}

func quantGWC(qw quantWeight, m int, g, dx []float32, s0, s1 int) {
	panic("hostmath: no quantized kernels in a purego build")
}

func quantTileC(qw quantWeight, r0, rows, s0, s1 int, dst []float32, ldd int) {
	panic("hostmath: no quantized kernels in a purego build")
}
