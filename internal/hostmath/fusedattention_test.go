package hostmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// fusedCase is an attention and the factor its queries are scaled by:
// 1e3 makes logits of hundreds, whose naive exponential overflows even
// float64, so only a softmax that subtracts a running maximum survives.
type fusedCase struct {
	Attention
	qScale float64
}

// fusedCases cover one position (a causal row that sees one key), sizes
// not multiples of the 64-row blocks (63, 65, 130: a partial diagonal
// block, and rows whose running maximum grows from one key block to the
// next), grouped-query heads, causal and not, and large logits.
var fusedCases = []fusedCase{
	{Attention{Batch: 1, Seq: 1, Heads: 2, HeadDim: 3, Causal: true}, 1},
	{Attention{Batch: 2, Seq: 7, Heads: 6, HeadDim: 5, KVHeads: 2, Causal: true}, 1},
	{Attention{Batch: 2, Seq: 7, Heads: 6, HeadDim: 5, KVHeads: 2}, 1},
	{Attention{Batch: 1, Seq: 63, Heads: 3, HeadDim: 4, Causal: true}, 1},
	{Attention{Batch: 2, Seq: 65, Heads: 4, HeadDim: 8, KVHeads: 1}, 3},
	{Attention{Batch: 1, Seq: 130, Heads: 9, HeadDim: 8, KVHeads: 3, Causal: true}, 3},
	{Attention{Batch: 1, Seq: 130, Heads: 2, HeadDim: 7}, 3},
	{Attention{Batch: 1, Seq: 130, Heads: 4, HeadDim: 6, KVHeads: 2, Causal: true}, 1e3},
	{Attention{Batch: 1, Seq: 97, Heads: 2, HeadDim: 5}, 1e3},
}

// fusedInputs returns random qkv (the queries scaled by qScale) and an
// output gradient for c.
func fusedInputs(c fusedCase) (qkv, g []float64) {
	qkv, g, _ = fusedInputsLSE(c)
	return qkv, g
}

// fusedInputsLSE returns fusedInputs and a random gradient of the
// log-sum-exps.
func fusedInputsLSE(c fusedCase) (qkv, g, glse []float64) {
	a := c.Attention
	rng := rand.New(rand.NewPCG(uint64(a.Seq), uint64(a.Heads)))
	rows := a.Batch * a.Seq
	qkv = randomSlice(rng, rows*a.QKVWidth())
	for r := range rows {
		for j := range a.DModel() {
			qkv[r*a.QKVWidth()+j] *= c.qScale
		}
	}
	g = randomSlice(rng, rows*a.DModel())
	return qkv, g, randomSlice(rng, a.Batch*a.Heads*a.Seq)
}

// lseGrad is the gradient of Σ glse ⊙ lse with respect to qkv: a row's
// log-sum-exp has its probabilities for gradient in its scores, so
// dq_s = Scale·Σ_t glse_s·P_st·k_t and dk_t = Scale·Σ_s glse_s·P_st·q_s.
func (n naiveAttention) lseGrad(qkv, glse []float64) []float64 {
	p := n.probs(qkv)
	dqkv := make([]float64, len(qkv))
	n.eachTerm(func(b, h, s, t, j int) {
		w := glse[(b*n.Heads+h)*n.Seq+s] * p[n.pi(b, h, s, t)] * n.Scale()
		dqkv[n.qi(b, h, s, j)] += w * n.k(qkv, b, h, t, j)
		dqkv[n.ki(b, h, t, j)] += w * n.q(qkv, b, h, s, j)
	})
	return dqkv
}

// lse is the log-sum-exp of every row of scaled scores, in float64.
func (n naiveAttention) lse(qkv []float64) []float64 {
	out := make([]float64, n.Batch*n.Heads*n.Seq)
	for b := range n.Batch {
		for h := range n.Heads {
			for s := range n.Seq {
				scores := make([]float64, 0, n.Seq)
				m := math.Inf(-1)
				for t := range n.Seq {
					if n.masked(s, t) {
						continue
					}
					dot := 0.0
					for j := range n.HeadDim {
						dot += n.q(qkv, b, h, s, j) * n.k(qkv, b, h, t, j)
					}
					scores = append(scores, dot*n.Scale())
					m = max(m, dot*n.Scale())
				}
				sum := 0.0
				for _, v := range scores {
					sum += math.Exp(v - m)
				}
				out[(b*n.Heads+h)*n.Seq+s] = m + math.Log(sum)
			}
		}
	}
	return out
}

// grad is the gradient of the attention output with respect to qkv given
// the output gradient g, through the eager naive loops.
func (n naiveAttention) grad(qkv, g []float64) []float64 {
	p := n.probs(qkv)
	dqkv := n.probsGrad(qkv, p, n.mixProbsGrad(g, qkv))
	for i, v := range n.mixValueGrad(p, g) {
		dqkv[i] += v
	}
	return dqkv
}

