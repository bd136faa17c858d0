package hostmath

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// Attention describes multi-head scaled dot-product self-attention over a
// batch of sequences, with the queries, keys and values packed as PyTorch's
// MultiheadAttention in_proj produces them: qkv is [Batch·Seq, 3·d] for
// d = Heads·HeadDim, a token's query in columns [0, d), its key in [d, 2d)
// and its value in [2d, 3d), head h taking HeadDim columns from h·HeadDim
// in each. The attention probabilities are [Batch, Heads, Seq, Seq] and the
// attention output, heads merged, is [Batch·Seq, d].
//
// With Causal, position s attends to positions t ≤ s only: the
// probabilities above the diagonal are 0, and the kernels skip the blocks
// of the products that would only meet those zeros.
type Attention struct {
	Batch, Seq, Heads, HeadDim int
	Causal                     bool
}

// DModel is the width of the model, Heads·HeadDim.
func (a Attention) DModel() int { return a.Heads * a.HeadDim }

// Scale is the factor 1/√HeadDim of the scores.
func (a Attention) Scale() float64 { return 1 / math.Sqrt(float64(a.HeadDim)) }

// Validate reports sizes that do not describe an attention.
func (a Attention) Validate() error {
	if a.Batch <= 0 || a.Seq <= 0 || a.Heads <= 0 || a.HeadDim <= 0 {
		return fmt.Errorf("attention sizes must be positive: %+v", a)
	}
	return nil
}

// attentionBlock is the side of the row and column blocks in which causal
// products are computed: blocks wholly above the diagonal are skipped.
const attentionBlock = 128

// pair locates one (sequence, head) pair's matrices in the packed layouts.
type pair struct {
	q, k, v int // offsets of the head's first query, key and value in qkv
	p       int // offset of its probabilities
	o       int // offset of its first output element in the [Batch·Seq, d] layout
}

func (a Attention) pair(i int) pair {
	b, h := i/a.Heads, i%a.Heads
	d := a.DModel()
	q := b*a.Seq*3*d + h*a.HeadDim
	return pair{q: q, k: q + d, v: q + 2*d, p: i * a.Seq * a.Seq, o: b*a.Seq*d + h*a.HeadDim}
}

// limit is how many leading columns of probability row r can be non-zero.
func (a Attention) limit(r int) int {
	if a.Causal {
		return r + 1
	}
	return a.Seq
}

// blocks calls f for each block of rows [r0, r1) in which the products are
// computed: blocks of attentionBlock rows when causal, all rows otherwise.
func (a Attention) blocks(f func(r0, r1 int)) {
	step := a.Seq
	if a.Causal {
		step = attentionBlock
	}
	for r0 := 0; r0 < a.Seq; r0 += step {
		f(r0, min(r0+step, a.Seq))
	}
}

// visible is the number of key columns that rows up to r1 of a pair attend
// to: every position, or those up to r1 when causal.
func (a Attention) visible(r1 int) int {
	if a.Causal {
		return r1
	}
	return a.Seq
}

// AttentionProbs sets p to the attention probabilities
// softmax(Scale·Q·Kᵀ) of every (sequence, head) pair, causally masked when
// a.Causal, from the packed qkv.
func AttentionProbs[T Float](p, qkv []T, a Attention) {
	ld, s, dh := 3*a.DModel(), a.Seq, a.HeadDim
	scale := T(a.Scale())
	forEachPair[T](a.Batch*a.Heads, 0, func(i int, _ []T) {
		at := a.pair(i)
		a.blocks(func(r0, r1 int) {
			cols := a.visible(r1)
			gemmStrided(false, true, r1-r0, cols, dh, scale, qkv[at.q+r0*ld:], ld, qkv[at.k:], ld, 0, p[at.p+r0*s:], s)
			softmaxRows(p[at.p+r0*s:at.p+r1*s], r1-r0, s, s, r0, a.Causal)
		})
	})
}

// AttentionMix sets o to the attention output: for each pair, tril(P)·V
// when causal (P·V otherwise), written into the head's columns of o.
// Entries of p above the diagonal are ignored when causal.
func AttentionMix[T Float](o, p, qkv []T, a Attention) {
	ld, d, s, dh := 3*a.DModel(), a.DModel(), a.Seq, a.HeadDim
	forEachPair[T](a.Batch*a.Heads, attentionBlock*attentionBlock, func(i int, tri []T) {
		at := a.pair(i)
		a.blocks(func(r0, r1 int) {
			out := o[at.o+r0*d:]
			if !a.Causal {
				gemmStrided(false, false, r1-r0, dh, s, 1, p[at.p+r0*s:], s, qkv[at.v:], ld, 0, out, d)
				return
			}
			var beta T
			if r0 > 0 {
				gemmStrided(false, false, r1-r0, dh, r0, 1, p[at.p+r0*s:], s, qkv[at.v:], ld, 0, out, d)
				beta = 1
			}
			n := r1 - r0
			lowerTriangle(tri[:n*n], p[at.p+r0*s+r0:], s, n)
			gemmStrided(false, false, n, dh, n, 1, tri, n, qkv[at.v+r0*ld:], ld, beta, out, d)
		})
	})
}

