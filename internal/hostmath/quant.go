package hostmath

import (
	"gpuz/internal/quant"
)

// QuantXWt sets y [m, n] = x [m, k] · Wᵀ for W [n, k] stored in kind in
// w (kind.Bytes(n, k) bytes): the products of the projections whose
// frozen weight is quantized. This is the reference loop: each of W's rows
// is dequantized into one scratch row, never the whole weight. The row
// kinds (Q8_0, Q4_0, Q4_K and the floats); not NF4.
func QuantXWt(kind quant.Kind, m, n, k int, x []float32, w []byte, y []float32) {
	row := make([]float32, k)
	rb := int(kind.RowBytes(k))
	for j := range n {
		quant.DequantizeRow(kind, row, w[j*rb:(j+1)*rb])
		for i := range m {
			var s float32
			xi := x[i*k : (i+1)*k]
			for p, v := range row {
				s += xi[p] * v
			}
			y[i*n+j] = s
		}
	}
}

// QuantGW sets dx [m, k] = g [m, n] · W for W [n, k] stored in kind in w:
// the gradient with respect to the input of a projection whose frozen
// weight is quantized (QLoRA's backward pass).
func QuantGW(kind quant.Kind, m, n, k int, g []float32, w []byte, dx []float32) {
	clear(dx[:m*k])
	row := make([]float32, k)
	rb := int(kind.RowBytes(k))
	for j := range n {
		quant.DequantizeRow(kind, row, w[j*rb:(j+1)*rb])
		for i := range m {
			gij, dxi := g[i*n+j], dx[i*k:(i+1)*k]
			for p, v := range row {
				dxi[p] += gij * v
			}
		}
	}
}
