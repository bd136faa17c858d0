package hostmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// repeatKV returns the packed rows of a grouped-query attention a with
// every key and value head copied to each query head of its group, as
// transformers' repeat_kv expands them, and the attention they describe:
// a without grouping.
func repeatKV[T Float](qkv []T, a Attention) ([]T, Attention) {
	e := a
	e.KVHeads = 0
	ld, eld, d, dh := a.QKVWidth(), e.QKVWidth(), a.DModel(), a.HeadDim
	out := make([]T, a.Batch*a.Seq*eld)
	for r := range a.Batch * a.Seq {
		row, erow := qkv[r*ld:(r+1)*ld], out[r*eld:(r+1)*eld]
		copy(erow[:d], row[:d])
		for h := range a.Heads {
			kv := h / a.KVGroup()
			copy(erow[d+h*dh:d+(h+1)*dh], row[d+kv*dh:d+(kv+1)*dh])
			copy(erow[2*d+h*dh:2*d+(h+1)*dh], row[d+a.KVWidth()+kv*dh:d+a.KVWidth()+(kv+1)*dh])
		}
	}
	return out, e
}

// sumGroups folds the gradient eg of the expanded rows (repeatKV) back
// onto the grouped layout: the query columns as they are, and the key and
// value columns of each key and value head summed over its group's query
// heads in their order, ((first + second) + third) ….
func sumGroups[T Float](eg []T, a Attention) []T {
	e := a
	e.KVHeads = 0
	ld, eld, d, kd, dh := a.QKVWidth(), e.QKVWidth(), a.DModel(), a.KVWidth(), a.HeadDim
	out := make([]T, a.Batch*a.Seq*ld)
	for r := range a.Batch * a.Seq {
		row, erow := out[r*ld:(r+1)*ld], eg[r*eld:(r+1)*eld]
		copy(row[:d], erow[:d])
		for h := range a.Heads {
			kv, first := h/a.KVGroup(), h%a.KVGroup() == 0
			for j := range dh {
				for _, c := range [][2]int{{d + kv*dh + j, d + h*dh + j}, {d + kd + kv*dh + j, 2*d + h*dh + j}} {
					if first {
						row[c[0]] = erow[c[1]]
					} else {
						row[c[0]] += erow[c[1]]
					}
				}
			}
		}
	}
	return out
}

// gqaCases are grouped-query attentions of odd sizes, causal and not; the
// one of 130 positions crosses the kernels' 128-row blocks.
var gqaCases = []Attention{
	{Batch: 2, Seq: 7, Heads: 6, HeadDim: 5, KVHeads: 2, Causal: true},
	{Batch: 2, Seq: 7, Heads: 6, HeadDim: 5, KVHeads: 2, Causal: false},
	{Batch: 1, Seq: 130, Heads: 9, HeadDim: 8, KVHeads: 3, Causal: true},
	{Batch: 3, Seq: 5, Heads: 4, HeadDim: 3, KVHeads: 1, Causal: false},
	{Batch: 1, Seq: 6, Heads: 3, HeadDim: 4, KVHeads: 3, Causal: true},
}

// TestAttentionGQAMatchesRepeatKV checks each kernel of a grouped-query
// attention against the same kernel without grouping on the rows that
// repeatKV expands. Each product reads the same values in the same order
// whatever the rows' stride, so the forward kernels, the probabilities'
// gradient and the query gradient are the expanded ones exactly, and the
// key and value gradients are the expanded ones summed over each group in
// the order of its heads, which is how the kernels add them (see
// groupPart): bit for bit in float64 and in float32 through trigemm.h.
// gonum's float32 dot products (the purego build, and CPUs without
// AVX-512) start their vector loop at an aligned address, so that the
// order of a sum depends on where the rows lie: there the float32 results
// are compared to within 1e-5 of the largest magnitude, a few roundings.
func TestAttentionGQAMatchesRepeatKV(t *testing.T) {
	for _, a := range gqaCases {
		t.Run(fmt.Sprintf("%+v/float64", a), func(t *testing.T) { checkRepeatKV[float64](t, a) })
		t.Run(fmt.Sprintf("%+v/float32", a), func(t *testing.T) { checkRepeatKV[float32](t, a) })
	}
}

