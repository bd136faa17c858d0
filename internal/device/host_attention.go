package device

import "gpuz/internal/kernels"

// LayerNorm normalises the rows of x.
func (HostKernels) LayerNorm(dst, x, gamma, beta Buffer, eps float64) {
	kernels.LayerNorm(Floats(dst), Floats(x), Floats(gamma), Floats(beta), eps)
}

// LayerNormInputGrad sets dst to the gradient with respect to x.
func (HostKernels) LayerNormInputGrad(dst, x, gamma, g Buffer, eps float64) {
	kernels.LayerNormInputGrad(Floats(dst), Floats(x), Floats(gamma), Floats(g), eps)
}

// LayerNormWeightGrad sets dst to the gradient with respect to gamma.
func (HostKernels) LayerNormWeightGrad(dst, x, g Buffer, eps float64) {
	kernels.LayerNormWeightGrad(Floats(dst), Floats(x), Floats(g), eps)
}

// Embedding looks the ids up and adds the positions.
func (HostKernels) Embedding(dst, ids, weight, positions Buffer) error {
	return kernels.Embedding(Floats(dst), Floats(ids), Floats(weight), Floats(positions))
}

// EmbeddingGrad scatter-adds the gradient's rows by id.
func (HostKernels) EmbeddingGrad(dst, ids, g Buffer) error {
	return kernels.EmbeddingGrad(Floats(dst), Floats(ids), Floats(g))
}

// AttentionProbs sets dst to the attention probabilities.
func (HostKernels) AttentionProbs(dst, qkv Buffer, a kernels.Attention) {
	kernels.AttentionProbs(Floats(dst), Floats(qkv), a)
}

// AttentionProbsGrad sets dst to the probabilities' gradient with respect
// to qkv.
func (HostKernels) AttentionProbsGrad(dst, qkv, p, dp Buffer, a kernels.Attention) {
	kernels.AttentionProbsGrad(Floats(dst), Floats(qkv), Floats(p), Floats(dp), a)
}

// AttentionMix sets dst to the attention output.
func (HostKernels) AttentionMix(dst, p, qkv Buffer, a kernels.Attention) {
	kernels.AttentionMix(Floats(dst), Floats(p), Floats(qkv), a)
}

// AttentionMixProbsGrad sets dst to the output's gradient with respect to
// the probabilities.
func (HostKernels) AttentionMixProbsGrad(dst, g, qkv Buffer, a kernels.Attention) {
	kernels.AttentionMixProbsGrad(Floats(dst), Floats(g), Floats(qkv), a)
}

// AttentionMixValueGrad sets dst to the output's gradient with respect to
// qkv.
func (HostKernels) AttentionMixValueGrad(dst, p, g Buffer, a kernels.Attention) {
	kernels.AttentionMixValueGrad(Floats(dst), Floats(p), Floats(g), a)
}

// SoftmaxCrossEntropy sets dst[0] to the loss.
func (HostKernels) SoftmaxCrossEntropy(dst, logits, targets Buffer) error {
	loss, err := kernels.SoftmaxCrossEntropy(Floats(logits), Floats(targets))
	Floats(dst)[0] = float32(loss)
	return err
}

// SoftmaxCrossEntropyGrad sets dst to the loss's gradient times seed[0].
func (HostKernels) SoftmaxCrossEntropyGrad(dst, logits, targets, seed Buffer) error {
	return kernels.SoftmaxCrossEntropyGrad(Floats(dst), Floats(logits), Floats(targets), Floats(seed)[0])
}
