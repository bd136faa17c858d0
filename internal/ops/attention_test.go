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

func TestAttentionGradients(t *testing.T) {
	causal := AttentionConfig{Heads: 2, SeqLen: 3, Causal: true}
	full := AttentionConfig{Heads: 2, SeqLen: 3}
	// One head over 130 positions crosses the kernels' 128-row blocks.
	long := AttentionConfig{Heads: 1, SeqLen: 130, Causal: true}
	for _, tc := range []struct {
		gradCase
		fixed map[int][]float64
	}{
		{gradCase{name: "Add", op: Add{}, shapes: []tensor.Shape{{3, 4}, {3, 4}}}, nil},
		{gradCase{name: "LayerNorm", op: LayerNorm{Eps: DefaultLayerNormEps}, shapes: []tensor.Shape{{4, 6}, {6}, {6}}}, nil},
		{gradCase{name: "LayerNorm eps 0.5", op: LayerNorm{Eps: 0.5}, shapes: []tensor.Shape{{2, 3}, {3}, {3}}}, nil},
		{gradCase{name: "Embedding", op: Embedding{}, shapes: []tensor.Shape{{2, 3}, {5, 4}, {3, 4}}}, map[int][]float64{0: ids}},
		{gradCase{name: "AttentionProbs causal", op: AttentionProbs{AttentionConfig: causal}, shapes: []tensor.Shape{{6, 12}}}, nil},
		{gradCase{name: "AttentionProbs full", op: AttentionProbs{AttentionConfig: full}, shapes: []tensor.Shape{{6, 12}}}, nil},
		{gradCase{name: "AttentionProbs 130 positions", op: AttentionProbs{AttentionConfig: long}, shapes: []tensor.Shape{{130, 6}}}, nil},
		{gradCase{name: "AttentionMix causal", op: AttentionMix{AttentionConfig: causal}, shapes: []tensor.Shape{{2, 2, 3, 3}, {6, 12}}}, nil},
		{gradCase{name: "AttentionMix full", op: AttentionMix{AttentionConfig: full}, shapes: []tensor.Shape{{2, 2, 3, 3}, {6, 12}}}, nil},
		{gradCase{name: "AttentionMix 130 positions", op: AttentionMix{AttentionConfig: long}, shapes: []tensor.Shape{{1, 1, 130, 130}, {130, 6}}}, nil},
		{gradCase{name: "SoftmaxCrossEntropy", op: SoftmaxCrossEntropy{}, shapes: []tensor.Shape{{6, 5}, {2, 3}}}, map[int][]float64{1: ids}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkGradientsWith(t, tc.gradCase, tc.fixed) })
	}
}

func TestAttentionLaunchMatchesDo(t *testing.T) {
	c := AttentionConfig{Heads: 2, SeqLen: 3, Causal: true}
	for _, tc := range []struct {
		launchCase
		fixed map[int][]float32
	}{
		{launchCase{"Add", Add{}, []tensor.Shape{{3, 4}, {3, 4}}}, nil},
		{launchCase{"LayerNorm", LayerNorm{Eps: DefaultLayerNormEps}, []tensor.Shape{{4, 6}, {6}, {6}}}, nil},
		{launchCase{"LayerNormInputGrad", LayerNormInputGrad{Eps: DefaultLayerNormEps}, []tensor.Shape{{4, 6}, {6}, {4, 6}}}, nil},
		{launchCase{"LayerNormWeightGrad", LayerNormWeightGrad{Eps: DefaultLayerNormEps}, []tensor.Shape{{4, 6}, {4, 6}}}, nil},
		{launchCase{"Embedding", Embedding{}, []tensor.Shape{{2, 3}, {5, 4}, {3, 4}}}, map[int][]float32{0: ids32()}},
		{launchCase{"EmbeddingGrad", EmbeddingGrad{Vocab: 5}, []tensor.Shape{{2, 3}, {6, 4}}}, map[int][]float32{0: ids32()}},
		{launchCase{"AttentionProbs", AttentionProbs{AttentionConfig: c}, []tensor.Shape{{6, 12}}}, nil},
		{launchCase{"AttentionProbsGrad", AttentionProbsGrad{AttentionConfig: c}, []tensor.Shape{{6, 12}, {2, 2, 3, 3}, {2, 2, 3, 3}}}, nil},
		{launchCase{"AttentionMix", AttentionMix{AttentionConfig: c}, []tensor.Shape{{2, 2, 3, 3}, {6, 12}}}, nil},
		{launchCase{"AttentionMixProbsGrad", AttentionMixProbsGrad{AttentionConfig: c}, []tensor.Shape{{6, 4}, {6, 12}}}, nil},
		{launchCase{"AttentionMixValueGrad", AttentionMixValueGrad{AttentionConfig: c}, []tensor.Shape{{2, 2, 3, 3}, {6, 4}}}, nil},
		{launchCase{"SoftmaxCrossEntropy", SoftmaxCrossEntropy{}, []tensor.Shape{{6, 5}, {2, 3}}}, map[int][]float32{1: ids32()}},
		{launchCase{"SoftmaxCrossEntropyGrad", SoftmaxCrossEntropyGrad{}, []tensor.Shape{{6, 5}, {2, 3}, {}}}, map[int][]float32{1: ids32()}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkLaunchWith(t, tc.launchCase, tc.fixed) })
	}
}