func checkRepeatKV[T Float](t *testing.T, a Attention) {
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(a.Heads), uint64(a.Seq)))
	random := func(n int, scale float64) []T {
		out := make([]T, n)
		for i, v := range randomSlice(rng, n) {
			out[i] = T(scale * v)
		}
		return out
	}
	rows, d := a.Batch*a.Seq, a.DModel()
	pn := a.Batch * a.Heads * a.Seq * a.Seq
	qkv, g, dp := random(rows*a.QKVWidth(), 3), random(rows*d, 1), random(pn, 1)
	eqkv, e := repeatKV(qkv, a)
	var zero T
	_, f32 := any(zero).(float32)
	check := func(name string, got, want []T) {
		t.Helper()
		if f32 && !directTriGemm {
			near(t, name, got, want, 1e-5)
		} else {
			same(t, name, got, want)
		}
	}

	p, ep := make([]T, pn), make([]T, pn)
	AttentionProbs(p, qkv, a)
	AttentionProbs(ep, eqkv, e)
	check("probs", p, ep)

	o, eo := make([]T, rows*d), make([]T, rows*d)
	AttentionMix(o, p, qkv, a)
	AttentionMix(eo, p, eqkv, e)
	check("mix", o, eo)

	dpg, edpg := make([]T, pn), make([]T, pn)
	AttentionMixProbsGrad(dpg, g, qkv, a)
	AttentionMixProbsGrad(edpg, g, eqkv, e)
	check("mix probs grad", dpg, edpg)

	dv, edv := make([]T, len(qkv)), make([]T, len(eqkv))
	AttentionMixValueGrad(dv, p, g, a)
	AttentionMixValueGrad(edv, p, g, e)
	check("mix value grad", dv, sumGroups(edv, a))

	dqk, edqk := make([]T, len(qkv)), make([]T, len(eqkv))
	AttentionProbsGrad(dqk, qkv, p, dp, a)
	AttentionProbsGrad(edqk, eqkv, p, dp, e)
	check("probs grad", dqk, sumGroups(edqk, a))
}

// same reports the first element where got and want differ.
func same[T Float](t *testing.T, name string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", name, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: element %d is %g, want %g", name, i, got[i], want[i])
			return
		}
	}
}

// near reports the first element where got and want differ by more than
// tol times the largest magnitude in want.
func near[T Float](t *testing.T, name string, got, want []T, tol float64) {
	t.Helper()
	w := make([]float64, len(want))
	scale := 1.0
	for i, v := range want {
		w[i] = float64(v)
		scale = max(scale, math.Abs(w[i]))
	}
	if worst := maxAbsDiff(got, w); worst > tol*scale {
		t.Errorf("%s: off by %.3g (scale %.3g)", name, worst, scale)
	}
}

// TestAttentionGQAThreads checks that the grouped key and value gradients
// do not depend on how many threads share the pairs and the group sums.
func TestAttentionGQAThreads(t *testing.T) {
	defer SetThreads(Threads())
	a := Attention{Batch: 2, Seq: 150, Heads: 6, HeadDim: 8, KVHeads: 2, Causal: true}
	rng := rand.New(rand.NewPCG(3, 4))
	rows, pn := a.Batch*a.Seq, a.Batch*a.Heads*a.Seq*a.Seq
	qkv := toFloat32(randomSlice(rng, rows*a.QKVWidth()))
	g, dp := toFloat32(randomSlice(rng, rows*a.DModel())), toFloat32(randomSlice(rng, pn))
	run := func(threads int) []float32 {
		SetThreads(threads)
		p := make([]float32, pn)
		AttentionProbs(p, qkv, a)
		dv, dqk := make([]float32, len(qkv)), make([]float32, len(qkv))
		AttentionMixValueGrad(dv, p, g, a)
		AttentionProbsGrad(dqk, qkv, p, dp, a)
		return append(dv, dqk...)
	}
	one := run(1)
	for _, n := range []int{2, 3, 5} {
		same(t, fmt.Sprintf("%d threads against 1", n), run(n), one)
	}
}

