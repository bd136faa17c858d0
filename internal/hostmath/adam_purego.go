//go:build purego

package hostmath

// adamFloat32 is the float32 Adam update; without cgo it is the Go loop.
func adamFloat32(p, g, m, v []float32, c adamConstants[float32]) { adamGo(p, g, m, v, c) }
