//go:build !purego

package hostmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAdamLoopsMatchGo runs each of adam.h's loops this CPU can run (the
// scalar one, AVX2's, as on a Haswell, and AVX-512's) over every length
// from 0 to 40 and at 1037, so that each vector loop ends with every
// length of scalar tail (0 to 15 after AVX-512's 16 lanes, 0 to 7 after
// AVX2's 8), and checks the bits of p, m and v against the Go loop over
// three steps. An element the tail skips or runs twice differs.
func TestAdamLoopsMatchGo(t *testing.T) {
	saved := adamPath
	defer func() { adamPath = saved }()
	lengths := []int{1037}
	for n := range 41 {
		lengths = append(lengths, n)
	}
	for name, path := range adamPaths() {
		adamPath = path
		for _, n := range lengths {
			rng := rand.New(rand.NewPCG(9, uint64(n)))
			mk := func() []float32 { return toFloat32(randomSlice(rng, n)) }
			p, g, m, v := mk(), mk(), mk(), mk()
			for i := range v {
				v[i] = v[i] * v[i] * 1e-3
			}
			p2, m2, v2 := append([]float32(nil), p...), append([]float32(nil), m...), append([]float32(nil), v...)
			for step := 1; step <= 3; step++ {
				c := adamConstants[float32]{scale: 0.3, beta1: 0.9, beta2: 0.999, oneMinusBeta1: 0.1, oneMinusBeta2: 0.001,
					stepSize: float32(1e-4 / (1 - math.Pow(0.9, float64(step)))), correction2Sqrt: float32(math.Sqrt(1 - math.Pow(0.999, float64(step)))), eps: 1e-8}
				adamFloat32(p, g, m, v, c)
				adamGo(p2, g, m2, v2, c)
			}
			for i := range p {
				if p[i] != p2[i] || m[i] != m2[i] || v[i] != v2[i] {
					t.Errorf("%s, %d elements: element %d: compiled (%g %g %g), Go (%g %g %g)", name, n, i, p[i], m[i], v[i], p2[i], m2[i], v2[i])
					break
				}
			}
		}
	}
}
