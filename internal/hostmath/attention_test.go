package hostmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// naiveAttention holds textbook triple-loop versions of the attention
// kernels, in float64, indexing the packed layouts element by element.
type naiveAttention struct{ Attention }

// qi, ki and vi are the indices in qkv of query head h's query, key and
// value element j at position s: its group's key and value head.
func (n naiveAttention) qi(b, h, s, j int) int { return (b*n.Seq+s)*n.QKVWidth() + h*n.HeadDim + j }
func (n naiveAttention) ki(b, h, s, j int) int {
	return (b*n.Seq+s)*n.QKVWidth() + n.DModel() + h/n.KVGroup()*n.HeadDim + j
}
func (n naiveAttention) vi(b, h, s, j int) int { return n.ki(b, h, s, j) + n.KVWidth() }

func (n naiveAttention) q(qkv []float64, b, h, s, j int) float64 { return qkv[n.qi(b, h, s, j)] }
func (n naiveAttention) k(qkv []float64, b, h, s, j int) float64 { return qkv[n.ki(b, h, s, j)] }
func (n naiveAttention) v(qkv []float64, b, h, s, j int) float64 { return qkv[n.vi(b, h, s, j)] }
func (n naiveAttention) pi(b, h, s, t int) int                   { return ((b*n.Heads+h)*n.Seq+s)*n.Seq + t }
func (n naiveAttention) oi(b, h, s, j int) int                   { return (b*n.Seq+s)*n.DModel() + h*n.HeadDim + j }
func (n naiveAttention) masked(s, t int) bool                    { return n.Causal && t > s }

// each calls f for every (sequence, head, row, column) of the probabilities.
func (n naiveAttention) each(f func(b, h, s, t int)) {
	for b := range n.Batch {
		for h := range n.Heads {
			for s := range n.Seq {
				for t := range n.Seq {
					f(b, h, s, t)
				}
			}
		}
	}
}

// eachTerm calls f for every column j of the head at every unmasked
// (sequence, head, row, column): the terms of the products after softmax.
func (n naiveAttention) eachTerm(f func(b, h, s, t, j int)) {
	n.each(func(b, h, s, t int) {
		if n.masked(s, t) {
			return
		}
		for j := range n.HeadDim {
			f(b, h, s, t, j)
		}
	})
}

func (n naiveAttention) probs(qkv []float64) []float64 {
	p := make([]float64, n.Batch*n.Heads*n.Seq*n.Seq)
	n.each(func(b, h, s, t int) {
		if n.masked(s, t) {
			p[n.pi(b, h, s, t)] = math.Inf(-1)
			return
		}
		dot := 0.0
		for j := range n.HeadDim {
			dot += n.q(qkv, b, h, s, j) * n.k(qkv, b, h, t, j)
		}
		p[n.pi(b, h, s, t)] = dot * n.Scale()
	})
	for r := 0; r < len(p); r += n.Seq {
		row := p[r : r+n.Seq]
		m := math.Inf(-1)
		for _, v := range row {
			m = max(m, v)
		}
		sum := 0.0
		for i, v := range row {
			row[i] = math.Exp(v - m)
			sum += row[i]
		}
		for i := range row {
			row[i] /= sum
		}
	}
	return p
}

func (n naiveAttention) mix(p, qkv []float64) []float64 {
	o := make([]float64, n.Batch*n.Seq*n.DModel())
	n.eachTerm(func(b, h, s, t, j int) {
		o[n.oi(b, h, s, j)] += p[n.pi(b, h, s, t)] * n.v(qkv, b, h, t, j)
	})
	return o
}

func (n naiveAttention) mixProbsGrad(g, qkv []float64) []float64 {
	dp := make([]float64, len(g)/n.DModel()*n.Heads*n.Seq)
	n.eachTerm(func(b, h, s, t, j int) {
		dp[n.pi(b, h, s, t)] += g[n.oi(b, h, s, j)] * n.v(qkv, b, h, t, j)
	})
	return dp
}

func (n naiveAttention) mixValueGrad(p, g []float64) []float64 {
	dqkv := make([]float64, len(g)/n.DModel()*n.QKVWidth())
	n.eachTerm(func(b, h, s, t, j int) {
		dqkv[n.vi(b, h, t, j)] += p[n.pi(b, h, s, t)] * g[n.oi(b, h, s, j)]
	})
	return dqkv
}

