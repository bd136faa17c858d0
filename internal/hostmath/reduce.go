package hostmath

// Sum returns the sum of x, accumulated in float64.
func Sum[T Float](x []T) float64 {
	return parallelSum(len(x), func(lo, hi int) float64 {
		s := 0.0
		for _, v := range x[lo:hi] {
			s += float64(v)
		}
		return s
	})
}

// SumSquares returns the sum of the squares of x, accumulated in float64;
// float32 slices run the vectorised loop of reduce.h.
func SumSquares[T Float](x []T) float64 {
	return parallelSum(len(x), func(lo, hi int) float64 {
		if x32, ok := any(x).([]float32); ok {
			return sumSquaresFloat32(x32[lo:hi])
		}
		return sumSquaresGo(x[lo:hi])
	})
}

// sumSquaresGo is the sum of squares as a Go loop. Four independent sums
// keep the adder busy; the order, and so the result, depends only on the
// chunk.
func sumSquaresGo[T Float](c []T) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(c); i += 4 {
		a, b, d, e := float64(c[i]), float64(c[i+1]), float64(c[i+2]), float64(c[i+3])
		s0 += a * a
		s1 += b * b
		s2 += d * d
		s3 += e * e
	}
	for ; i < len(c); i++ {
		s0 += float64(c[i]) * float64(c[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// MeanSquaredError returns the mean of (pred[i] - target[i])², accumulated
// in float64.
func MeanSquaredError[T Float](pred, target []T) float64 {
	if len(pred) == 0 {
		return 0
	}
	s := parallelSum(len(pred), func(lo, hi int) float64 {
		s := 0.0
		for i, p := range pred[lo:hi] {
			d := float64(p - target[lo+i])
			s += d * d
		}
		return s
	})
	return s / float64(len(pred))
}

// MeanSquaredErrorGrad sets dst to the gradient of the mean squared error
// with respect to pred, times seed: dst[i] = seed · 2(pred[i] − target[i]) / n.
func MeanSquaredErrorGrad[T Float](dst, pred, target []T, seed T) {
	scale := seed * 2 / T(len(pred))
	parallelFor(len(dst), 1, func(lo, hi int) {
		p, t, d := pred[lo:hi], target[lo:hi], dst[lo:hi]
		for i := range d {
			d[i] = scale * (p[i] - t[i])
		}
	})
}
