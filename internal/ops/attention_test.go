package ops

import (
	"testing"

	"gorgonia.org/tensor"
)

// The attention workload's ops: gradient checks against finite differences
// and Launch against Do. Integer inputs (token ids, class targets) are
// given fixed values with repeats, so that the scatter-add of the embedding
// gradient meets a row more than once.

// ids are six token ids below 5, repeated.
var ids = []float64{4, 1, 4, 0, 2, 4}

func ids32() []float32 {
	out := make([]float32, len(ids))
	for i, v := range ids {
		out[i] = float32(v)
	}
	return out
}

var (
	causal = AttentionConfig{Heads: 2, SeqLen: 3, Causal: true}
	full   = AttentionConfig{Heads: 2, SeqLen: 3}
	// One head over 130 positions crosses the kernels' 128-row blocks.
	long = AttentionConfig{Heads: 1, SeqLen: 130, Causal: true}
	// Grouped-query attention: 6 query heads of 3 sharing 2 key and value
	// heads over one sequence of 5 (qkv [5, (6 + 4)·3]), and 4 sharing 2
	// over two sequences of 3 (qkv [6, (4 + 4)·3]).
	gqaCausal = AttentionConfig{Heads: 6, KVHeads: 2, SeqLen: 5, Causal: true}
	gqaFull   = AttentionConfig{Heads: 4, KVHeads: 2, SeqLen: 3}
)

// attentionGradCases are the attention workload's forward ops.
var attentionGradCases = []gradCase{
	{name: "Add", op: Add{}, shapes: []tensor.Shape{{3, 4}, {3, 4}}},
	{name: "LayerNorm", op: LayerNorm{Eps: DefaultLayerNormEps}, shapes: []tensor.Shape{{4, 6}, {6}, {6}}},
	{name: "LayerNorm eps 0.5", op: LayerNorm{Eps: 0.5}, shapes: []tensor.Shape{{2, 3}, {3}, {3}}},
	{name: "Embedding", op: Embedding{}, shapes: []tensor.Shape{{2, 3}, {5, 4}, {3, 4}}, fixed: map[int][]float64{0: ids}},
	{name: "AttentionProbs causal", op: AttentionProbs{AttentionConfig: causal}, shapes: []tensor.Shape{{6, 12}}},
	{name: "AttentionProbs full", op: AttentionProbs{AttentionConfig: full}, shapes: []tensor.Shape{{6, 12}}},
	{name: "AttentionProbs 130 positions", op: AttentionProbs{AttentionConfig: long}, shapes: []tensor.Shape{{130, 6}}},
	{name: "AttentionMix causal", op: AttentionMix{AttentionConfig: causal}, shapes: []tensor.Shape{{2, 2, 3, 3}, {6, 12}}},
	{name: "AttentionMix full", op: AttentionMix{AttentionConfig: full}, shapes: []tensor.Shape{{2, 2, 3, 3}, {6, 12}}},
	{name: "AttentionMix 130 positions", op: AttentionMix{AttentionConfig: long}, shapes: []tensor.Shape{{1, 1, 130, 130}, {130, 6}}},
	{name: "AttentionProbs GQA causal", op: AttentionProbs{AttentionConfig: gqaCausal}, shapes: []tensor.Shape{{5, 30}}},
	{name: "AttentionProbs GQA full", op: AttentionProbs{AttentionConfig: gqaFull}, shapes: []tensor.Shape{{6, 24}}},
	{name: "AttentionMix GQA causal", op: AttentionMix{AttentionConfig: gqaCausal}, shapes: []tensor.Shape{{1, 6, 5, 5}, {5, 30}}},
	{name: "AttentionMix GQA full", op: AttentionMix{AttentionConfig: gqaFull}, shapes: []tensor.Shape{{2, 4, 3, 3}, {6, 24}}},
	{name: "FusedAttention causal", op: FusedAttention{AttentionConfig: causal}, shapes: []tensor.Shape{{6, 12}}},
	{name: "FusedAttention full", op: FusedAttention{AttentionConfig: full}, shapes: []tensor.Shape{{6, 12}}},
	{name: "FusedAttention 130 positions", op: FusedAttention{AttentionConfig: long}, shapes: []tensor.Shape{{130, 6}}},
	{name: "FusedAttention GQA causal", op: FusedAttention{AttentionConfig: gqaCausal}, shapes: []tensor.Shape{{5, 30}}},
	{name: "FusedAttention GQA full", op: FusedAttention{AttentionConfig: gqaFull}, shapes: []tensor.Shape{{6, 24}}},
	{name: "FusedAttentionOut", op: FusedAttentionOut{AttentionConfig: causal}, shapes: []tensor.Shape{{6, 6}}},
	{name: "FusedAttentionOut GQA", op: FusedAttentionOut{AttentionConfig: gqaCausal}, shapes: []tensor.Shape{{5, 24}}},
	{name: "SoftmaxCrossEntropy", op: SoftmaxCrossEntropy{}, shapes: []tensor.Shape{{6, 5}, {2, 3}}, fixed: map[int][]float64{1: ids}},
}

