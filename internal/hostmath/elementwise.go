package hostmath

// The element-wise kernels run the C loops of elementwise.h on float32
// (vectorised; the same value per element) and the Go loops below on
// float64 and in purego builds.

// LeakyReLU sets dst[i] = src[i] when it is positive, slope·src[i] otherwise.
// dst and src may be the same slice.
func LeakyReLU[T Float](dst, src []T, slope T) {
	parallelFor(len(dst), 1, func(lo, hi int) {
		if d, ok := any(dst).([]float32); ok {
			leakyFloat32(d[lo:hi], any(src).([]float32)[lo:hi], float32(slope))
			return
		}
		leakyGo(dst[lo:hi], src[lo:hi], slope)
	})
}

func leakyGo[T Float](dst, src []T, slope T) {
	for i, x := range src[:len(dst)] {
		if x > 0 {
			dst[i] = x
		} else {
			dst[i] = slope * x
		}
	}
}

// LeakyReLUGrad sets dst[i] = grad[i] where x[i] is positive and
// slope·grad[i] elsewhere: the gradient of LeakyReLU at x.
func LeakyReLUGrad[T Float](dst, x, grad []T, slope T) {
	parallelFor(len(dst), 1, func(lo, hi int) {
		if d, ok := any(dst).([]float32); ok {
			leakyGradFloat32(d[lo:hi], any(x).([]float32)[lo:hi], any(grad).([]float32)[lo:hi], float32(slope))
			return
		}
		leakyGradGo(dst[lo:hi], x[lo:hi], grad[lo:hi], slope)
	})
}

func leakyGradGo[T Float](dst, x, grad []T, slope T) {
	for i, v := range x[:len(dst)] {
		if v > 0 {
			dst[i] = grad[i]
		} else {
			dst[i] = slope * grad[i]
		}
	}
}

// Add sets dst[i] = a[i] + b[i]. dst may be a or b.
func Add[T Float](dst, a, b []T) {
	parallelFor(len(dst), 1, func(lo, hi int) {
		if d, ok := any(dst).([]float32); ok {
			addFloat32(d[lo:hi], any(a).([]float32)[lo:hi], any(b).([]float32)[lo:hi])
			return
		}
		addGo(dst[lo:hi], a[lo:hi], b[lo:hi])
	})
}

func addGo[T Float](dst, a, b []T) {
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

// AddRowVector adds v to every row of the row-major matrix m, whose rows
// have len(v) columns.
func AddRowVector[T Float](m, v []T) {
	parallelFor(len(m), len(v), func(lo, hi int) {
		if f, ok := any(m).([]float32); ok {
			addRowFloat32(f[lo:hi], any(v).([]float32))
			return
		}
		addRowGo(m[lo:hi], v)
	})
}

func addRowGo[T Float](m, v []T) {
	for r := 0; r < len(m); r += len(v) {
		row := m[r : r+len(v)]
		for c, x := range v {
			row[c] += x
		}
	}
}

// SumRows sets dst to the sum of the rows of the row-major matrix m, whose
// rows have len(dst) columns, each column added in row order.
func SumRows[T Float](dst, m []T) {
	if len(dst) == 0 {
		return
	}
	if d, ok := any(dst).([]float32); ok {
		sumRowsFloat32(d, any(m).([]float32), len(m)/len(dst), len(dst))
		return
	}
	sumRowsGo(dst, m, len(m)/len(dst), len(dst))
}

// sumRowsGo sets dst to the sum of the rows of m, rows ld apart, over the
// len(dst) columns.
func sumRowsGo[T Float](dst, m []T, rows, ld int) {
	clear(dst)
	for r := range rows {
		for c, x := range m[r*ld:][:len(dst)] {
			dst[c] += x
		}
	}
}
