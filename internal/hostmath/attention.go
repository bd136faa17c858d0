package hostmath

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// Attention describes multi-head scaled dot-product self-attention over a
// batch of sequences, with the queries, keys and values packed in one row
// per token. With KVHeads 0 (or equal to Heads) the rows are as PyTorch's
// MultiheadAttention in_proj produces them: qkv is [Batch·Seq, 3·d] for
// d = Heads·HeadDim, a token's query in columns [0, d), its key in [d, 2d)
// and its value in [2d, 3d), head h taking HeadDim columns from h·HeadDim
// in each.
//
// With KVHeads < Heads (grouped-query attention, as in Llama 3, Mistral
// and Qwen2) there are fewer key and value heads than query heads: a row
// is QKVWidth() = (Heads + 2·KVHeads)·HeadDim wide, the queries in columns
// [0, d), the keys in [d, d + kd) and the values in [d + kd, d + 2·kd) for
// kd = KVHeads·HeadDim, and query head h reads key and value head
// h / KVGroup(), as transformers' repeat_kv maps them. The kernels read a
// group's keys and values in place, with no per-head copies.
//
// The attention probabilities are [Batch, Heads, Seq, Seq] and the
// attention output, heads merged, is [Batch·Seq, d].
//
// With Causal, position s attends to positions t ≤ s only: the
// probabilities above the diagonal are 0, and the kernels skip the tiles
// of the products that would only meet those zeros (see triGemm).
type Attention struct {
	Batch, Seq, Heads, HeadDim int
	// KVHeads is the number of key and value heads, a divisor of Heads;
	// 0 means Heads.
	KVHeads int
	Causal  bool
}

// DModel is the width of the model, Heads·HeadDim: of the queries and of
// the attention output.
func (a Attention) DModel() int { return a.Heads * a.HeadDim }

// NumKVHeads is the number of key and value heads: KVHeads, or Heads when
// KVHeads is 0.
func (a Attention) NumKVHeads() int {
	if a.KVHeads == 0 {
		return a.Heads
	}
	return a.KVHeads
}

// KVGroup is the number of query heads that share a key and value head,
// Heads / NumKVHeads(): query head h reads key and value head h / KVGroup().
func (a Attention) KVGroup() int { return a.Heads / a.NumKVHeads() }

// KVWidth is the width of the keys, and of the values, in a packed row:
// NumKVHeads()·HeadDim.
func (a Attention) KVWidth() int { return a.NumKVHeads() * a.HeadDim }

// QKVWidth is the width of a packed row of queries, keys and values:
// (Heads + 2·NumKVHeads())·HeadDim, 3·DModel() without grouping.
func (a Attention) QKVWidth() int { return a.DModel() + 2*a.KVWidth() }

// Scale is the factor 1/√HeadDim of the scores.
func (a Attention) Scale() float64 { return 1 / math.Sqrt(float64(a.HeadDim)) }

// Validate reports sizes that do not describe an attention: sizes not
// positive, or key and value heads that do not divide the query heads.
func (a Attention) Validate() error {
	if a.Batch <= 0 || a.Seq <= 0 || a.Heads <= 0 || a.HeadDim <= 0 || a.KVHeads < 0 {
		return fmt.Errorf("attention sizes must be positive: %+v", a)
	}
	if a.KVHeads > 0 && a.Heads%a.KVHeads != 0 {
		return fmt.Errorf("attention of %d query heads cannot share %d key and value heads: %+v", a.Heads, a.KVHeads, a)
	}
	return nil
}

// attentionBlock is the side of the row blocks in which triGemm's BLAS path
// computes causal products: blocks wholly above the diagonal are skipped.
const attentionBlock = 128

// pair locates one (sequence, query head) pair's matrices in the packed
// layouts.
type pair struct {
	q, k, v int // offsets of the head's first query, and of its group's first key and value, in qkv
	p       int // offset of its probabilities
	o       int // offset of its first output element in the [Batch·Seq, d] layout
	member  int // the query head's index in its group, h % KVGroup()
	kv      int // the index of its (sequence, key and value head), b·NumKVHeads() + h / KVGroup()
}