// attentionLaunchCases are the attention workload's ops.
var attentionLaunchCases = []launchCase{
	{name: "Add", op: Add{}, shapes: []tensor.Shape{{3, 4}, {3, 4}}},
	{name: "LayerNorm", op: LayerNorm{Eps: DefaultLayerNormEps}, shapes: []tensor.Shape{{4, 6}, {6}, {6}}},
	{name: "LayerNormInputGrad", op: LayerNormInputGrad{Eps: DefaultLayerNormEps}, shapes: []tensor.Shape{{4, 6}, {6}, {4, 6}}},
	{name: "LayerNormWeightGrad", op: LayerNormWeightGrad{Eps: DefaultLayerNormEps}, shapes: []tensor.Shape{{4, 6}, {4, 6}}},
	{name: "Embedding", op: Embedding{}, shapes: []tensor.Shape{{2, 3}, {5, 4}, {3, 4}}, fixed: map[int][]float32{0: ids32()}},
	{name: "EmbeddingGrad", op: EmbeddingGrad{Vocab: 5}, shapes: []tensor.Shape{{2, 3}, {6, 4}}, fixed: map[int][]float32{0: ids32()}},
	{name: "AttentionProbs", op: AttentionProbs{AttentionConfig: causal}, shapes: []tensor.Shape{{6, 12}}},
	{name: "AttentionProbsGrad", op: AttentionProbsGrad{AttentionConfig: causal}, shapes: []tensor.Shape{{6, 12}, {2, 2, 3, 3}, {2, 2, 3, 3}}},
	{name: "AttentionMix", op: AttentionMix{AttentionConfig: causal}, shapes: []tensor.Shape{{2, 2, 3, 3}, {6, 12}}},
	{name: "AttentionMixProbsGrad", op: AttentionMixProbsGrad{AttentionConfig: causal}, shapes: []tensor.Shape{{6, 4}, {6, 12}}},
	{name: "AttentionMixValueGrad", op: AttentionMixValueGrad{AttentionConfig: causal}, shapes: []tensor.Shape{{2, 2, 3, 3}, {6, 4}}},
	{name: "AttentionProbs GQA", op: AttentionProbs{AttentionConfig: gqaCausal}, shapes: []tensor.Shape{{5, 30}}},
	{name: "AttentionProbsGrad GQA", op: AttentionProbsGrad{AttentionConfig: gqaCausal}, shapes: []tensor.Shape{{5, 30}, {1, 6, 5, 5}, {1, 6, 5, 5}}},
	{name: "AttentionMix GQA", op: AttentionMix{AttentionConfig: gqaFull}, shapes: []tensor.Shape{{2, 4, 3, 3}, {6, 24}}},
	{name: "AttentionMixProbsGrad GQA", op: AttentionMixProbsGrad{AttentionConfig: gqaFull}, shapes: []tensor.Shape{{6, 12}, {6, 24}}},
	{name: "AttentionMixValueGrad GQA", op: AttentionMixValueGrad{AttentionConfig: gqaCausal}, shapes: []tensor.Shape{{1, 6, 5, 5}, {5, 18}}},
	{name: "FusedAttention", op: FusedAttention{AttentionConfig: causal}, shapes: []tensor.Shape{{6, 12}}},
	{name: "FusedAttentionOut", op: FusedAttentionOut{AttentionConfig: causal}, shapes: []tensor.Shape{{6, 6}}},
	{name: "FusedAttentionLSE", op: FusedAttentionLSE{AttentionConfig: causal}, shapes: []tensor.Shape{{6, 6}}},
	{name: "FusedAttentionPack", op: FusedAttentionPack{AttentionConfig: causal}, shapes: []tensor.Shape{{6, 4}}},
	{name: "FusedAttentionGrad", op: FusedAttentionGrad{AttentionConfig: causal}, shapes: []tensor.Shape{{6, 12}, {6, 4}, {2, 2, 3}, {6, 6}}},
	{name: "FusedAttention GQA", op: FusedAttention{AttentionConfig: gqaFull}, shapes: []tensor.Shape{{6, 24}}},
	{name: "FusedAttentionLSE GQA", op: FusedAttentionLSE{AttentionConfig: gqaCausal}, shapes: []tensor.Shape{{5, 24}}},
	{name: "FusedAttentionGrad GQA", op: FusedAttentionGrad{AttentionConfig: gqaCausal}, shapes: []tensor.Shape{{5, 30}, {5, 18}, {1, 6, 5}, {5, 24}}},
	{name: "SoftmaxCrossEntropy", op: SoftmaxCrossEntropy{}, shapes: []tensor.Shape{{6, 5}, {2, 3}}, fixed: map[int][]float32{1: ids32()}},
	{name: "SoftmaxCrossEntropyGrad", op: SoftmaxCrossEntropyGrad{}, shapes: []tensor.Shape{{6, 5}, {2, 3}, {}}, fixed: map[int][]float32{1: ids32()}},
}

