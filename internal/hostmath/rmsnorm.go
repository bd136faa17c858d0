package hostmath

import (
	"math"
	"sync"
)

// rmsLanes is the number of partial sums of a row's reductions: element i
// goes into lane i mod rmsLanes, and the lanes are added up by
// sumLanes, so that the C kernels (llama.h) sum the same terms in the
// same order with vector lanes.
const rmsLanes = 16

// sumLanes adds up the lanes pairwise, lane i with lane i+8, then i+4,
// i+2, i+1 (it overwrites them).
func sumLanes(l *[rmsLanes]float64) float64 {
	for w := rmsLanes / 2; w >= 1; w /= 2 {
		for i := range w {
			l[i] += l[i+w]
		}
	}
	return l[0]
}

// rmsRstd returns 1/√(mean(x²) + eps) of a row, the mean of squares
// accumulated in float64 (as rowStats accumulates LayerNorm's statistics)
// over rmsLanes lanes.
func rmsRstd[T Float](row []T, eps float64) T {
	var l [rmsLanes]float64
	for i, v := range row {
		l[i%rmsLanes] += float64(v) * float64(v)
	}
	return T(1 / math.Sqrt(sumLanes(&l)/float64(len(row))+eps))
}

// RMSNorm sets each row of y to weight ⊙ x̂, x̂ = x/√(mean(x²) + eps) over
// the row's len(weight) columns: transformers' LlamaRMSNorm, which
// normalises first (x·rstd) and scales after. The rows are split over the
// threads; each row is computed by one of them.
func RMSNorm[T Float](y, x, weight []T, eps float64) {
	cols := len(weight)
	if cols == 0 {
		return
	}
	parallelFor(len(x), cols, func(lo, hi int) {
		if !rmsNormFast(y[lo:hi], x[lo:hi], weight, eps) {
			rmsNormGo(y[lo:hi], x[lo:hi], weight, eps)
		}
	})
}

// rmsNormGo is RMSNorm's Go loop, one thread; the float32 C kernel
// (llama.h) computes what it computes.
func rmsNormGo[T Float](y, x, weight []T, eps float64) {
	cols := len(weight)
	for r := 0; r < len(x); r += cols {
		xr, yr := x[r:r+cols], y[r:r+cols]
		rstd := rmsRstd(xr, eps)
		for i, v := range xr {
			yr[i] = weight[i] * (v * rstd)
		}
	}
}

// RMSNormInputGrad sets dx to the gradient of RMSNorm with respect to x
// given the output gradient g: with x̂ the normalised row and ĝ = g ⊙ weight,
// dx = (ĝ − x̂·mean(ĝ ⊙ x̂))/√(mean(x²) + eps). The statistics are
// recomputed from x.
func RMSNormInputGrad[T Float](dx, x, weight, g []T, eps float64) {
	cols := len(weight)
	if cols == 0 {
		return
	}
	parallelFor(len(x), cols, func(lo, hi int) {
		if !rmsNormInputGradFast(dx[lo:hi], x[lo:hi], weight, g[lo:hi], eps) {
			rmsNormInputGradGo(dx[lo:hi], x[lo:hi], weight, g[lo:hi], eps)
		}
	})
}

// rmsNormInputGradGo is RMSNormInputGrad's Go loop, one thread.
func rmsNormInputGradGo[T Float](dx, x, weight, g []T, eps float64) {
	cols := len(weight)
	for r := 0; r < len(x); r += cols {
		xr, gr, dr := x[r:r+cols], g[r:r+cols], dx[r:r+cols]
		rstd := rmsRstd(xr, eps)
		var l [rmsLanes]float64
		for i, v := range xr {
			l[i%rmsLanes] += float64(gr[i]*weight[i]) * float64(v*rstd)
		}
		mgx := T(sumLanes(&l) / float64(cols))
		for i, v := range xr {
			dr[i] = (gr[i]*weight[i] - (v*rstd)*mgx) * rstd
		}
	}
}

// RMSNormWeightGrad sets dweight to the gradient of RMSNorm with respect to
// its weight given the output gradient g: the column sums of g ⊙ x̂. The
// rows' rstd are computed first, each row by one thread; then each column
// is summed over the rows in order, in float64, by one thread, so the
// result does not depend on the thread count.
func RMSNormWeightGrad[T Float](dweight, x, g []T, eps float64) {
	cols := len(dweight)
	if cols == 0 {
		return
	}
	rows := len(x) / cols
	rstd := make([]T, rows)
	parallelFor(len(x), cols, func(lo, hi int) {
		rs := rstd[lo/cols : hi/cols]
		if !rmsRstdFast(rs, x[lo:hi], cols, eps) {
			for r := range rs {
				rs[r] = rmsRstd(x[lo+r*cols:lo+(r+1)*cols], eps)
			}
		}
	})
	parallelColumns(len(x), cols, func(c0, c1 int) {
		acc := make([]float64, c1-c0)
		if !rmsWeightGradFast(acc, x, g, rstd, cols, c0, c1) {
			rmsWeightGradGo(acc, x, g, rstd, cols, c0, c1)
		}
		for i, a := range acc {
			dweight[c0+i] = T(a)
		}
	})
}

// rmsWeightGradGo adds the columns [c0, c1) of Σ_r g ⊙ x·rstd[r] into
// acc, each column over the rows in order: RMSNormWeightGrad's Go loop.
func rmsWeightGradGo[T Float](acc []float64, x, g, rstd []T, cols, c0, c1 int) {
	for r, s := range rstd {
		xr, gr := x[r*cols+c0:r*cols+c1], g[r*cols+c0:r*cols+c1]
		for i, v := range xr {
			acc[i] += float64(gr[i] * (v * s))
		}
	}
}

// parallelColumns calls body over [0, cols) split into contiguous ranges
// of columns, one per thread, for a reduction over n elements in all, and
// returns when all are done.
func parallelColumns(n, cols int, body func(c0, c1 int)) {
	workers := min(Threads(), n/minChunk, cols)
	if workers <= 1 {
		body(0, cols)
		return
	}
	per := (cols + workers - 1) / workers
	var wg sync.WaitGroup
	for c0 := 0; c0 < cols; c0 += per {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body(c0, min(c0+per, cols))
		}()
	}
	wg.Wait()
}