// TestAttentionValidate checks the sizes Validate refuses.
func TestAttentionValidate(t *testing.T) {
	for _, tc := range []struct {
		a  Attention
		ok bool
	}{
		{Attention{Batch: 1, Seq: 2, Heads: 6, HeadDim: 4}, true},
		{Attention{Batch: 1, Seq: 2, Heads: 6, HeadDim: 4, KVHeads: 6}, true},
		{Attention{Batch: 1, Seq: 2, Heads: 6, HeadDim: 4, KVHeads: 2}, true},
		{Attention{Batch: 1, Seq: 2, Heads: 6, HeadDim: 4, KVHeads: 1}, true},
		{Attention{Batch: 1, Seq: 2, Heads: 6, HeadDim: 4, KVHeads: 4}, false},
		{Attention{Batch: 1, Seq: 2, Heads: 6, HeadDim: 4, KVHeads: 12}, false},
		{Attention{Batch: 1, Seq: 2, Heads: 6, HeadDim: 4, KVHeads: -1}, false},
		{Attention{Batch: 0, Seq: 2, Heads: 6, HeadDim: 4}, false},
	} {
		if err := tc.a.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: Validate() = %v, want ok %v", tc.a, err, tc.ok)
		}
	}
}

// TestAttentionWidths checks the layout's widths with and without
// grouping.
func TestAttentionWidths(t *testing.T) {
	for _, tc := range []struct {
		a                         Attention
		kvHeads, group, kv, width int
	}{
		{Attention{Heads: 8, HeadDim: 64}, 8, 1, 512, 1536},
		{Attention{Heads: 9, HeadDim: 64, KVHeads: 3}, 3, 3, 192, 960},
		{Attention{Heads: 6, HeadDim: 5, KVHeads: 6}, 6, 1, 30, 90},
	} {
		a := tc.a
		if a.NumKVHeads() != tc.kvHeads || a.KVGroup() != tc.group || a.KVWidth() != tc.kv || a.QKVWidth() != tc.width {
			t.Errorf("%+v: NumKVHeads %d, KVGroup %d, KVWidth %d, QKVWidth %d; want %d, %d, %d, %d", a,
				a.NumKVHeads(), a.KVGroup(), a.KVWidth(), a.QKVWidth(), tc.kvHeads, tc.group, tc.kv, tc.width)
		}
	}
}

// BenchmarkAttentionGQA times the grouped-query attention of one sequence
// of SmolLM2-135M (512 causal positions, 9 query heads of 64 sharing 3 key
// and value heads), forward (the probabilities and the mix) and backward
// (the three gradient kernels), beside the same with the keys and values
// repeated to every query head (kv=9, what repeat_kv computes), and
// reports the rate of the products' useful (lower-triangle) arithmetic,
// counted per query head as in BenchmarkAttention: 2 products forward, 4
// backward.
func BenchmarkAttentionGQA(b *testing.B) {
	for _, kvHeads := range []int{3, 9} {
		a := Attention{Batch: 1, Seq: 512, Heads: 9, HeadDim: 64, KVHeads: kvHeads, Causal: true}
		rng := rand.New(rand.NewPCG(1, 2))
		rows, d := a.Batch*a.Seq, a.DModel()
		qkv := toFloat32(randomSlice(rng, rows*a.QKVWidth()))
		g := toFloat32(randomSlice(rng, rows*d))
		p := make([]float32, a.Batch*a.Heads*a.Seq*a.Seq)
		dp := make([]float32, len(p))
		AttentionProbs(p, qkv, a)
		out, dv, dqk := make([]float32, rows*d), make([]float32, len(qkv)), make([]float32, len(qkv))
		flopsPerProduct := float64(a.Batch*a.Heads) * float64(a.Seq*a.Seq) * float64(a.HeadDim)
		for _, k := range []struct {
			name     string
			products float64
			run      func()
		}{
			{"forward", 2, func() { AttentionProbs(p, qkv, a); AttentionMix(out, p, qkv, a) }},
			{"backward", 4, func() {
				AttentionMixProbsGrad(dp, g, qkv, a)
				AttentionMixValueGrad(dv, p, g, a)
				AttentionProbsGrad(dqk, qkv, p, dp, a)
			}},
		} {
			b.Run(fmt.Sprintf("kv=%d/%s", kvHeads, k.name), func(b *testing.B) {
				cpu := startCPU()
				for b.Loop() {
					k.run()
				}
				b.ReportMetric(k.products*flopsPerProduct*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				b.ReportMetric(k.products*flopsPerProduct*float64(b.N)/cpu.seconds()/1e9, "GFLOP/cpu-s")
			})
		}
	}
}
