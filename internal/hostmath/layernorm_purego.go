//go:build purego

package hostmath

// Without cgo the LayerNorm kernels are the Go loops.

var layerNormAVX512 = false

func layerNormFast[T Float](_, _, _, _ []T, _ float64) bool { return false }

func layerNormInputGradFast[T Float](_, _, _, _ []T, _ float64) bool { return false }

func layerNormWeightGradFast[T Float](_ []float64, _, _ []T, _ float64) bool { return false }