func (a Attention) pair(i int) pair {
	b, h := i/a.Heads, i%a.Heads
	d, kd, g := a.DModel(), a.KVWidth(), a.KVGroup()
	row := b * a.Seq * a.QKVWidth()
	k := row + d + h/g*a.HeadDim
	return pair{q: row + h*a.HeadDim, k: k, v: k + kd, p: i * a.Seq * a.Seq, o: b*a.Seq*d + h*a.HeadDim,
		member: h % g, kv: b*a.NumKVHeads() + h/g}
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
// softmax(Scale·Q·Kᵀ) of every (sequence, query head) pair, causally masked
// when a.Causal, from the packed qkv, each query head against its group's
// keys. When causal, only the scores on or below the diagonal are computed
// (in tiles: see triGemm).
func AttentionProbs[T Float](p, qkv []T, a Attention) {
	ld, s, dh := a.QKVWidth(), a.Seq, a.HeadDim
	scale := T(a.Scale())
	forEachPair[T](a.Batch*a.Heads, scratchOf[T](a), func(i int, scratch []T) {
		at := a.pair(i)
		q, kT := matrix[T]{qkv[at.q:], ld, 1}, matrix[T]{qkv[at.k:], 1, ld}
		triGemm(a.tri(triC), s, s, dh, scale, q, kT, 0, p[at.p:], s, scratch)
		softmaxRows(p[at.p:at.p+s*s], s, s, s, 0, a.Causal)
	})
}

// AttentionMix sets o to the attention output: for each pair, tril(P)·V
// when causal (P·V otherwise), V its group's values, written into the
// head's columns of o. Entries of p above the diagonal are ignored when
// causal.
func AttentionMix[T Float](o, p, qkv []T, a Attention) {
	ld, d, s, dh := a.QKVWidth(), a.DModel(), a.Seq, a.HeadDim
	forEachPair[T](a.Batch*a.Heads, scratchOf[T](a), func(i int, scratch []T) {
		at := a.pair(i)
		pm, v := matrix[T]{p[at.p:], s, 1}, matrix[T]{qkv[at.v:], ld, 1}
		triGemm(a.tri(triALower), s, dh, s, 1, pm, v, 0, o[at.o:], d, scratch)
	})
}

// AttentionMixProbsGrad sets dp to the gradient of AttentionMix with
// respect to the probabilities given the output gradient g [Batch·Seq, d]:
// G·Vᵀ per pair, V its group's values, with zeros above the diagonal when
// causal.
func AttentionMixProbsGrad[T Float](dp, g, qkv []T, a Attention) {
	ld, d, s, dh := a.QKVWidth(), a.DModel(), a.Seq, a.HeadDim
	forEachPair[T](a.Batch*a.Heads, scratchOf[T](a), func(i int, scratch []T) {
		at := a.pair(i)
		gm, vT := matrix[T]{g[at.o:], d, 1}, matrix[T]{qkv[at.v:], 1, ld}
		triGemm(a.tri(triC), s, s, dh, 1, gm, vT, 0, dp[at.p:], s, scratch)
		for r := range s {
			clear(dp[at.p+r*s+a.limit(r) : at.p+(r+1)*s])
		}
	})
}

// AttentionMixValueGrad sets dqkv [Batch·Seq, QKVWidth()] to the gradient
// of AttentionMix with respect to qkv given the output gradient g:
// tril(P)ᵀ·G per pair (Pᵀ·G when not causal) in the value columns, summed
// over the query heads of each group (see groupPart), and zeros in the
// query and key columns, which the output does not depend on.
func AttentionMixValueGrad[T Float](dqkv, p, g []T, a Attention) {
	ld, d, s, dh := a.QKVWidth(), a.DModel(), a.Seq, a.HeadDim
	parts := getScratch[T](&groupPool, groupPartsLen(a))
	defer putScratch(&groupPool, parts)
	forEachPair[T](a.Batch*a.Heads, scratchOf[T](a), func(i int, scratch []T) {
		at := a.pair(i)
		for r := range s {
			clear(dqkv[at.q+r*ld : at.q+r*ld+dh])
			if at.member == 0 {
				clear(dqkv[at.k+r*ld : at.k+r*ld+dh])
			}
		}
		dst, ldc := groupPart(dqkv, *parts, at, at.v, a)
		pT, gm := matrix[T]{p[at.p:], 1, s}, matrix[T]{g[at.o:], d, 1}
		triGemm(a.tri(triAUpper), s, dh, s, 1, pT, gm, 0, dst, ldc, scratch)
	})
	addGroups(dqkv, *parts, d+a.KVWidth(), a)
}

// AttentionProbsGrad sets dqkv [Batch·Seq, QKVWidth()] to the gradient of
// AttentionProbs with respect to qkv, given the probabilities p it computed
// and their gradient dp: with dS = P ⊙ (dP − rowsum(P ⊙ dP)) over each
// row's unmasked columns, dQ = Scale·dS·K in the query columns and
// dK = Scale·dSᵀ·Q in the key columns, summed over the query heads of each
// group (see groupPart), and zeros in the value columns, which the
// probabilities do not depend on.
func AttentionProbsGrad[T Float](dqkv, qkv, p, dp []T, a Attention) {
	ld, d, s, dh := a.QKVWidth(), a.DModel(), a.Seq, a.HeadDim
	scale := T(a.Scale())
	parts := getScratch[T](&groupPool, groupPartsLen(a))
	defer putScratch(&groupPool, parts)
	forEachPair[T](a.Batch*a.Heads, s*s+scratchOf[T](a), func(i int, scratch []T) {
		at := a.pair(i)
		ds, scratch := scratch[:s*s], scratch[s*s:]
		softmaxGradRows(ds, p[at.p:at.p+s*s], dp[at.p:at.p+s*s], s, s, s, 0, a.Causal)
		if at.member == 0 {
			for r := range s {
				clear(dqkv[at.v+r*ld : at.v+r*ld+dh])
			}
		}
		dsm, dsT := matrix[T]{ds, s, 1}, matrix[T]{ds, 1, s}
		k, q := matrix[T]{qkv[at.k:], ld, 1}, matrix[T]{qkv[at.q:], ld, 1}
		triGemm(a.tri(triALower), s, dh, s, scale, dsm, k, 0, dqkv[at.q:], ld, scratch)
		dst, ldc := groupPart(dqkv, *parts, at, at.k, a)
		triGemm(a.tri(triAUpper), s, dh, s, scale, dsT, q, 0, dst, ldc, scratch)
	})
	addGroups(dqkv, *parts, d, a)
}

// The key and value gradients of grouped-query attention are sums over
// the query heads of each group. The kernels keep the work spread over the
// (sequence, query head) pairs, as without grouping: the first query head
// of a group writes its share into dqkv, each other one its share into a
// slot of its own (groupPart), and addGroups then adds the slots to dqkv in
// the order of the heads, in tasks of rows. We chose these partial sums
// over one task per (sequence, key and value head) adding its query heads
// in turn: that would leave Batch·KVHeads tasks, 3 for one sequence of
// SmolLM2-135M against 9, and most of a 16-core host idle, to save a slot
// of Seq·HeadDim elements per query head and a pass adding them, a small
// fraction of the head's Seq²·HeadDim products. Each sum is (first +
// second) + third …, whatever the threads: the group-summed gradients of
// the problem with the keys and values copied to every query head
// (transformers' repeat_kv), bit for bit.

// groupPool keeps the slots of the group sums between calls.
var groupPool scratchPool

// groupPartsLen is the elements of the slots of the group sums: Seq·HeadDim
// for each query head but the first of each group.
func groupPartsLen(a Attention) int {
	return a.Batch * a.NumKVHeads() * (a.KVGroup() - 1) * a.Seq * a.HeadDim
}

// groupPart returns where the pair at writes its share of the key or value
// gradient whose columns in dqkv start at off, and that place's row
// stride: dqkv itself for its group's first query head, else the pair's
// slot in parts, which are [Batch·NumKVHeads(), KVGroup()−1, Seq, HeadDim].
func groupPart[T Float](dqkv, parts []T, at pair, off int, a Attention) ([]T, int) {
	if at.member == 0 {
		return dqkv[off:], a.QKVWidth()
	}
	n := a.Seq * a.HeadDim
	slot := (at.kv*(a.KVGroup()-1) + at.member - 1) * n
	return parts[slot : slot+n], a.HeadDim
}

// addGroups adds to the key or value gradient of every (sequence, key and
// value head), in dqkv's columns from col on (DModel() for the keys,
// DModel() + KVWidth() for the values), the shares of its group's other
// query heads in parts, in the order of the heads; the tasks take
// groupRows rows of one (sequence, key and value head) each, so that
// every thread has some even for one sequence of a few key and value
// heads.
func addGroups[T Float](dqkv, parts []T, col int, a Attention) {
	g := a.KVGroup()
	if g == 1 {
		return
	}
	ld, dh, n, kvHeads := a.QKVWidth(), a.HeadDim, a.Seq*a.HeadDim, a.NumKVHeads()
	blocks := (a.Seq + groupRows - 1) / groupRows
	forEachPair[T](a.Batch*kvHeads*blocks, 0, func(task int, _ []T) {
		i, r0 := task/blocks, task%blocks*groupRows
		base := i/kvHeads*a.Seq*ld + col + i%kvHeads*dh
		for m := range g - 1 {
			part := parts[(i*(g-1)+m)*n:]
			for r := r0; r < min(r0+groupRows, a.Seq); r++ {
				dst, src := dqkv[base+r*ld:base+r*ld+dh], part[r*dh:r*dh+dh]
				for j := range dst {
					dst[j] += src[j]
				}
			}
		}
	})
}

// groupRows is the rows of a task of addGroups.
const groupRows = 64

// pairPool keeps the attention workers' scratch slices between calls.
var pairPool scratchPool

// forEachPair calls body(i, scratch) for every i in [0, n), spread over the
// kernels' threads, each worker with its own scratch of scratchLen
// elements. The workers multiply with a single-threaded BLAS: the pairs'
// products are too small to split well, and one pair's data stays in one
// core's cache from one product to the next.
func forEachPair[T Float](n, scratchLen int, body func(i int, scratch []T)) {
	if min(Threads(), n) > 1 {
		setBLASThreads(1)
		defer setBLASThreads(Threads())
	}
	forEachTask(n, scratchLen, body)
}

// forEachTask calls body(i, scratch) for every i in [0, n), spread over
// the kernels' threads (shareTasks), each worker with its own scratch of
// scratchLen elements from pairPool.
func forEachTask[T Float](n, scratchLen int, body func(i int, scratch []T)) {
	workers := min(Threads(), n)
	if workers <= 1 {
		s := getScratch[T](&pairPool, scratchLen)
		defer putScratch(&pairPool, s)
		for i := range n {
			body(i, *s)
		}
		return
	}
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
