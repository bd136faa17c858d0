package ops

import "gorgonia.org/tensor"

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
	{name: "SoftmaxCrossEntropy", op: SoftmaxCrossEntropy{}, shapes: []tensor.Shape{{6, 5}, {2, 3}}, fixed: map[int][]float32{1: ids32()}},
	{name: "SoftmaxCrossEntropyGrad", op: SoftmaxCrossEntropyGrad{}, shapes: []tensor.Shape{{6, 5}, {2, 3}, {}}, fixed: map[int][]float32{1: ids32()}},
}
