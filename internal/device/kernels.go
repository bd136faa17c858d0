package device

import "gpuz/internal/kernels"

// Kernels is the math a device runs on its buffers, one method per
// operation that the engine dispatches. Matrices are row-major; every
// method's shapes are those of the op it serves in package ops.
type Kernels interface {
	// Gemm computes c = op(a)·op(b) for op(a) m×k and op(b) k×n.
	Gemm(transA, transB bool, m, n, k int, a, b, c Buffer)
	// AddRowVector adds v to every row of m.
	AddRowVector(m, v Buffer)
	// SumRows sets dst to the sum of the rows of m.
	SumRows(dst, m Buffer)
	// LeakyReLU sets dst to the activation of src.
	LeakyReLU(dst, src Buffer, slope float32)
	// LeakyReLUGrad sets dst to the activation's gradient at x given g.
	LeakyReLUGrad(dst, x, g Buffer, slope float32)
	// Add sets dst = a + b.
	Add(dst, a, b Buffer)
	// Conv2d sets dst to the stride-1 convolution of x with w plus bias,
	// NCHW, with weights [out, in, k, k] (see kernels.ConvShape).
	Conv2d(dst, x, w, bias Buffer, s kernels.ConvShape)
	// Conv2dInputGrad sets dst to Conv2d's gradient with respect to x given
	// the output gradient g.
	Conv2dInputGrad(dst, g, w Buffer, s kernels.ConvShape)
	// Conv2dWeightGrad sets dst to Conv2d's gradient with respect to w given
	// the input x and the output gradient g.
	Conv2dWeightGrad(dst, x, g Buffer, s kernels.ConvShape)
	// Conv2dBiasGrad sets dst to Conv2d's gradient with respect to the
	// bias: g summed over images and positions, per channel.
	Conv2dBiasGrad(dst, g Buffer, s kernels.ConvShape)
	// MeanSquaredError sets the one element of dst to mean((pred − target)²).
	MeanSquaredError(dst, pred, target Buffer)
	// MeanSquaredErrorGrad sets dst = seed · 2(pred − target)/n, seed being a
	// one-element buffer.
	MeanSquaredErrorGrad(dst, pred, target, seed Buffer)
	// Mean sets the one element of dst to the mean of x.
	Mean(dst, x Buffer)
	// Fill sets every element of dst to scale times the one element of s.
	Fill(dst, s Buffer, scale float32)
	// SumSquares returns the sum of the squares of x's elements.
	SumSquares(x Buffer) float64
	// AdamStep applies Adam update number step to p from g·gradScale,
	// updating the moments m and v (see kernels.AdamStep).
	AdamStep(opt kernels.Adam, p, g, m, v Buffer, gradScale float64, step int)

	// LayerNorm normalises each row of x over len(gamma) columns, then
	// scales by gamma and shifts by beta (see kernels.LayerNorm).
	LayerNorm(dst, x, gamma, beta Buffer, eps float64)
	// LayerNormInputGrad sets dst to LayerNorm's gradient with respect to x
	// given the output gradient g.
	LayerNormInputGrad(dst, x, gamma, g Buffer, eps float64)
	// LayerNormWeightGrad sets dst to LayerNorm's gradient with respect to
	// gamma given the output gradient g.
	LayerNormWeightGrad(dst, x, g Buffer, eps float64)
	// Embedding sets dst to the rows of weight that ids select plus the
	// positions (see kernels.Embedding); ids out of range are an error.
	Embedding(dst, ids, weight, positions Buffer) error
	// EmbeddingGrad sets dst to Embedding's gradient with respect to weight
	// given the output gradient g.
	EmbeddingGrad(dst, ids, g Buffer) error
	// AttentionProbs sets dst to the attention probabilities of the packed
	// queries, keys and values qkv (see kernels.Attention for the layouts).
	AttentionProbs(dst, qkv Buffer, a kernels.Attention)
	// AttentionProbsGrad sets dst to AttentionProbs' gradient with respect
	// to qkv given its output p and that output's gradient dp.
	AttentionProbsGrad(dst, qkv, p, dp Buffer, a kernels.Attention)
	// AttentionMix sets dst to the attention output: the probabilities p
	// times the values in qkv, heads merged.
	AttentionMix(dst, p, qkv Buffer, a kernels.Attention)
	// AttentionMixProbsGrad sets dst to AttentionMix's gradient with
	// respect to p given the output gradient g.
	AttentionMixProbsGrad(dst, g, qkv Buffer, a kernels.Attention)
	// AttentionMixValueGrad sets dst to AttentionMix's gradient with
	// respect to qkv given the output gradient g.
	AttentionMixValueGrad(dst, p, g Buffer, a kernels.Attention)
	// SoftmaxCrossEntropy sets the one element of dst to the mean over the
	// rows of logits of the cross-entropy with the integer class ids in
	// targets; ids out of range are an error.
	SoftmaxCrossEntropy(dst, logits, targets Buffer) error
	// SoftmaxCrossEntropyGrad sets dst to the loss's gradient with respect
	// to the logits times the one element of seed.
	SoftmaxCrossEntropyGrad(dst, logits, targets, seed Buffer) error
}

