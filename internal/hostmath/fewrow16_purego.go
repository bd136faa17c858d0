//go:build purego

package hostmath

func fewRow16Pack(x []uint16, m, k int, xt []uint32, lanes int) {
	panic("hostmath: no few-row kernel in a purego build")
}

func fewRow16Columns(xt []uint32, lanes, m, n, k int, w []uint16, y []float32, j0, j1 int) {
	panic("hostmath: no few-row kernel in a purego build")
}