// TestAttentionGQAShapes checks the shapes the attention ops take and give
// with grouped-query attention, and those they refuse.
func TestAttentionGQAShapes(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   Spec
		in   []tensor.Shape
		want tensor.Shape // nil: refused
	}{
		{"probs", AttentionProbs{gqaCausal}, []tensor.Shape{{5, 30}}, tensor.Shape{1, 6, 5, 5}},
		{"probs grad", AttentionProbsGrad{gqaCausal}, []tensor.Shape{{5, 30}, {1, 6, 5, 5}, {1, 6, 5, 5}}, tensor.Shape{5, 30}},
		{"mix", AttentionMix{gqaCausal}, []tensor.Shape{{1, 6, 5, 5}, {5, 30}}, tensor.Shape{5, 18}},
		{"mix probs grad", AttentionMixProbsGrad{gqaCausal}, []tensor.Shape{{5, 18}, {5, 30}}, tensor.Shape{1, 6, 5, 5}},
		{"mix value grad", AttentionMixValueGrad{gqaCausal}, []tensor.Shape{{1, 6, 5, 5}, {5, 18}}, tensor.Shape{5, 30}},
		{"KVHeads = Heads", AttentionProbs{AttentionConfig{Heads: 6, KVHeads: 6, SeqLen: 5}}, []tensor.Shape{{5, 54}}, tensor.Shape{1, 6, 5, 5}},
		{"qkv of 3d", AttentionProbs{gqaCausal}, []tensor.Shape{{5, 54}}, nil},
		{"qkv not a multiple", AttentionProbs{gqaCausal}, []tensor.Shape{{5, 31}}, nil},
		{"mix with 3d", AttentionMix{gqaCausal}, []tensor.Shape{{1, 6, 5, 5}, {5, 54}}, nil},
		{"KVHeads not dividing", AttentionProbs{AttentionConfig{Heads: 6, KVHeads: 4, SeqLen: 5}}, []tensor.Shape{{5, 42}}, nil},
		{"KVHeads not dividing, out", AttentionMixValueGrad{AttentionConfig{Heads: 6, KVHeads: 4, SeqLen: 5}}, []tensor.Shape{{1, 6, 5, 5}, {5, 18}}, nil},
		{"KVHeads negative", AttentionProbs{AttentionConfig{Heads: 6, KVHeads: -2, SeqLen: 5}}, []tensor.Shape{{5, 6}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.op.shape(tc.in)
			switch {
			case tc.want == nil && err == nil:
				t.Errorf("shape(%v) = %v, want an error", tc.in, got)
			case tc.want != nil && err != nil:
				t.Errorf("shape(%v): %v", tc.in, err)
			case tc.want != nil && !got.Eq(tc.want):
				t.Errorf("shape(%v) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

// TestAttentionGQACost checks that grouped-query attention costs the
// FLOPs of its query heads, as without grouping, and reads fewer bytes:
// its qkv is narrower.
func TestAttentionGQACost(t *testing.T) {
	grouped := AttentionConfig{Heads: 6, KVHeads: 2, SeqLen: 5, Causal: true}
	plain := AttentionConfig{Heads: 6, SeqLen: 5, Causal: true}
	for _, tc := range []struct {
		name     string
		gqa, mha Spec
		gIn, mIn []tensor.Shape
		flops    int64
	}{
		// 6 heads of 3, one sequence of 5, causal: 15 entries of P each.
		{"probs", AttentionProbs{grouped}, AttentionProbs{plain}, []tensor.Shape{{5, 30}}, []tensor.Shape{{5, 54}}, 2*6*15*3 + 5*6*25},
		{"mix", AttentionMix{grouped}, AttentionMix{plain}, []tensor.Shape{{1, 6, 5, 5}, {5, 30}}, []tensor.Shape{{1, 6, 5, 5}, {5, 54}}, 2 * 6 * 15 * 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, m := New(tc.gqa).(coster).Cost(tc.gIn), New(tc.mha).(coster).Cost(tc.mIn)
			if g.FLOPs != tc.flops || m.FLOPs != tc.flops {
				t.Errorf("FLOPs %d grouped, %d not, want %d", g.FLOPs, m.FLOPs, tc.flops)
			}
			if g.ReadBytes >= m.ReadBytes {
				t.Errorf("grouped reads %d bytes, not fewer than the %d without grouping", g.ReadBytes, m.ReadBytes)
			}
		})
	}
}

// TestFusedAttentionPackClearsLSE checks that FusedAttentionPack's host
// math writes zeros over the log-sum-exps' part of a buffer that held
// another value: FusedAttentionGrad reads that part as the log-sum-exps'
// gradient, so a stale element would enter every query, key and value
// gradient of its row (a fresh, zeroed buffer hides the omission).
func TestFusedAttentionPackClearsLSE(t *testing.T) {
	a, err := FusedAttentionPack{causal}.sizes([]tensor.Shape{{6, 4}})
	if err != nil {
		t.Fatal(err)
	}
	g := make([]float64, a.OutLen())
	for i := range g {
		g[i] = float64(i + 1)
	}
	for _, tc := range []struct {
		name string
		pack func(g []float64, stale float64) []float64 // the packed value, as float64
	}{
		{"float64", func(g []float64, stale float64) []float64 {
			packed := filled(a.OutLen()+a.LSELen(), stale)
			packGrad(packed, g, a)
			return packed
		}},
		{"float32", func(g []float64, stale float64) []float64 {
			g32 := make([]float32, len(g))
			for i, v := range g {
				g32[i] = float32(v)
			}
			packed := make([]float32, a.OutLen()+a.LSELen())
			for i := range packed {
				packed[i] = float32(stale)
			}
			packGrad(packed, g32, a)
			out := make([]float64, len(packed))
			for i, v := range packed {
				out[i] = float64(v)
			}
			return out
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			packed := tc.pack(g, 7)
			for i, v := range packed {
				want := 0.0
				if i < a.OutLen() {
					want = g[i]
				}
				if v != want {
					t.Fatalf("element %d of %d (output part %d) = %g, want %g", i, len(packed), a.OutLen(), v, want)
				}
			}
		})
	}
}

// filled is n elements of v.
func filled(n int, v float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = v
	}
	return x
}