func (n naiveAttention) probsGrad(qkv, p, dp []float64) []float64 {
	dqkv := make([]float64, len(qkv))
	ds := make([]float64, len(p))
	for r := 0; r < len(p); r += n.Seq {
		dot := 0.0
		for i := range n.Seq {
			dot += p[r+i] * dp[r+i]
		}
		for i := range n.Seq {
			ds[r+i] = p[r+i] * (dp[r+i] - dot)
		}
	}
	n.eachTerm(func(b, h, s, t, j int) {
		x := ds[n.pi(b, h, s, t)] * n.Scale()
		dqkv[n.qi(b, h, s, j)] += x * n.k(qkv, b, h, t, j)
		dqkv[n.ki(b, h, t, j)] += x * n.q(qkv, b, h, s, j)
	})
	return dqkv
}

// TestAttentionKernels compares every attention kernel, in float64 and
// float32, with the naive loops. Sequences of 300 make three causal blocks,
// the last one partial. Tolerances: float64 sums in another order differ
// by about 1e-15 relative; float32 by about 1e-6, and its exp32 adds 2 ulp.
func TestAttentionKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, a := range []Attention{
		{Batch: 2, Seq: 5, Heads: 2, HeadDim: 3, Causal: true},
		{Batch: 2, Seq: 5, Heads: 2, HeadDim: 3, Causal: false},
		{Batch: 1, Seq: 300, Heads: 3, HeadDim: 4, Causal: true},
		{Batch: 2, Seq: 130, Heads: 1, HeadDim: 2, Causal: false},
		{Batch: 2, Seq: 7, Heads: 6, HeadDim: 5, KVHeads: 2, Causal: true},
		{Batch: 2, Seq: 7, Heads: 6, HeadDim: 5, KVHeads: 2, Causal: false},
		{Batch: 1, Seq: 200, Heads: 4, HeadDim: 3, KVHeads: 1, Causal: true},
		{Batch: 1, Seq: 9, Heads: 4, HeadDim: 70, KVHeads: 2, Causal: true},
	} {
		t.Run(fmt.Sprintf("%+v", a), func(t *testing.T) {
			n := naiveAttention{a}
			rows, d := a.Batch*a.Seq, a.DModel()
			qkv := randomSlice(rng, rows*a.QKVWidth())
			for i := range qkv {
				qkv[i] *= 3 // spread the scores so that softmax is not flat
			}
			g := randomSlice(rng, rows*d)
			dpIn := randomSlice(rng, a.Batch*a.Heads*a.Seq*a.Seq)
			p := n.probs(qkv)
			cases := []struct {
				name string
				want []float64
				run  func(f64 bool) any
			}{
				{"probs", p, func(f64 bool) any {
					return runKernel(f64, len(p), func(out []float64) { AttentionProbs(out, qkv, a) },
						func(out []float32) { AttentionProbs(out, toFloat32(qkv), a) })
				}},
				{"mix", n.mix(p, qkv), func(f64 bool) any {
					return runKernel(f64, rows*d, func(out []float64) { AttentionMix(out, p, qkv, a) },
						func(out []float32) { AttentionMix(out, toFloat32(p), toFloat32(qkv), a) })
				}},
				{"mix probs grad", n.mixProbsGrad(g, qkv), func(f64 bool) any {
					return runKernel(f64, len(p), func(out []float64) { AttentionMixProbsGrad(out, g, qkv, a) },
						func(out []float32) { AttentionMixProbsGrad(out, toFloat32(g), toFloat32(qkv), a) })
				}},
				{"mix value grad", n.mixValueGrad(p, g), func(f64 bool) any {
					return runKernel(f64, len(qkv), func(out []float64) { AttentionMixValueGrad(out, p, g, a) },
						func(out []float32) { AttentionMixValueGrad(out, toFloat32(p), toFloat32(g), a) })
				}},
				{"probs grad", n.probsGrad(qkv, p, dpIn), func(f64 bool) any {
					return runKernel(f64, len(qkv), func(out []float64) { AttentionProbsGrad(out, qkv, p, dpIn, a) },
						func(out []float32) { AttentionProbsGrad(out, toFloat32(qkv), toFloat32(p), toFloat32(dpIn), a) })
				}},
			}
			for _, tc := range cases {
				scale := 0.0
				for _, v := range tc.want {
					scale = max(scale, math.Abs(v))
				}
				for _, f64 := range []bool{true, false} {
					var worst float64
					switch got := tc.run(f64).(type) {
					case []float64:
						worst = maxAbsDiff(got, tc.want)
					case []float32:
						worst = maxAbsDiff(got, tc.want)
					}
					tol := 1e-12
					if !f64 {
						tol = 1e-5
					}
					if worst > tol*max(scale, 1) {
						t.Errorf("%s (float64 %v): off by %.3g (scale %.3g)", tc.name, f64, worst, scale)
					}
				}
			}
		})
	}
}

