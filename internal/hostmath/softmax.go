package hostmath

import (
	"fmt"
	"math"
)

// exp32 returns eˣ in float32 within 2 ulp of the correctly rounded value,
// several times faster than math.Exp: x = n·ln2 + r with |r| ≤ ln2/2, eʳ
// from Cephes' degree-7 polynomial for expf, and 2ⁿ built in the exponent
// bits. Results below the smallest normal float32 are flushed to 0.
func exp32(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375 // ln 2 split so that n·ln2hi is exact
		ln2lo = -2.12194440e-4
	)
	switch {
	case x != x:
		return x
	case x > 88.72283:
		return float32(math.Inf(1))
	case x < -87.33654:
		return 0
	}
	n := float32(math.Floor(float64(x*log2e + 0.5)))
	r := x - n*ln2hi - n*ln2lo
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	p = p*r*r + r + 1
	// n ∈ [-126, 128]: 2ⁿ in two factors keeps both representable.
	h := int32(n) / 2
	return p * math.Float32frombits(uint32(h+127)<<23) * math.Float32frombits(uint32(int32(n)-h+127)<<23)
}

// expShifted sets dst[i] = e^(scale·src[i] − shift) and returns the sum of
// dst, accumulated in float64. dst and src may be the same slice. float32
// uses exp32, float64 math.Exp.
func expShifted[T Float](dst, src []T, scale, shift T) float64 {
	sum := 0.0
	switch d := any(dst).(type) {
	case []float32:
		s := any(src).([]float32)
		sc, sh := float32(scale), float32(shift)
		var acc float32
		for i, v := range s[:len(d)] {
			e := exp32(sc*v - sh)
			d[i] = e
			acc += e
		}
		sum = float64(acc)
	case []float64:
		s := any(src).([]float64)
		sc, sh := float64(scale), float64(shift)
		for i, v := range s[:len(d)] {
			e := math.Exp(sc*v - sh)
			d[i] = e
			sum += e
		}
	}
	return sum
}

// maxOf returns the largest element of a non-empty slice.
func maxOf[T Float](x []T) T {
	m := x[0]
	for _, v := range x[1:] {
		if v > m {
			m = v
		}
	}
	return m
}

// causalLimit is how many leading entries of row r0+r of a block take
// part in a softmax: all n, or when causal those up to the diagonal.
func causalLimit(r0, r, n int, causal bool) int {
	if causal {
		return min(r0+r+1, n)
	}
	return n
}

// softmaxRows sets each of rows rows (stride ld) of p, the first being row
// r0 of its matrix, to the softmax of its leading entries (all n, or those
// up to the diagonal when causal) and the rest of its n entries to zero.
func softmaxRows[T Float](p []T, rows, n, ld, r0 int, causal bool) {
	if p32, ok := any(p).([]float32); ok {
		softmaxRowsF32(p32, rows, n, ld, r0, causal)
		return
	}
	softmaxRowsGo(p, rows, n, ld, r0, causal)
}

func softmaxRowsGo[T Float](p []T, rows, n, ld, r0 int, causal bool) {
	for r := range rows {
		row := p[r*ld : r*ld+n]
		lim := causalLimit(r0, r, n, causal)
		inv := T(1 / expShifted(row[:lim], row[:lim], 1, maxOf(row[:lim])))
		for i := range row[:lim] {
			row[i] *= inv
		}
		clear(row[lim:])
	}
}

// softmaxGradRows sets ds = p ⊙ (dp − rowsum(p ⊙ dp)), the gradient of
// softmaxRows' input given its output p and that output's gradient dp,
// over the same leading entries, and the rest of each row to zero.
func softmaxGradRows[T Float](ds, p, dp []T, rows, n, ld, r0 int, causal bool) {
	if ds32, ok := any(ds).([]float32); ok {
		softmaxGradRowsF32(ds32, any(p).([]float32), any(dp).([]float32), rows, n, ld, r0, causal)
		return
	}
	softmaxGradRowsGo(ds, p, dp, rows, n, ld, r0, causal)
}

func softmaxGradRowsGo[T Float](ds, p, dp []T, rows, n, ld, r0 int, causal bool) {
	for r := range rows {
		lim := causalLimit(r0, r, n, causal)
		pr, gr, out := p[r*ld:r*ld+lim], dp[r*ld:r*ld+lim], ds[r*ld:r*ld+n]
		var dot T
		for j, v := range pr {
			dot += v * gr[j]
		}
		for j, v := range pr {
			out[j] = v * (gr[j] - dot)
		}
		clear(out[lim:])
	}
}

// softmaxScaledRows sets each of rows contiguous rows of n entries of dst
// to scale·softmax of the matching row of x and, when lse is not nil,
// lse[r] to the row's log-sum-exp, computed with the row maximum
// subtracted.
func softmaxScaledRows[T Float](dst, x []T, rows, n int, scale T, lse []float64) {
	if d32, ok := any(dst).([]float32); ok {
		softmaxScaledRowsF32(d32, any(x).([]float32), rows, n, float32(scale), lse)
		return
	}
	softmaxScaledRowsGo(dst, x, rows, n, scale, lse)
}