// TestFusedAttention compares the fused kernels with the naive float64
// loops (the output, the log-sum-exps and the gradient of qkv) and, in
// float32, with the eager kernels. Tolerances, relative to the largest
// magnitude: float64 1e-12 (sums in another order); float32 2e-5 for the
// output and 1e-4 for the gradients, whose terms cancel in dP − D, except
// with logits of hundreds, where a float32 score carries an absolute error
// of about 1e-4 that the exponential turns into a relative one of the
// probabilities: 1e-3 there. The log-sum-exps are compared absolutely
// against their magnitude, at 1e-5 (1e-6 relative rounding of the score
// plus the log).
func TestFusedAttention(t *testing.T) {
	for _, c := range fusedCases {
		t.Run(fmt.Sprintf("%+v/x%g", c.Attention, c.qScale), func(t *testing.T) {
			a, n := c.Attention, naiveAttention{c.Attention}
			qkv, g, glse := fusedInputsLSE(c)
			wantOut, wantLSE, wantGrad := n.mix(n.probs(qkv), qkv), n.lse(qkv), n.grad(qkv, g)
			wantFull := n.lseGrad(qkv, glse) // with the log-sum-exps' gradient
			for i, v := range wantGrad {
				wantFull[i] += v
			}
			rows := a.Batch * a.Seq

			out, lse, dqkv := make([]float64, rows*a.DModel()), make([]float64, a.Batch*a.Heads*a.Seq), make([]float64, len(qkv))
			FusedAttention(out, lse, qkv, a)
			FusedAttentionGrad(dqkv, qkv, out, lse, g, nil, a)
			near(t, "float64 output", out, wantOut, 1e-12)
			near(t, "float64 lse", lse, wantLSE, 1e-12)
			near(t, "float64 gradient", dqkv, wantGrad, 1e-12)
			full := make([]float64, len(qkv))
			FusedAttentionGrad(full, qkv, out, lse, g, glse, a)
			near(t, "float64 gradient with the lse's", full, wantFull, 1e-12)

			tol, gradTol := 2e-5, 1e-4
			if c.qScale > 100 {
				tol, gradTol = 1e-3, 1e-3
			}
			q32, g32 := toFloat32(qkv), toFloat32(g)
			out32, lse32, d32 := make([]float32, len(out)), make([]float32, len(lse)), make([]float32, len(qkv))
			FusedAttention(out32, lse32, q32, a)
			FusedAttentionGrad(d32, q32, out32, lse32, g32, nil, a)
			near(t, "float32 output", out32, toFloat32(wantOut), tol)
			near(t, "float32 lse", lse32, toFloat32(wantLSE), 1e-5)
			near(t, "float32 gradient", d32, toFloat32(wantGrad), gradTol)
			full32 := make([]float32, len(qkv))
			FusedAttentionGrad(full32, q32, out32, lse32, g32, toFloat32(glse), a)
			near(t, "float32 gradient with the lse's", full32, toFloat32(wantFull), gradTol)
			for _, v := range out32 {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("float32 output has %g", v)
				}
			}

			// Against the eager float32 kernels.
			p := make([]float32, a.Batch*a.Heads*a.Seq*a.Seq)
			AttentionProbs(p, q32, a)
			eager := make([]float32, len(out32))
			AttentionMix(eager, p, q32, a)
			near(t, "float32 output against eager", out32, eager, tol)
			dp, dv, dqk := make([]float32, len(p)), make([]float32, len(q32)), make([]float32, len(q32))
			AttentionMixProbsGrad(dp, g32, q32, a)
			AttentionMixValueGrad(dv, p, g32, a)
			AttentionProbsGrad(dqk, q32, p, dp, a)
			for i := range dqk {
				dqk[i] += dv[i]
			}
			near(t, "float32 gradient against eager", d32, dqk, gradTol)
		})
	}
}

// TestFusedAttentionOptionalOutputs checks that FusedAttention writes the
// same output without the log-sum-exps and the same log-sum-exps without
// the output.
func TestFusedAttentionOptionalOutputs(t *testing.T) {
	c := fusedCases[5]
	a := c.Attention
	qkv, _ := fusedInputs(c)
	out, lse := make([]float64, a.Batch*a.Seq*a.DModel()), make([]float64, a.Batch*a.Heads*a.Seq)
	FusedAttention(out, lse, qkv, a)
	out1, lse1 := make([]float64, len(out)), make([]float64, len(lse))
	FusedAttention(out1, nil, qkv, a)
	FusedAttention(nil, lse1, qkv, a)
	same(t, "output alone", out1, out)
	same(t, "lse alone", lse1, lse)
}

