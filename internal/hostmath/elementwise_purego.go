//go:build purego

package hostmath

// Without cgo the float32 element-wise kernels are the Go loops.

func leakyFloat32(dst, src []float32, slope float32) { leakyGo(dst, src, slope) }

func leakyGradFloat32(dst, x, g []float32, slope float32) { leakyGradGo(dst, x, g, slope) }

func addFloat32(dst, a, b []float32) { addGo(dst, a, b) }

func addRowFloat32(m, v []float32) { addRowGo(m, v) }

func sumRowsFloat32(dst, m []float32, rows, ld int) { sumRowsGo(dst, m, rows, ld) }
