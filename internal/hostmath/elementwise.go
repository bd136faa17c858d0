package hostmath

// LeakyReLU sets dst[i] = src[i] when it is positive, slope·src[i] otherwise.
// dst and src may be the same slice.
func LeakyReLU[T Float](dst, src []T, slope T) {
	parallelFor(len(dst), 1, func(lo, hi int) {
		s, d := src[lo:hi], dst[lo:hi]
		for i, x := range s {
			if x > 0 {
				d[i] = x
			} else {
				d[i] = slope * x
			}
		}
	})
}

// LeakyReLUGrad sets dst[i] = grad[i] where x[i] is positive and
// slope·grad[i] elsewhere: the gradient of LeakyReLU at x.
func LeakyReLUGrad[T Float](dst, x, grad []T, slope T) {
	parallelFor(len(dst), 1, func(lo, hi int) {
		xs, g, d := x[lo:hi], grad[lo:hi], dst[lo:hi]
		for i, v := range xs {
			if v > 0 {
				d[i] = g[i]
			} else {
				d[i] = slope * g[i]
			}
		}
	})
}

// Add sets dst[i] = a[i] + b[i]. dst may be a or b.
func Add[T Float](dst, a, b []T) {
	parallelFor(len(dst), 1, func(lo, hi int) {
		as, bs, d := a[lo:hi], b[lo:hi], dst[lo:hi]
		for i := range d {
			d[i] = as[i] + bs[i]
		}
	})
}

// AddRowVector adds v to every row of the row-major matrix m, whose rows
// have len(v) columns.
func AddRowVector[T Float](m, v []T) {
	cols := len(v)
	parallelFor(len(m), cols, func(lo, hi int) {
		for r := lo; r < hi; r += cols {
			row := m[r : r+cols]
			for c, x := range v {
				row[c] += x
			}
		}
	})
}

// SumRows sets dst to the sum of the rows of the row-major matrix m, whose
// rows have len(dst) columns.
func SumRows[T Float](dst, m []T) {
	cols := len(dst)
	clear(dst)
	for r := 0; r < len(m); r += cols {
		row := m[r : r+cols]
		for c, x := range row {
			dst[c] += x
		}
	}
}
