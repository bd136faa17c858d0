//go:build purego

package hostmath

// Without cgo the Llama family's kernels are the Go loops.

func swigluFast[T Float](_, _ []T, _ int) bool { return false }

func swigluGradFast[T Float](_, _, _ []T, _ int) bool { return false }

func rmsNormFast[T Float](_, _, _ []T, _ float64) bool { return false }

func rmsNormInputGradFast[T Float](_, _, _, _ []T, _ float64) bool { return false }

func rmsRstdFast[T Float](_, _ []T, _ int, _ float64) bool { return false }

func rmsWeightGradFast[T Float](_ []float64, _, _, _ []T, _, _, _ int) bool { return false }

func rotateFast[T Float](_, _, _, _ []T, _ RotaryShape, _ int, _ bool) bool { return false }