// AttentionMixProbsGrad sets dp to the gradient of AttentionMix with
// respect to the probabilities given the output gradient g [Batch·Seq, d]:
// G·Vᵀ per pair, with zeros above the diagonal when causal.
func AttentionMixProbsGrad[T Float](dp, g, qkv []T, a Attention) {
	ld, d, s, dh := 3*a.DModel(), a.DModel(), a.Seq, a.HeadDim
	forEachPair[T](a.Batch*a.Heads, 0, func(i int, _ []T) {
		at := a.pair(i)
		a.blocks(func(r0, r1 int) {
			cols := a.visible(r1)
			gemmStrided(false, true, r1-r0, cols, dh, 1, g[at.o+r0*d:], d, qkv[at.v:], ld, 0, dp[at.p+r0*s:], s)
			for r := r0; r < r1; r++ {
				clear(dp[at.p+r*s+a.limit(r) : at.p+(r+1)*s])
			}
		})
	})
}

// AttentionMixValueGrad sets dqkv [Batch·Seq, 3d] to the gradient of
// AttentionMix with respect to qkv given the output gradient g: tril(P)ᵀ·G
// per pair (Pᵀ·G when not causal) in the value columns, zeros in the query
// and key columns, which the output does not depend on.
func AttentionMixValueGrad[T Float](dqkv, p, g []T, a Attention) {
	ld, d, s, dh := 3*a.DModel(), a.DModel(), a.Seq, a.HeadDim
	forEachPair[T](a.Batch*a.Heads, attentionBlock*attentionBlock, func(i int, tri []T) {
		at := a.pair(i)
		for r := range s {
			clear(dqkv[at.q+r*ld : at.q+r*ld+dh])
			clear(dqkv[at.k+r*ld : at.k+r*ld+dh])
		}
		if !a.Causal {
			gemmStrided(true, false, s, dh, s, 1, p[at.p:], s, g[at.o:], d, 0, dqkv[at.v:], ld)
			return
		}
		// Rows c0…c1 of dV take the diagonal block, masked, and the full
		// column block of P below it.
		a.blocks(func(c0, c1 int) {
			n := c1 - c0
			dv := dqkv[at.v+c0*ld:]
			lowerTriangle(tri[:n*n], p[at.p+c0*s+c0:], s, n)
			gemmStrided(true, false, n, dh, n, 1, tri, n, g[at.o+c0*d:], d, 0, dv, ld)
			if c1 < s {
				gemmStrided(true, false, n, dh, s-c1, 1, p[at.p+c1*s+c0:], s, g[at.o+c1*d:], d, 1, dv, ld)
			}
		})
	})
}

// AttentionProbsGrad sets dqkv [Batch·Seq, 3d] to the gradient of
// AttentionProbs with respect to qkv, given the probabilities p it computed
// and their gradient dp: with dS = P ⊙ (dP − rowsum(P ⊙ dP)) over each
// row's unmasked columns, dQ = Scale·dS·K and dK = Scale·dSᵀ·Q in the query
// and key columns, and zeros in the value columns, which the probabilities
// do not depend on.
func AttentionProbsGrad[T Float](dqkv, qkv, p, dp []T, a Attention) {
	ld, s, dh := 3*a.DModel(), a.Seq, a.HeadDim
	scale := T(a.Scale())
	forEachPair[T](a.Batch*a.Heads, s*s, func(i int, ds []T) {
		at := a.pair(i)
		softmaxGradRows(ds, p[at.p:at.p+s*s], dp[at.p:at.p+s*s], s, s, s, 0, a.Causal)
		for r := range s {
			clear(dqkv[at.v+r*ld : at.v+r*ld+dh])
		}
		// dS is exactly zero above the diagonal when causal, so whole
		// blocks that straddle it multiply correctly.
		a.blocks(func(r0, r1 int) {
			cols := a.visible(r1)
			gemmStrided(false, false, r1-r0, dh, cols, scale, ds[r0*s:], s, qkv[at.k:], ld, 0, dqkv[at.q+r0*ld:], ld)
		})
		a.blocks(func(c0, c1 int) {
			first := 0
			if a.Causal {
				first = c0
			}
			gemmStrided(true, false, c1-c0, dh, s-first, scale, ds[first*s+c0:], s, qkv[at.q+first*ld:], ld, 0, dqkv[at.k+c0*ld:], ld)
		})
	})
}

// lowerTriangle copies the n×n block of src (row stride ld) into dst (row
// stride n) with the entries above the diagonal set to zero.
func lowerTriangle[T Float](dst, src []T, ld, n int) {
	for r := range n {
		row := dst[r*n : (r+1)*n]
		copy(row[:r+1], src[r*ld:r*ld+r+1])
		clear(row[r+1:])
	}
}

// pairPool keeps the attention workers' scratch slices between calls.
var pairPool scratchPool

// forEachPair calls body(i, scratch) for every i in [0, n), spread over the
// kernels' threads, each worker with its own scratch of scratchLen
// elements. The workers multiply with a single-threaded BLAS: the pairs'
// products are too small to split well, and one pair's data stays in one
// core's cache from one product to the next.
func forEachPair[T Float](n, scratchLen int, body func(i int, scratch []T)) {
	workers := min(Threads(), n)
	if workers <= 1 {
		s := getScratch[T](&pairPool, scratchLen)
		defer putScratch(&pairPool, s)
		for i := range n {
			body(i, *s)
		}
		return
	}
	setBLASThreads(1)
	defer setBLASThreads(Threads())
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := getScratch[T](&pairPool, scratchLen)
			defer putScratch(&pairPool, s)
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				body(i, *s)
			}
		}()
	}
	wg.Wait()
}
