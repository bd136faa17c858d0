//go:build purego

package hostmath

// fmaPeakLoop reports false: a purego build has no AVX-512 loop.
func fmaPeakLoop(n int) bool { return false }

// triad sets a[i] = b[i] + s·c[i].
func triad(a, b, c []float32, s float32) {
	for i := range a {
		a[i] = b[i] + s*c[i]
	}
}