// HostKernels runs the kernels of package kernels on host buffers; the
// simulated device uses them too.
type HostKernels struct{}

// Gemm computes c = op(a)·op(b).
func (HostKernels) Gemm(transA, transB bool, m, n, k int, a, b, c Buffer) {
	kernels.Gemm(transA, transB, m, n, k, 1, Floats(a), Floats(b), 0, Floats(c))
}

// AddRowVector adds v to every row of m.
func (HostKernels) AddRowVector(m, v Buffer) { kernels.AddRowVector(Floats(m), Floats(v)) }

// SumRows sets dst to the sum of the rows of m.
func (HostKernels) SumRows(dst, m Buffer) { kernels.SumRows(Floats(dst), Floats(m)) }

// LeakyReLU sets dst to the activation of src.
func (HostKernels) LeakyReLU(dst, src Buffer, slope float32) {
	kernels.LeakyReLU(Floats(dst), Floats(src), slope)
}

// LeakyReLUGrad sets dst to the activation's gradient.
func (HostKernels) LeakyReLUGrad(dst, x, g Buffer, slope float32) {
	kernels.LeakyReLUGrad(Floats(dst), Floats(x), Floats(g), slope)
}

// Add sets dst = a + b.
func (HostKernels) Add(dst, a, b Buffer) { kernels.Add(Floats(dst), Floats(a), Floats(b)) }

// Conv2d sets dst to the convolution of x with w plus bias.
func (HostKernels) Conv2d(dst, x, w, bias Buffer, s kernels.ConvShape) {
	kernels.Conv2d(Floats(dst), Floats(x), Floats(w), Floats(bias), s)
}

// Conv2dInputGrad sets dst to the gradient with respect to x.
func (HostKernels) Conv2dInputGrad(dst, g, w Buffer, s kernels.ConvShape) {
	kernels.Conv2dInputGrad(Floats(dst), Floats(g), Floats(w), s)
}

// Conv2dWeightGrad sets dst to the gradient with respect to w.
func (HostKernels) Conv2dWeightGrad(dst, x, g Buffer, s kernels.ConvShape) {
	kernels.Conv2dWeightGrad(Floats(dst), Floats(x), Floats(g), s)
}

// Conv2dBiasGrad sets dst to the gradient with respect to the bias.
func (HostKernels) Conv2dBiasGrad(dst, g Buffer, s kernels.ConvShape) {
	kernels.Conv2dBiasGrad(Floats(dst), Floats(g), s.Batch, s.OutC, s.OutH*s.OutW)
}

// MeanSquaredError sets dst[0] to the loss.
func (HostKernels) MeanSquaredError(dst, pred, target Buffer) {
	Floats(dst)[0] = float32(kernels.MeanSquaredError(Floats(pred), Floats(target)))
}

// MeanSquaredErrorGrad sets dst to the loss gradient.
func (HostKernels) MeanSquaredErrorGrad(dst, pred, target, seed Buffer) {
	kernels.MeanSquaredErrorGrad(Floats(dst), Floats(pred), Floats(target), Floats(seed)[0])
}

// Mean sets dst[0] to the mean of x.
func (HostKernels) Mean(dst, x Buffer) {
	xs := Floats(x)
	Floats(dst)[0] = float32(kernels.Sum(xs) / float64(len(xs)))
}

// Fill sets dst to scale·s[0].
func (HostKernels) Fill(dst, s Buffer, scale float32) {
	d, v := Floats(dst), Floats(s)[0]*scale
	for i := range d {
		d[i] = v
	}
}

// SumSquares returns the sum of squares of x.
func (HostKernels) SumSquares(x Buffer) float64 { return kernels.SumSquares(Floats(x)) }

// AdamStep applies one Adam update.
func (HostKernels) AdamStep(opt kernels.Adam, p, g, m, v Buffer, gradScale float64, step int) {
	kernels.AdamStep(opt, Floats(p), Floats(g), Floats(m), Floats(v), gradScale, step)
}

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