// runKernel runs the float64 or the float32 version of a kernel into a
// fresh output pre-filled with garbage, which the kernel must overwrite.
func runKernel(f64 bool, n int, k64 func([]float64), k32 func([]float32)) any {
	if f64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = math.NaN()
		}
		k64(out)
		return out
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(math.NaN())
	}
	k32(out)
	return out
}

// TestAttentionThreads checks that the results do not depend on how many
// threads share the pairs: each pair is computed by one worker alone.
func TestAttentionThreads(t *testing.T) {
	defer SetThreads(Threads())
	a := Attention{Batch: 2, Seq: 200, Heads: 2, HeadDim: 8, Causal: true}
	qkv := toFloat32(randomSlice(rand.New(rand.NewPCG(1, 1)), a.Batch*a.Seq*3*a.DModel()))
	run := func(threads int) []float32 {
		SetThreads(threads)
		p := make([]float32, a.Batch*a.Heads*a.Seq*a.Seq)
		AttentionProbs(p, qkv, a)
		return p
	}
	one, two := run(1), run(2)
	for i := range one {
		if one[i] != two[i] {
			t.Fatalf("element %d: %g with one thread, %g with two", i, one[i], two[i])
		}
	}
}

// TestExp32 compares exp32 with math.Exp over the range softmax uses and
// beyond: within 2 ulp of the correctly rounded float32.
func TestExp32(t *testing.T) {
	for x := -87.0; x <= 88.5; x += 0.0137 {
		xf := float32(x)
		want := float32(math.Exp(float64(xf)))
		got := exp32(xf)
		ulp := math.Abs(float64(math.Float32bits(got)) - float64(math.Float32bits(want)))
		if ulp > 2 {
			t.Fatalf("exp32(%g) = %g, want %g (%.0f ulp)", x, got, want, ulp)
		}
	}
	for _, tc := range []struct{ x, want float32 }{
		{0, 1}, {-100, 0}, {100, float32(math.Inf(1))}, {float32(math.Inf(-1)), 0},
	} {
		if got := exp32(tc.x); got != tc.want {
			t.Errorf("exp32(%g) = %g, want %g", tc.x, got, tc.want)
		}
	}
	if got := exp32(float32(math.NaN())); got == got {
		t.Errorf("exp32(NaN) = %g, want NaN", got)
	}
}

// BenchmarkAttention times each attention kernel on two sequences of the
// full-scale layer (8 heads of 64, 512 causal positions) and reports the
// rate of the products' useful (lower-triangle) arithmetic: 2·seq²/2·64
// multiply-adds per pair and product.
func BenchmarkAttention(b *testing.B) {
	a := Attention{Batch: 2, Seq: 512, Heads: 8, HeadDim: 64, Causal: true}
	rng := rand.New(rand.NewPCG(1, 2))
	rows, d := a.Batch*a.Seq, a.DModel()
	qkv := toFloat32(randomSlice(rng, rows*3*d))
	g := toFloat32(randomSlice(rng, rows*d))
	p := make([]float32, a.Batch*a.Heads*a.Seq*a.Seq)
	dp := toFloat32(randomSlice(rng, len(p)))
	AttentionProbs(p, qkv, a)
	out, dqkv := make([]float32, rows*d), make([]float32, rows*3*d)
	flopsPerProduct := float64(a.Batch*a.Heads) * float64(a.Seq*a.Seq) * float64(a.HeadDim)
	for _, k := range []struct {
		name     string
		products float64
		run      func()
	}{
		{"probs", 1, func() { AttentionProbs(p, qkv, a) }},
		{"mix", 1, func() { AttentionMix(out, p, qkv, a) }},
		{"mix probs grad", 1, func() { AttentionMixProbsGrad(dp, g, qkv, a) }},
		{"mix value grad", 1, func() { AttentionMixValueGrad(dqkv, p, g, a) }},
		{"probs grad", 2, func() { AttentionProbsGrad(dqkv, qkv, p, dp, a) }},
	} {
		b.Run(k.name, func(b *testing.B) {
			cpu := startCPU()
			for b.Loop() {
				k.run()
			}
			b.ReportMetric(k.products*flopsPerProduct*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			b.ReportMetric(k.products*flopsPerProduct*float64(b.N)/cpu.seconds()/1e9, "GFLOP/cpu-s")
		})
	}
}
