package hostmath

import "math"

// The tanh form of GELU, transformers' gelu_new (NewGELUActivation):
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), computed in the element type
// in torch's order: x³ as x·x·x, scaled by 0.044715, added to x, scaled by
// √(2/π); then 0.5·x times 1 + tanh of that. tanh is math.Tanh rounded to
// the element type (torch's tanhf differs from it by at most an ulp).
const (
	geluTanhScale = 0.7978845608028654 // √(2/π)
	geluTanhCubic = 0.044715
)

// geluTanh is the activation of one element.
func geluTanh[T Float](x T) T {
	u := T(geluTanhScale) * (x + T(geluTanhCubic)*(x*x*x))
	return (T(0.5) * x) * (1 + T(math.Tanh(float64(u))))
}

// geluTanhDeriv is the activation's derivative at x:
// 0.5·(1 + t) + 0.5·x·(1 − t²)·√(2/π)·(1 + 3·0.044715·x²) with t the tanh.
// Where t is ±1 exactly (|x| beyond about 10 in float32, 20 in float64) the
// second term is 0 and is not computed, so that x² overflowing to +Inf
// cannot make it 0·Inf = NaN: the derivative is finite (0 or 1) for every
// finite x.
func geluTanhDeriv[T Float](x T) T {
	u := T(geluTanhScale) * (x + T(geluTanhCubic)*(x*x*x))
	t := T(math.Tanh(float64(u)))
	d := T(0.5) * (1 + t)
	if s := 1 - t*t; s != 0 {
		d += T(0.5) * x * s * T(geluTanhScale) * (1 + T(3*geluTanhCubic)*(x*x))
	}
	return d
}

// GELUTanh sets dst[i] to the tanh form of GELU of src[i] (transformers'
// gelu_new): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). dst and src may
// be the same slice. It is finite for every finite x: x itself for large
// positive x and −0 or 0 for large negative x, even where x³ overflows.
func GELUTanh[T Float](dst, src []T) {
	parallelFor(len(dst), 1, func(lo, hi int) {
		for i, x := range src[lo:hi] {
			dst[lo+i] = geluTanh(x)
		}
	})
}

// GELUTanhGrad sets dst[i] = grad[i]·GELUTanh′(x[i]): the gradient of
// GELUTanh at x given the output gradient grad.
func GELUTanhGrad[T Float](dst, x, grad []T) {
	parallelFor(len(dst), 1, func(lo, hi int) {
		for i, v := range x[lo:hi] {
			dst[lo+i] = grad[lo+i] * geluTanhDeriv(v)
		}
	})
}
