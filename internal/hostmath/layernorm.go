package hostmath

import "math"

// rowStats returns the mean of a row and 1/√(var + eps) for its biased
// variance, as PyTorch's LayerNorm normalises, accumulated in float64.
func rowStats[T Float](row []T, eps float64) (mean, rstd T) {
	s := 0.0
	for _, v := range row {
		s += float64(v)
	}
	m := s / float64(len(row))
	ss := 0.0
	for _, v := range row {
		d := float64(v) - m
		ss += d * d
	}
	return T(m), T(1 / math.Sqrt(ss/float64(len(row))+eps))
}

// LayerNorm normalises each row of x over its len(gamma) columns and sets
// y = (x − mean)/√(var + eps) ⊙ gamma + beta, the variance being biased.
// On float32 rows and a CPU with AVX-512, the LayerNorm kernels run in C
// (layernorm.h), with float rather than double row sums.
func LayerNorm[T Float](y, x, gamma, beta []T, eps float64) {
	cols := len(gamma)
	parallelFor(len(x), cols, func(lo, hi int) {
		if layerNormFast(y[lo:hi], x[lo:hi], gamma, beta, eps) {
			return
		}
		for r := lo; r < hi; r += cols {
			xr, yr := x[r:r+cols], y[r:r+cols]
			mean, rstd := rowStats(xr, eps)
			for i, v := range xr {
				yr[i] = (v-mean)*rstd*gamma[i] + beta[i]
			}
		}
	})
}

// LayerNormInputGrad sets dx to the gradient of LayerNorm with respect to x
// given the output gradient g: with x̂ the normalised row and ĝ = g ⊙ gamma,
// dx = (ĝ − mean(ĝ) − x̂·mean(ĝ ⊙ x̂))/√(var + eps).
func LayerNormInputGrad[T Float](dx, x, gamma, g []T, eps float64) {
	cols := len(gamma)
	parallelFor(len(x), cols, func(lo, hi int) {
		if layerNormInputGradFast(dx[lo:hi], x[lo:hi], gamma, g[lo:hi], eps) {
			return
		}
		for r := lo; r < hi; r += cols {
			xr, gr, dr := x[r:r+cols], g[r:r+cols], dx[r:r+cols]
			mean, rstd := rowStats(xr, eps)
			var sg, sgx float64
			for i, v := range xr {
				gh := float64(gr[i] * gamma[i])
				sg += gh
				sgx += gh * float64((v-mean)*rstd)
			}
			mg, mgx := T(sg/float64(cols)), T(sgx/float64(cols))
			for i, v := range xr {
				xh := (v - mean) * rstd
				dr[i] = (gr[i]*gamma[i] - mg - xh*mgx) * rstd
			}
		}
	})
}

// LayerNormWeightGrad sets dgamma to the gradient of LayerNorm with respect
// to gamma given the output gradient g: the column sums of g ⊙ x̂. The rows
// are split over the threads and their partial sums added in a fixed order.
func LayerNormWeightGrad[T Float](dgamma, x, g []T, eps float64) {
	cols := len(dgamma)
	rows := len(x) / cols
	workers := max(1, min(Threads(), len(x)/minChunk, rows))
	per := (rows + workers - 1) / workers
	partial := make([][]float64, workers)
	done := make(chan struct{}, workers)
	for w := range workers {
		go func() {
			acc := make([]float64, cols)
			lo, hi := min(w*per, rows)*cols, min((w+1)*per, rows)*cols
			if hi > lo && layerNormWeightGradFast(acc, x[lo:hi], g[lo:hi], eps) {
				partial[w] = acc
				done <- struct{}{}
				return
			}
			for r := w * per; r < min((w+1)*per, rows); r++ {
				xr, gr := x[r*cols:(r+1)*cols], g[r*cols:(r+1)*cols]
				mean, rstd := rowStats(xr, eps)
				for i, v := range xr {
					acc[i] += float64(gr[i] * ((v - mean) * rstd))
				}
			}
			partial[w] = acc
			done <- struct{}{}
		}()
	}
	for range workers {
		<-done
	}
	for i := range dgamma {
		s := 0.0
		for _, acc := range partial {
			s += acc[i]
		}
		dgamma[i] = T(s)
	}
}
