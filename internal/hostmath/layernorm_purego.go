//go:build purego

package hostmath

// Without cgo the LayerNorm kernels are the Go loops.

var layerNormAVX512 = false

func layerNormFast(_, _, _, _ any, _ float64) bool { return false }

func layerNormInputGradFast(_, _, _, _ any, _ float64) bool { return false }

func layerNormWeightGradFast(_ []float64, _, _ any, _ float64) bool { return false }
