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
// probabilities above the diagonal are 0, and the kernels skip the tiles
// of the products that would only meet those zeros (see triGemm).
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

// attentionBlock is the side of the row blocks in which triGemm's BLAS path
// computes causal products: blocks wholly above the diagonal are skipped.
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

// tri is the triangle of a product when causal, or triNone.
func (a Attention) tri(t triangle) triangle {
	if a.Causal {
		return t
	}
	return triNone
}

// scratchOf is the scratch, in elements, that a pair's products need: the
// larger of an S×S product's and an S×hd product's.
func scratchOf[T Float](a Attention) int {
	return max(triGemmLen[T](a.Seq, a.HeadDim), triGemmLen[T](a.HeadDim, a.Seq))
}

// AttentionProbs sets p to the attention probabilities
// softmax(Scale·Q·Kᵀ) of every (sequence, head) pair, causally masked when
// a.Causal, from the packed qkv. When causal, only the scores on or below
// the diagonal are computed (in tiles: see triGemm).
func AttentionProbs[T Float](p, qkv []T, a Attention) {
	ld, s, dh := 3*a.DModel(), a.Seq, a.HeadDim
	scale := T(a.Scale())
	forEachPair[T](a.Batch*a.Heads, scratchOf[T](a), func(i int, scratch []T) {
		at := a.pair(i)
		q, kT := matrix[T]{qkv[at.q:], ld, 1}, matrix[T]{qkv[at.k:], 1, ld}
		triGemm(a.tri(triC), s, s, dh, scale, q, kT, 0, p[at.p:], s, scratch)
		softmaxRows(p[at.p:at.p+s*s], s, s, s, 0, a.Causal)
	})
}

// AttentionMix sets o to the attention output: for each pair, tril(P)·V
// when causal (P·V otherwise), written into the head's columns of o.
// Entries of p above the diagonal are ignored when causal.
func AttentionMix[T Float](o, p, qkv []T, a Attention) {
	ld, d, s, dh := 3*a.DModel(), a.DModel(), a.Seq, a.HeadDim
	forEachPair[T](a.Batch*a.Heads, scratchOf[T](a), func(i int, scratch []T) {
		at := a.pair(i)
		pm, v := matrix[T]{p[at.p:], s, 1}, matrix[T]{qkv[at.v:], ld, 1}
		triGemm(a.tri(triALower), s, dh, s, 1, pm, v, 0, o[at.o:], d, scratch)
	})
}

// AttentionMixProbsGrad sets dp to the gradient of AttentionMix with
// respect to the probabilities given the output gradient g [Batch·Seq, d]:
// G·Vᵀ per pair, with zeros above the diagonal when causal.
func AttentionMixProbsGrad[T Float](dp, g, qkv []T, a Attention) {
	ld, d, s, dh := 3*a.DModel(), a.DModel(), a.Seq, a.HeadDim
	forEachPair[T](a.Batch*a.Heads, scratchOf[T](a), func(i int, scratch []T) {
		at := a.pair(i)
		gm, vT := matrix[T]{g[at.o:], d, 1}, matrix[T]{qkv[at.v:], 1, ld}
		triGemm(a.tri(triC), s, s, dh, 1, gm, vT, 0, dp[at.p:], s, scratch)
		for r := range s {
			clear(dp[at.p+r*s+a.limit(r) : at.p+(r+1)*s])
		}
	})
}

// AttentionMixValueGrad sets dqkv [Batch·Seq, 3d] to the gradient of
// AttentionMix with respect to qkv given the output gradient g: tril(P)ᵀ·G
// per pair (Pᵀ·G when not causal) in the value columns, zeros in the query
// and key columns, which the output does not depend on.
func AttentionMixValueGrad[T Float](dqkv, p, g []T, a Attention) {
	ld, d, s, dh := 3*a.DModel(), a.DModel(), a.Seq, a.HeadDim
	forEachPair[T](a.Batch*a.Heads, scratchOf[T](a), func(i int, scratch []T) {
		at := a.pair(i)
		for r := range s {
			clear(dqkv[at.q+r*ld : at.q+r*ld+dh])
			clear(dqkv[at.k+r*ld : at.k+r*ld+dh])
		}
		pT, gm := matrix[T]{p[at.p:], 1, s}, matrix[T]{g[at.o:], d, 1}
		triGemm(a.tri(triAUpper), s, dh, s, 1, pT, gm, 0, dqkv[at.v:], ld, scratch)
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
	forEachPair[T](a.Batch*a.Heads, s*s+scratchOf[T](a), func(i int, scratch []T) {
		at := a.pair(i)
		ds, scratch := scratch[:s*s], scratch[s*s:]
		softmaxGradRows(ds, p[at.p:at.p+s*s], dp[at.p:at.p+s*s], s, s, s, 0, a.Causal)
		for r := range s {
			clear(dqkv[at.v+r*ld : at.v+r*ld+dh])
		}
		dsm, dsT := matrix[T]{ds, s, 1}, matrix[T]{ds, 1, s}
		k, q := matrix[T]{qkv[at.k:], ld, 1}, matrix[T]{qkv[at.q:], ld, 1}
		triGemm(a.tri(triALower), s, dh, s, scale, dsm, k, 0, dqkv[at.q:], ld, scratch)
		triGemm(a.tri(triAUpper), s, dh, s, scale, dsT, q, 0, dqkv[at.k:], ld, scratch)
	})
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
	shareTasks(workers, n, func() (func(int), func()) {
		s := getScratch[T](&pairPool, scratchLen)
		return func(i int) { body(i, *s) }, func() { putScratch(&pairPool, s) }
	})
}

// shareTasks runs tasks 0 to n-1 on workers goroutines, each taking the
// next task as soon as it is done with one, so that a worker slowed down
// holds no other back. start, called once in each goroutine, returns the
// function that runs a task there and one called when the goroutine has
// no task left (nil for none): a worker's scratch is got and put back
// there.
func shareTasks(workers, n int, start func() (run func(int), end func())) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run, end := start()
			if end != nil {
				defer end()
			}
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				run(i)
			}
		}()
	}
	wg.Wait()
}
