package hostmath

import (
	"fmt"
	"math"
)

// fusedBlock is the side of the blocks of queries and of keys in which
// the fused attention kernels walk the scores: a block of scores is
// fusedBlock² values, 16 KiB in float32, kept in a worker's scratch.
const fusedBlock = 64

// FusedAttention sets out [Batch·Seq, DModel()] to the attention output of
// the packed qkv (heads merged, as AttentionMix writes it) and lse
// [Batch, Heads, Seq] to the log-sum-exp of every row of scaled scores,
// log Σ_t exp(Scale·q_s·k_t) over the row's unmasked keys, without ever
// holding a row of probabilities: for every (sequence, query head) pair,
// blocks of fusedBlock queries meet blocks of fusedBlock keys with an
// online softmax (a running maximum and sum per row, the sum and the
// partial output rescaled whenever the maximum grows), the blocks above
// the diagonal skipped when a.Causal (FlashAttention, Dao et al., 2022).
// Either out or lse may be nil, and is then not written; with out nil the
// values are not read. Each element is computed in a fixed order whatever
// the thread count. float32 on CPUs with AVX-512, or AVX2 and FMA, runs
// the C kernels of fusedattention.h, which hold each block of scores
// transposed (FusedAttentionVector names them).
func FusedAttention[T Float](out, lse, qkv []T, a Attention) {
	if q32, ok := any(qkv).([]float32); ok && fusedAttentionC {
		fusedAttentionFloat32(any(out).([]float32), any(lse).([]float32), q32, a)
		return
	}
	ld, d, s, dh := a.QKVWidth(), a.DModel(), a.Seq, a.HeadDim
	scale := T(a.Scale())
	nb := (s + fusedBlock - 1) / fusedBlock
	// scratch: a block of scores, the rows' maxima and sums, and their
	// partial outputs.
	scratchLen := fusedBlock*fusedBlock + 2*fusedBlock + fusedBlock*dh
	forEachPair[T](a.Batch*a.Heads*nb, scratchLen, func(task int, scratch []T) {
		i, r0 := task/nb, task%nb*fusedBlock
		r1 := min(r0+fusedBlock, s)
		at := a.pair(i)
		sc, scratch := scratch[:fusedBlock*fusedBlock], scratch[fusedBlock*fusedBlock:]
		m, l, acc := scratch[:fusedBlock], scratch[fusedBlock:2*fusedBlock], scratch[2*fusedBlock:]
		for r := range r1 - r0 {
			m[r], l[r] = T(math.Inf(-1)), 0
		}
		clear(acc)
		for c0 := 0; c0 < a.blockEnd(r1); c0 += fusedBlock {
			c1 := min(c0+fusedBlock, a.blockEnd(r1))
			for r := r0; r < r1; r++ {
				row := sc[(r-r0)*fusedBlock : (r-r0)*fusedBlock+c1-c0]
				n := min(c1, a.limit(r)) - c0 // the row's unmasked keys in the block
				if n <= 0 {
					continue
				}
				q := qkv[at.q+r*ld : at.q+r*ld+dh]
				mx := m[r-r0]
				for c := range n {
					k := qkv[at.k+(c0+c)*ld : at.k+(c0+c)*ld+dh]
					var dot T
					for j, qj := range q {
						dot += qj * k[j]
					}
					row[c] = scale * dot
					mx = max(mx, row[c])
				}
				// The running maximum grows: the sum and the partial output
				// so far were taken against the old one.
				if rescale := T(math.Exp(float64(m[r-r0] - mx))); rescale != 1 {
					l[r-r0] *= rescale
					ac := acc[(r-r0)*dh : (r-r0+1)*dh]
					for j := range ac {
						ac[j] *= rescale
					}
				}
				m[r-r0] = mx
				var sum T
				for c := range n {
					row[c] = T(math.Exp(float64(row[c] - mx)))
					sum += row[c]
				}
				l[r-r0] += sum
				if out == nil {
					continue
				}
				ac := acc[(r-r0)*dh : (r-r0+1)*dh]
				for c := range n {
					p, v := row[c], qkv[at.v+(c0+c)*ld:at.v+(c0+c)*ld+dh]
					for j := range ac {
						ac[j] += p * v[j]
					}
				}
			}
		}
		for r := r0; r < r1; r++ {
			if lse != nil {
				lse[i*s+r] = m[r-r0] + T(math.Log(float64(l[r-r0])))
			}
			if out != nil {
				o, ac, inv := out[at.o+r*d:at.o+r*d+dh], acc[(r-r0)*dh:(r-r0+1)*dh], 1/l[r-r0]
				for j := range o {
					o[j] = ac[j] * inv
				}
			}
		}
	})
}

// FusedAttentionVector names the kernels that run the float32 fused
// attention: "AVX-512" or "AVX2" (the C kernels of fusedattention.h in
// that vector extension), or "Go" (the Go kernels, slower by an order of
// magnitude: a CPU without AVX2 and FMA, or a purego build).
func FusedAttentionVector() string {
	for _, i := range fusedAttentionISAs {
		if fusedAttentionC && i.isa == fusedAttentionISA {
			return i.name
		}
	}
	return "Go"
}

// SetFusedAttentionVector makes the float32 fused attention run the
// kernels that FusedAttentionVector names v, which this CPU must run: so
// tests check the AVX2 kernels, and the modes' agreement on them, on a CPU
// with AVX-512. It returns the previous setting, for restoring it, and
// must not be called while the kernels run.
func SetFusedAttentionVector(v string) (previous string, err error) {
	previous = FusedAttentionVector()
	if v == "Go" {
		fusedAttentionC = false
		return previous, nil
	}
	for _, i := range fusedAttentionISAs {
		if i.name == v && i.isa <= fusedAttentionBest {
			fusedAttentionISA, fusedAttentionC = i.isa, true
			return previous, nil
		}
	}
	return previous, fmt.Errorf("hostmath: no %s fused attention kernels on this CPU in this build", v)
}