// TestFusedAttentionThreads checks that the fused kernels give the same
// bits whatever the thread count, the grouped key and value gradients
// included.
func TestFusedAttentionThreads(t *testing.T) {
	defer SetThreads(Threads())
	for _, c := range []fusedCase{fusedCases[1], fusedCases[5], fusedCases[6]} {
		a := c.Attention
		qkv64, g64 := fusedInputs(c)
		qkv, g := toFloat32(qkv64), toFloat32(g64)
		var first [3][]float32
		for i, threads := range []int{1, 2, 3, 7} {
			SetThreads(threads)
			out, lse, dqkv := make([]float32, a.Batch*a.Seq*a.DModel()), make([]float32, a.Batch*a.Heads*a.Seq), make([]float32, len(qkv))
			FusedAttention(out, lse, qkv, a)
			FusedAttentionGrad(dqkv, qkv, out, lse, g, nil, a)
			if i == 0 {
				first = [3][]float32{out, lse, dqkv}
				continue
			}
			for k, name := range []string{"output", "lse", "gradient"} {
				same(t, fmt.Sprintf("%+v %s at %d threads", a, name, threads), [3][]float32{out, lse, dqkv}[k], first[k])
			}
		}
	}
}

// BenchmarkFusedAttention times the fused kernels at SmolLM2-135M's
// attention (9 query heads of 64 sharing 3 key and value heads, causal) at
// sequences of 512, 1024 and 2048, beside the eager kernels at the same
// shape (as BenchmarkAttentionGQA runs them: the backward given the
// probabilities), the AVX2 fused kernels (avx2, what a CPU without
// AVX-512 runs; where the CPU has AVX2) and, at 512, the Go fused kernels
// (go, what float32 runs without AVX2), so that one run interleaves them.
// fused is the CPU's best C kernels. Each counts the same
// products (2 forward, 4 backward) so that the rates compare as times: the
// fused backward's recomputed scores are a fifth product it does not
// count.
func BenchmarkFusedAttention(b *testing.B) {
	best := FusedAttentionVector()
	defer SetFusedAttentionVector(best)
	for _, seq := range []int{512, 1024, 2048} {
		a := Attention{Batch: 1, Seq: seq, Heads: 9, HeadDim: 64, KVHeads: 3, Causal: true}
		rng := rand.New(rand.NewPCG(1, 2))
		rows, d := a.Batch*a.Seq, a.DModel()
		qkv := toFloat32(randomSlice(rng, rows*a.QKVWidth()))
		g := toFloat32(randomSlice(rng, rows*d))
		out, lse, dqkv := make([]float32, rows*d), make([]float32, a.Batch*a.Heads*a.Seq), make([]float32, len(qkv))
		FusedAttention(out, lse, qkv, a)
		var p, dp, dv []float32 // the eager kernels' probabilities, made on first use
		eager := func() {
			if p == nil {
				p, dp, dv = make([]float32, a.Batch*a.Heads*a.Seq*a.Seq), make([]float32, a.Batch*a.Heads*a.Seq*a.Seq), make([]float32, len(qkv))
				AttentionProbs(p, qkv, a)
			}
		}
		flopsPerProduct := float64(a.Batch*a.Heads) * float64(a.Seq*a.Seq) * float64(a.HeadDim)
		for _, k := range []struct {
			name     string
			products float64
			vector   string // the fused kernels' (SetFusedAttentionVector)
			run      func()
		}{
			{"eager/forward", 2, best, func() { eager(); AttentionProbs(p, qkv, a); AttentionMix(out, p, qkv, a) }},
			{"fused/forward", 2, best, func() { FusedAttention(out, lse, qkv, a) }},
			{"avx2/forward", 2, "AVX2", func() { FusedAttention(out, lse, qkv, a) }},
			{"go/forward", 2, "Go", func() { FusedAttention(out, lse, qkv, a) }},
			{"eager/backward", 4, best, func() {
				eager()
				AttentionMixProbsGrad(dp, g, qkv, a)
				AttentionMixValueGrad(dv, p, g, a)
				AttentionProbsGrad(dqkv, qkv, p, dp, a)
			}},
			{"fused/backward", 4, best, func() { FusedAttentionGrad(dqkv, qkv, out, lse, g, nil, a) }},
			{"avx2/backward", 4, "AVX2", func() { FusedAttentionGrad(dqkv, qkv, out, lse, g, nil, a) }},
			{"go/backward", 4, "Go", func() { FusedAttentionGrad(dqkv, qkv, out, lse, g, nil, a) }},
		} {
			if k.vector == "Go" && seq > 512 {
				continue
			}
			if _, err := SetFusedAttentionVector(k.vector); err != nil {
				continue // no AVX2 on this CPU
			}
			b.Run(fmt.Sprintf("seq=%d/%s", seq, k.name), func(b *testing.B) {
				if _, err := SetFusedAttentionVector(k.vector); err != nil {
					b.Fatal(err)
				}
				clock := startCPU()
				for b.Loop() {
					k.run()
				}
				b.ReportMetric(k.products*flopsPerProduct*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				b.ReportMetric(clock.seconds()/float64(b.N)*1e3, "cpu-ms/op")
			})
		}
	}
}
