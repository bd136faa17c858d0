//go:build purego

package hostmath

// fewRowKernel is false without cgo: every product runs the BLAS.
const fewRowKernel = false

func fewRowPack(x []float32, m, k int, xt []float32, lanes int) {
	panic("hostmath: no few-row kernel in a purego build")
}

func fewRowColumns(xt []float32, lanes, m, n, k int, w, y []float32, j0, j1 int) {
	panic("hostmath: no few-row kernel in a purego build")
}

func fewRowDotColumns(x []float32, m, k int, w, y []float32, n, j0, j1 int) {
	panic("hostmath: no few-row kernel in a purego build")
}