// OutLen is the elements of the attention output, [Batch·Seq, DModel()]:
// where the log-sum-exps start in the packed value of the fused attention
// op, which holds the output and then the log-sum-exps.
func (a Attention) OutLen() int { return a.Batch * a.Seq * a.DModel() }

// LSELen is the elements of the log-sum-exps, [Batch, Heads, Seq].
func (a Attention) LSELen() int { return a.Batch * a.Heads * a.Seq }

// blockEnd is the end of the keys that the queries before r1 see: r1 when
// causal, Seq otherwise.
func (a Attention) blockEnd(r1 int) int {
	if a.Causal {
		return r1
	}
	return a.Seq
}

// FusedAttentionGrad sets dqkv [Batch·Seq, QKVWidth()] to the gradient of
// the attention output and log-sum-exps with respect to the packed qkv,
// given the output out and the log-sum-exps lse that FusedAttention
// computed, the output gradient g [Batch·Seq, DModel()] and the
// log-sum-exps' gradient glse [Batch, Heads, Seq] (nil: zero; a row's
// log-sum-exp has the row's probabilities for its gradient in the scores,
// so glse enters as a shift of D): D = rowsum(G ⊙ O) − glse first, then
// for every pair and every block of queries against every block of keys
// (those above the diagonal skipped when causal) the probabilities
// P = exp(Scale·Q·Kᵀ − lse) recomputed, dV += Pᵀ·G, dP = G·Vᵀ,
// dS = P ⊙ (dP − D), dQ += Scale·dS·K and dK += Scale·dSᵀ·Q. The key and
// value gradients of grouped-query attention are summed over the query
// heads of each group in the order of the heads (see groupPart), so the
// result does not depend on the thread count. float32 on CPUs with AVX-512,
// or AVX2 and FMA, runs the C kernels of fusedattention.h.
func FusedAttentionGrad[T Float](dqkv, qkv, out, lse, g, glse []T, a Attention) {
	if d32, ok := any(dqkv).([]float32); ok && fusedAttentionC {
		fusedAttentionGradFloat32(d32, any(qkv).([]float32), any(out).([]float32), any(lse).([]float32), any(g).([]float32),
			any(glse).([]float32), a)
		return
	}
	ld, d, s, dh := a.QKVWidth(), a.DModel(), a.Seq, a.HeadDim
	scale := T(a.Scale())
	partsK := getScratch[T](&groupPool, groupPartsLen(a))
	defer putScratch(&groupPool, partsK)
	partsV := getScratch[T](&groupPool, groupPartsLen(a))
	defer putScratch(&groupPool, partsV)
	// scratch: D for the pair's rows, and a block of probabilities.
	forEachPair[T](a.Batch*a.Heads, s+fusedBlock*fusedBlock, func(i int, scratch []T) {
		at := a.pair(i)
		dd, p := scratch[:s], scratch[s:]
		dk, ldk := groupPart(dqkv, *partsK, at, at.k, a)
		dv, ldv := groupPart(dqkv, *partsV, at, at.v, a)
		for r := range s {
			gr, or := g[at.o+r*d:at.o+r*d+dh], out[at.o+r*d:at.o+r*d+dh]
			var sum T
			for j, gj := range gr {
				sum += gj * or[j]
			}
			if glse != nil {
				sum -= glse[i*s+r]
			}
			dd[r] = sum
			clear(dqkv[at.q+r*ld : at.q+r*ld+dh])
			clear(dk[r*ldk : r*ldk+dh])
			clear(dv[r*ldv : r*ldv+dh])
		}
		for r0 := 0; r0 < s; r0 += fusedBlock {
			r1 := min(r0+fusedBlock, s)
			for c0 := 0; c0 < a.blockEnd(r1); c0 += fusedBlock {
				c1 := min(c0+fusedBlock, a.blockEnd(r1))
				// P, then dS in its place, row by row: P's row feeds dV,
				// dS's row dQ and dK.
				for r := r0; r < r1; r++ {
					n := min(c1, a.limit(r)) - c0
					if n <= 0 {
						continue
					}
					row := p[:n]
					q := qkv[at.q+r*ld : at.q+r*ld+dh]
					gr := g[at.o+r*d : at.o+r*d+dh]
					ls := lse[i*s+r]
					for c := range n {
						k := qkv[at.k+(c0+c)*ld : at.k+(c0+c)*ld+dh]
						var dot T
						for j, qj := range q {
							dot += qj * k[j]
						}
						row[c] = T(math.Exp(float64(scale*dot - ls)))
					}
					for c := range n {
						pc := row[c]
						v := qkv[at.v+(c0+c)*ld : at.v+(c0+c)*ld+dh]
						dvr := dv[(c0+c)*ldv : (c0+c)*ldv+dh]
						var dp T
						for j, gj := range gr {
							dvr[j] += pc * gj
							dp += gj * v[j]
						}
						row[c] = scale * pc * (dp - dd[r])
					}
					dq := dqkv[at.q+r*ld : at.q+r*ld+dh]
					for c := range n {
						ds := row[c]
						k := qkv[at.k+(c0+c)*ld : at.k+(c0+c)*ld+dh]
						dkr := dk[(c0+c)*ldk : (c0+c)*ldk+dh]
						for j := range dq {
							dq[j] += ds * k[j]
							dkr[j] += ds * q[j]
						}
					}
				}
			}
		}
	})
	addGroups(dqkv, *partsK, d, a)
	addGroups(dqkv, *partsV, d+a.KVWidth(), a)
}
