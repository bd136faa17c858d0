//go:build purego

package hostmath

// sumSquaresFloat32 is the sum of squares of x; without cgo it is the Go
// loop.
func sumSquaresFloat32(x []float32) float64 { return sumSquaresGo(x) }

// sumFloat32 is the sum of x in double; without cgo it is the Go loop.
func sumFloat32(x []float32) float64 { return sum8(x) }
