package hostmath

import "math"

// Adam holds the hyper-parameters of the Adam optimizer.
type Adam struct {
	LR, Beta1, Beta2, Eps float64
}

// The hyper-parameters of the reference experiment's Adam.
const (
	DefaultLR    = 1e-4
	DefaultBeta1 = 0.9
	DefaultBeta2 = 0.999
	DefaultEps   = 1e-8
)

// DefaultAdam returns the optimizer of the reference experiment: lr 1e-4,
// β 0.9/0.999, ε 1e-8. It is a function, not a variable, so that no caller
// can change the defaults of another; a caller wanting other settings
// changes the fields of the value it gets.
func DefaultAdam() Adam {
	return Adam{LR: DefaultLR, Beta1: DefaultBeta1, Beta2: DefaultBeta2, Eps: DefaultEps}
}

// ClipScale returns the factor that brings a gradient of the given sum of
// squares to at most maxNorm in Euclidean norm, computed as PyTorch's
// clip_grad_norm_ does: min(1, maxNorm / (norm + 1e-6)).
func ClipScale(sumSquares, maxNorm float64) float64 {
	return min(1, maxNorm/(math.Sqrt(sumSquares)+1e-6))
}

// AdamStep applies Adam's update number step (counting from 1) to the
// parameters p, given their gradient g multiplied by gradScale (the clipping
// factor) and the moment estimates m and v, which it updates. The arithmetic
// per element follows PyTorch's single-tensor Adam, in the element type T:
//
//	g' = g·gradScale
//	m = β1·m + (1−β1)·g'
//	v = β2·v + (1−β2)·g'²
//	p = p − (lr / (1−β1^step)) · m / (√v / √(1−β2^step) + ε)
func AdamStep[T Float](a Adam, p, g, m, v []T, gradScale float64, step int) {
	c := adamConstants[T]{
		scale:           T(gradScale),
		beta1:           T(a.Beta1),
		beta2:           T(a.Beta2),
		oneMinusBeta1:   T(1 - a.Beta1),
		oneMinusBeta2:   T(1 - a.Beta2),
		stepSize:        T(a.LR / (1 - math.Pow(a.Beta1, float64(step)))),
		correction2Sqrt: T(math.Sqrt(1 - math.Pow(a.Beta2, float64(step)))),
		eps:             T(a.Eps),
	}
	parallelFor(len(p), 1, func(lo, hi int) {
		if p32, ok := any(p).([]float32); ok {
			adamFloat32(p32[lo:hi], any(g).([]float32)[lo:hi], any(m).([]float32)[lo:hi], any(v).([]float32)[lo:hi], any(c).(adamConstants[float32]))
			return
		}
		adamGo(p[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi], c)
	})
}

// adamConstants are the per-step factors of an Adam update, in the element
// type.
type adamConstants[T Float] struct {
	scale, beta1, beta2, oneMinusBeta1, oneMinusBeta2, stepSize, correction2Sqrt, eps T
}

// adamGo is the Adam update as a Go loop.
func adamGo[T Float](p, g, m, v []T, c adamConstants[T]) {
	for i := range p {
		gi := g[i] * c.scale
		mi := m[i]*c.beta1 + gi*c.oneMinusBeta1
		vi := v[i]*c.beta2 + gi*gi*c.oneMinusBeta2
		m[i], v[i] = mi, vi
		denom := T(math.Sqrt(float64(vi)))/c.correction2Sqrt + c.eps
		p[i] -= c.stepSize * (mi / denom)
	}
}