func softmaxScaledRowsGo[T Float](dst, x []T, rows, n int, scale T, lse []float64) {
	for r := range rows {
		xr, d := x[r*n:(r+1)*n], dst[r*n:(r+1)*n]
		m := maxOf(xr)
		sum := expShifted(d, xr, 1, m)
		if lse != nil {
			lse[r] = float64(m) + math.Log(sum)
		}
		k := scale * T(1/sum)
		for i := range d {
			d[i] *= k
		}
	}
}

// classIndex reads a class id stored as a float: it must be an exact
// integer in [0, classes).
func classIndex[T Float](v T, classes int) (int, error) {
	c := int(v)
	if T(c) != v || c < 0 || c >= classes {
		return 0, fmt.Errorf("class id %v is not an integer in [0, %d)", float64(v), classes)
	}
	return c, nil
}

// checkClasses reports the first id in ids that is not an exact integer in
// [0, classes).
func checkClasses[T Float](ids []T, classes int) error {
	for i, v := range ids {
		if _, err := classIndex(v, classes); err != nil {
			return fmt.Errorf("element %d: %w", i, err)
		}
	}
	return nil
}

// SoftmaxCrossEntropy returns the mean over the rows of logits of the
// cross-entropy between softmax(row) and the class given by the matching
// element of targets: mean(logsumexp(row) − row[target]). Rows have
// len(logits)/len(targets) columns; targets hold exact integer class ids.
// The log-sum-exp subtracts the row's maximum first, so large logits do not
// overflow.
func SoftmaxCrossEntropy[T Float](logits, targets []T) (float64, error) {
	rows := len(targets)
	if rows == 0 || len(logits)%rows != 0 {
		return 0, fmt.Errorf("cross-entropy: %d logits do not split into %d rows", len(logits), rows)
	}
	classes := len(logits) / rows
	if err := checkClasses(targets, classes); err != nil {
		return 0, fmt.Errorf("cross-entropy targets: %w", err)
	}
	sum := parallelRowSum(rows, classes, func(lo, hi int) float64 {
		// Rows go through a small scratch a few at a time: only their
		// log-sum-exp is kept.
		const chunk = 16
		scratch := make([]T, chunk*classes)
		lse := make([]float64, chunk)
		s := 0.0
		for r0 := lo; r0 < hi; r0 += chunk {
			n := min(chunk, hi-r0)
			softmaxScaledRows(scratch, logits[r0*classes:(r0+n)*classes], n, classes, 1, lse)
			for r := range n {
				s += lse[r] - float64(logits[(r0+r)*classes+int(targets[r0+r])])
			}
		}
		return s
	})
	return sum / float64(rows), nil
}

// SoftmaxCrossEntropyGrad sets dst to the gradient of SoftmaxCrossEntropy
// with respect to the logits, times seed: (softmax(row) − onehot(target)) ·
// seed / rows.
func SoftmaxCrossEntropyGrad[T Float](dst, logits, targets []T, seed T) error {
	rows := len(targets)
	if rows == 0 || len(logits)%rows != 0 || len(dst) != len(logits) {
		return fmt.Errorf("cross-entropy gradient: %d logits and %d gradients do not split into %d rows", len(logits), len(dst), rows)
	}
	classes := len(logits) / rows
	if err := checkClasses(targets, classes); err != nil {
		return fmt.Errorf("cross-entropy targets: %w", err)
	}
	scale := seed / T(rows)
	parallelFor(len(dst), classes, func(lo, hi int) {
		softmaxScaledRows(dst[lo:hi], logits[lo:hi], (hi-lo)/classes, classes, scale, nil)
		for r := lo / classes; r < hi/classes; r++ {
			dst[r*classes+int(targets[r])] -= scale
		}
	})
	return nil
}

// parallelRowSum adds up part(lo, hi) over contiguous chunks of rows, one
// per thread when the rows hold enough elements to share. The chunking
// depends only on the sizes and the thread count, so the result is
// reproducible from run to run on the same settings.
func parallelRowSum(rows, cols int, part func(lo, hi int) float64) float64 {
	workers := min(Threads(), rows*cols/minChunk, rows)
	if workers <= 1 {
		return part(0, rows)
	}
	sums := make([]float64, workers)
	per := (rows + workers - 1) / workers
	done := make(chan struct{}, workers)
	for w := range workers {
		go func() {
			sums[w] = part(min(w*per, rows), min((w+1)*per, rows))
			done <- struct{}{}
		}()
	}
	for range workers {
		<-done
	}
	total := 0.0
	for _, s := range sums {
		total += s
	}
	return total
}
