package device

import (
	"fmt"

	"gpuz/internal/half"
	"gpuz/internal/hostmath"
	"gpuz/internal/quant"
)

// Kernels is the math a device runs on its buffers, one method per
// operation that the engine dispatches. Matrices are row-major; every
// method's shapes are those of the op it serves in package ops.
type Kernels interface {
	// Gemm computes c = op(a)·op(b) for op(a) m×k and op(b) k×n.
	Gemm(transA, transB bool, m, n, k int, a, b, c Buffer)
	// GemmHalf computes c = op(a)·op(b) as Gemm does, a and b holding
	// 16-bit values of format f (packed two to a word) and c float32: the
	// products of 16-bit values summed in float32 (cuBLAS's GemmEx with
	// 16-bit inputs and 32-bit compute; hostmath.GemmBF16 on the host).
	GemmHalf(f half.Format, transA, transB bool, m, n, k int, a, b, c Buffer)
	// QuantXWt computes y [m, n] = x [m, k]·Wᵀ for the weight W [n, k]
	// stored in kind in w's bytes (kind.Bytes(n, k) of them, in
	// ceil(bytes/4) float32 words), x and y float32: the product of a
	// projection whose frozen weight is quantized, W's blocks decoded as
	// they are read, never widened whole (see hostmath.QuantXWt). k must
	// be whole blocks of kind.
	QuantXWt(kind quant.Kind, m, n, k int, x, w, y Buffer)
	// QuantGW computes dx [m, k] = g [m, n]·W for W [n, k] stored as
	// QuantXWt's: QuantXWt's gradient with respect to x (see
	// hostmath.QuantGW).
	QuantGW(kind quant.Kind, m, n, k int, g, w, dx Buffer)
	// QuantEmbedding sets dst to the rows of the table [vocab, d] stored
	// in kind in w that ids select, dequantized (hostmath.QuantEmbedding):
	// TokenEmbedding over a quantized table; ids out of range are an
	// error. A row kind: not NF4.
	QuantEmbedding(kind quant.Kind, dst, ids, w Buffer, vocab int) error
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
	// NCHW, with weights [out, in, k, k] (see hostmath.ConvShape).
	Conv2d(dst, x, w, bias Buffer, s hostmath.ConvShape)
	// Conv2dInputGrad sets dst to Conv2d's gradient with respect to x given
	// the output gradient g.
	Conv2dInputGrad(dst, g, w Buffer, s hostmath.ConvShape)
	// Conv2dWeightGrad sets dst to Conv2d's gradient with respect to w given
	// the input x and the output gradient g.
	Conv2dWeightGrad(dst, x, g Buffer, s hostmath.ConvShape)
	// Conv2dBiasGrad sets dst to Conv2d's gradient with respect to the
	// bias: g summed over images and positions, per channel.
	Conv2dBiasGrad(dst, g Buffer, s hostmath.ConvShape)
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
	// ToHalf sets the first n 16-bit elements of dst, packed two to a
	// float32 word (half.Words(n) words), to the first n values of src
	// rounded to format f, nearest even, as package half rounds.
	ToHalf(dst, src Buffer, n int, f half.Format)
	// FromHalf sets the first n elements of dst to the n 16-bit values of
	// format f in src, exactly.
	FromHalf(dst, src Buffer, n int, f half.Format)
	// AdamStep applies Adam update number step to p from g·gradScale,
	// updating the moments m and v (see hostmath.AdamStep).
	AdamStep(opt hostmath.Adam, p, g, m, v Buffer, gradScale float64, step int)

	// LayerNorm normalises each row of x over len(gamma) columns, then
	// scales by gamma and shifts by beta (see hostmath.LayerNorm).
	LayerNorm(dst, x, gamma, beta Buffer, eps float64)
	// LayerNormInputGrad sets dst to LayerNorm's gradient with respect to x
	// given the output gradient g.
	LayerNormInputGrad(dst, x, gamma, g Buffer, eps float64)
	// LayerNormWeightGrad sets dst to LayerNorm's gradient with respect to
	// gamma given the output gradient g.
	LayerNormWeightGrad(dst, x, g Buffer, eps float64)
	// Embedding sets dst to the rows of weight that ids select plus the
	// positions (see hostmath.Embedding); ids out of range are an error.
	Embedding(dst, ids, weight, positions Buffer) error
	// EmbeddingGrad sets dst to Embedding's gradient with respect to weight
	// given the output gradient g.
	EmbeddingGrad(dst, ids, g Buffer) error
	// AttentionProbs sets dst to the attention probabilities of the packed
	// queries, keys and values qkv (see hostmath.Attention for the layouts).
	AttentionProbs(dst, qkv Buffer, a hostmath.Attention)
	// AttentionProbsGrad sets dst to AttentionProbs' gradient with respect
	// to qkv given its output p and that output's gradient dp.
	AttentionProbsGrad(dst, qkv, p, dp Buffer, a hostmath.Attention)
	// AttentionMix sets dst to the attention output: the probabilities p
	// times the values in qkv, heads merged.
	AttentionMix(dst, p, qkv Buffer, a hostmath.Attention)
	// AttentionMixProbsGrad sets dst to AttentionMix's gradient with
	// respect to p given the output gradient g.
	AttentionMixProbsGrad(dst, g, qkv Buffer, a hostmath.Attention)
	// AttentionMixValueGrad sets dst to AttentionMix's gradient with
	// respect to qkv given the output gradient g.
	AttentionMixValueGrad(dst, p, g Buffer, a hostmath.Attention)
	// FusedAttention sets dst, packed (a.OutLen() elements of attention
	// output [Batch·Seq, DModel()], then a.LSELen() log-sum-exps [Batch,
	// Heads, Seq]), to the attention output of the packed qkv and the
	// log-sum-exp of every row of scores, both from one pass computed
	// block by block with an online softmax, never holding the
	// probabilities (see hostmath.FusedAttention).
	FusedAttention(dst, qkv Buffer, a hostmath.Attention)
	// FusedAttentionGrad sets dst to the gradient with respect to qkv of
	// the packed output given the output out, the log-sum-exps lse and
	// the packed gradient gp (the output's, then the log-sum-exps'),
	// recomputing the probabilities block by block.
	FusedAttentionGrad(dst, qkv, out, lse, gp Buffer, a hostmath.Attention)
	// FusedAttentionUnpack sets dst to the attention output (lse false) or
	// the log-sum-exps (lse true) of FusedAttention's packed output.
	FusedAttentionUnpack(dst, packed Buffer, lse bool, a hostmath.Attention)
	// FusedAttentionPack sets dst, packed as FusedAttention's output, to
	// the output gradient g followed by zeros for the log-sum-exps.
	FusedAttentionPack(dst, g Buffer, a hostmath.Attention)
	// CacheWrite writes the keys and values of the new tokens' packed
	// qkv rows into a layer's key-value cache kv (its keys, then its
	// values, c.Elements() each) at positions start … start+c.Seq−1,
	// start read from pos[0] (see hostmath.CacheWrite); a start that is
	// not an integer or does not fit the cache is an error. With
	// c.Format set the cache holds 16-bit values of that format, packed
	// two to a word, and the keys and values are rounded into it in
	// place (hostmath.CacheWriteHalf).
	CacheWrite(kv, qkv, pos Buffer, c hostmath.KVCache) error
	// CacheAttend sets dst [c.Batch·c.Seq, c.DModel()] to the new tokens'
	// attention against the cache kv, which CacheWrite has written, new
	// token i seeing positions 0 … start+i, start read from pos[0] (see
	// hostmath.CacheAttend); a start as CacheWrite's is an error. With
	// c.Format set the cache is 16-bit, read as stored, each key and
	// value widened to float32 as it is read (hostmath.CacheAttendHalf).
	CacheAttend(dst, qkv, kv, pos Buffer, c hostmath.KVCache) error
	// SoftmaxCrossEntropy sets the one element of dst to the mean over the
	// rows of logits of the cross-entropy with the integer class ids in
	// targets; ids out of range are an error.
	SoftmaxCrossEntropy(dst, logits, targets Buffer) error
	// SoftmaxCrossEntropyGrad sets dst to the loss's gradient with respect
	// to the logits times the one element of seed.
	SoftmaxCrossEntropyGrad(dst, logits, targets, seed Buffer) error

	// The Llama family's kernels.

	// RMSNorm sets each row of dst to weight ⊙ x/√(mean(x²) + eps) over
	// len(weight) columns (see hostmath.RMSNorm).
	RMSNorm(dst, x, weight Buffer, eps float64)
	// RMSNormInputGrad sets dst to RMSNorm's gradient with respect to x
	// given the output gradient g.
	RMSNormInputGrad(dst, x, weight, g Buffer, eps float64)
	// RMSNormWeightGrad sets dst to RMSNorm's gradient with respect to its
	// weight given the output gradient g.
	RMSNormWeightGrad(dst, x, g Buffer, eps float64)
	// Rotary sets dst to x with the first s.Heads heads of every row
	// rotated by the cos and sin tables of the row's position (see
	// hostmath.Rotary).
	Rotary(dst, x, cos, sin Buffer, s hostmath.RotaryShape)
	// RotaryGrad sets dst to Rotary's gradient with respect to x given the
	// output gradient g: the rotation by the opposite angle.
	RotaryGrad(dst, g, cos, sin Buffer, s hostmath.RotaryShape)
	// SwiGLU sets each row of dst [rows, n] to silu(gate)·up for x's row
	// [rows, 2n] holding gate then up (see hostmath.SwiGLU).
	SwiGLU(dst, x Buffer, n int)
	// SwiGLUGrad sets dst [rows, 2n] to SwiGLU's gradient with respect to x
	// given the output gradient g [rows, n].
	SwiGLUGrad(dst, x, g Buffer, n int)

	// GPT-2's kernels and the token embedding.

	// GELUTanh sets dst to the tanh form of GELU of src (see
	// hostmath.GELUTanh).
	GELUTanh(dst, src Buffer)
	// GELUTanhGrad sets dst to GELUTanh's gradient at x given g.
	GELUTanhGrad(dst, x, g Buffer)
	// TokenEmbedding sets dst to the rows of weight that ids select (see
	// hostmath.TokenEmbedding); ids out of range are an error.
	TokenEmbedding(dst, ids, weight Buffer) error
	// AddPositions sets dst to x plus the learned positions pos, row r of x
	// taking row r mod p.SeqLen (see hostmath.AddPositions).
	AddPositions(dst, x, pos Buffer, p hostmath.Positions)
	// PositionsGrad sets dst to AddPositions' gradient with respect to pos
	// given the output gradient g (see hostmath.PositionsGrad).
	PositionsGrad(dst, g Buffer, p hostmath.Positions)
}

// hostKernels runs the kernels of package hostmath on host buffers; the
// simulated device uses them too.
type hostKernels struct{}

// Gemm computes c = op(a)·op(b).
func (hostKernels) Gemm(transA, transB bool, m, n, k int, a, b, c Buffer) {
	hostmath.Gemm(transA, transB, m, n, k, 1, Floats(a), Floats(b), 0, Floats(c))
}

// GemmHalf computes c = op(a)·op(b) from 16-bit a and b.
func (hostKernels) GemmHalf(f half.Format, transA, transB bool, m, n, k int, a, b, c Buffer) {
	lda, ldb := gemmStrides(transA, transB, m, n, k)
	gemm := hostmath.GemmBF16
	if f == half.FP16 {
		gemm = hostmath.GemmFP16
	}
	gemm(transA, transB, m, n, k, 1, Halves(a), lda, Halves(b), ldb, 0, Floats(c), n)
}

// gemmStrides returns the row strides of a row-major op(a) m×k and op(b)
// k×n as stored, whether transposed or not.
func gemmStrides(transA, transB bool, m, n, k int) (lda, ldb int) {
	lda, ldb = max(k, 1), max(n, 1)
	if transA {
		lda = max(m, 1)
	}
	if transB {
		ldb = max(k, 1)
	}
	return lda, ldb
}

// QuantXWt computes y = x·Wᵀ from the quantized W in w's bytes.
func (hostKernels) QuantXWt(kind quant.Kind, m, n, k int, x, w, y Buffer) {
	hostmath.QuantXWt(kind, m, n, k, Floats(x), Bytes(w)[:kind.Bytes(n, k)], Floats(y))
}

// QuantEmbedding looks ids up in the quantized table in w's bytes.
func (hostKernels) QuantEmbedding(kind quant.Kind, dst, ids, w Buffer, vocab int) error {
	return hostmath.QuantEmbedding(kind, Floats(dst), Floats(ids), Bytes(w), vocab)
}

// QuantGW computes dx = g·W from the quantized W in w's bytes.
func (hostKernels) QuantGW(kind quant.Kind, m, n, k int, g, w, dx Buffer) {
	hostmath.QuantGW(kind, m, n, k, Floats(g), Bytes(w)[:kind.Bytes(n, k)], Floats(dx))
}

// AddRowVector adds v to every row of m.
func (hostKernels) AddRowVector(m, v Buffer) { hostmath.AddRowVector(Floats(m), Floats(v)) }

// SumRows sets dst to the sum of the rows of m.
func (hostKernels) SumRows(dst, m Buffer) { hostmath.SumRows(Floats(dst), Floats(m)) }

// LeakyReLU sets dst to the activation of src.
func (hostKernels) LeakyReLU(dst, src Buffer, slope float32) {
	hostmath.LeakyReLU(Floats(dst), Floats(src), slope)
}

// LeakyReLUGrad sets dst to the activation's gradient.
func (hostKernels) LeakyReLUGrad(dst, x, g Buffer, slope float32) {
	hostmath.LeakyReLUGrad(Floats(dst), Floats(x), Floats(g), slope)
}

// Add sets dst = a + b.
func (hostKernels) Add(dst, a, b Buffer) { hostmath.Add(Floats(dst), Floats(a), Floats(b)) }

// Conv2d sets dst to the convolution of x with w plus bias.
func (hostKernels) Conv2d(dst, x, w, bias Buffer, s hostmath.ConvShape) {
	hostmath.Conv2d(Floats(dst), Floats(x), Floats(w), Floats(bias), s)
}

// Conv2dInputGrad sets dst to the gradient with respect to x.
func (hostKernels) Conv2dInputGrad(dst, g, w Buffer, s hostmath.ConvShape) {
	hostmath.Conv2dInputGrad(Floats(dst), Floats(g), Floats(w), s)
}

// Conv2dWeightGrad sets dst to the gradient with respect to w.
func (hostKernels) Conv2dWeightGrad(dst, x, g Buffer, s hostmath.ConvShape) {
	hostmath.Conv2dWeightGrad(Floats(dst), Floats(x), Floats(g), s)
}

// Conv2dBiasGrad sets dst to the gradient with respect to the bias.
func (hostKernels) Conv2dBiasGrad(dst, g Buffer, s hostmath.ConvShape) {
	hostmath.Conv2dBiasGrad(Floats(dst), Floats(g), s.Batch, s.OutC, s.OutH*s.OutW)
}

// MeanSquaredError sets dst[0] to the loss.
func (hostKernels) MeanSquaredError(dst, pred, target Buffer) {
	Floats(dst)[0] = float32(hostmath.MeanSquaredError(Floats(pred), Floats(target)))
}

// MeanSquaredErrorGrad sets dst to the loss gradient.
func (hostKernels) MeanSquaredErrorGrad(dst, pred, target, seed Buffer) {
	hostmath.MeanSquaredErrorGrad(Floats(dst), Floats(pred), Floats(target), Floats(seed)[0])
}

// Mean sets dst[0] to the mean of x.
func (hostKernels) Mean(dst, x Buffer) {
	xs := Floats(x)
	Floats(dst)[0] = float32(hostmath.Sum(xs) / float64(len(xs)))
}

// Fill sets dst to scale·s[0].
func (hostKernels) Fill(dst, s Buffer, scale float32) {
	d, v := Floats(dst), Floats(s)[0]*scale
	for i := range d {
		d[i] = v
	}
}

// SumSquares returns the sum of squares of x.
func (hostKernels) SumSquares(x Buffer) float64 { return hostmath.SumSquares(Floats(x)) }

// ToHalf rounds src's first n values to 16 bits into dst.
func (hostKernels) ToHalf(dst, src Buffer, n int, f half.Format) {
	hostmath.HalfFromFloat32s(f, Halves(dst)[:n], Floats(src)[:n])
}

// FromHalf widens src's first n 16-bit values into dst.
func (hostKernels) FromHalf(dst, src Buffer, n int, f half.Format) {
	hostmath.HalfToFloat32s(f, Floats(dst)[:n], Halves(src)[:n])
}

// AdamStep applies one Adam update.
func (hostKernels) AdamStep(opt hostmath.Adam, p, g, m, v Buffer, gradScale float64, step int) {
	hostmath.AdamStep(opt, Floats(p), Floats(g), Floats(m), Floats(v), gradScale, step)
}

// LayerNorm normalises the rows of x.
func (hostKernels) LayerNorm(dst, x, gamma, beta Buffer, eps float64) {
	hostmath.LayerNorm(Floats(dst), Floats(x), Floats(gamma), Floats(beta), eps)
}

// LayerNormInputGrad sets dst to the gradient with respect to x.
func (hostKernels) LayerNormInputGrad(dst, x, gamma, g Buffer, eps float64) {
	hostmath.LayerNormInputGrad(Floats(dst), Floats(x), Floats(gamma), Floats(g), eps)
}

// LayerNormWeightGrad sets dst to the gradient with respect to gamma.
func (hostKernels) LayerNormWeightGrad(dst, x, g Buffer, eps float64) {
	hostmath.LayerNormWeightGrad(Floats(dst), Floats(x), Floats(g), eps)
}

// Embedding looks the ids up and adds the positions.
func (hostKernels) Embedding(dst, ids, weight, positions Buffer) error {
	return hostmath.Embedding(Floats(dst), Floats(ids), Floats(weight), Floats(positions))
}

// EmbeddingGrad scatter-adds the gradient's rows by id.
func (hostKernels) EmbeddingGrad(dst, ids, g Buffer) error {
	return hostmath.EmbeddingGrad(Floats(dst), Floats(ids), Floats(g))
}

// AttentionProbs sets dst to the attention probabilities.
func (hostKernels) AttentionProbs(dst, qkv Buffer, a hostmath.Attention) {
	hostmath.AttentionProbs(Floats(dst), Floats(qkv), a)
}

// AttentionProbsGrad sets dst to the probabilities' gradient with respect
// to qkv.
func (hostKernels) AttentionProbsGrad(dst, qkv, p, dp Buffer, a hostmath.Attention) {
	hostmath.AttentionProbsGrad(Floats(dst), Floats(qkv), Floats(p), Floats(dp), a)
}

// AttentionMix sets dst to the attention output.
func (hostKernels) AttentionMix(dst, p, qkv Buffer, a hostmath.Attention) {
	hostmath.AttentionMix(Floats(dst), Floats(p), Floats(qkv), a)
}

// AttentionMixProbsGrad sets dst to the output's gradient with respect to
// the probabilities.
func (hostKernels) AttentionMixProbsGrad(dst, g, qkv Buffer, a hostmath.Attention) {
	hostmath.AttentionMixProbsGrad(Floats(dst), Floats(g), Floats(qkv), a)
}

// AttentionMixValueGrad sets dst to the output's gradient with respect to
// qkv.
func (hostKernels) AttentionMixValueGrad(dst, p, g Buffer, a hostmath.Attention) {
	hostmath.AttentionMixValueGrad(Floats(dst), Floats(p), Floats(g), a)
}

// FusedAttention sets dst to the attention output followed by the rows'
// log-sum-exps.
func (hostKernels) FusedAttention(dst, qkv Buffer, a hostmath.Attention) {
	out, lse := unpack(Floats(dst), a)
	hostmath.FusedAttention(out, lse, Floats(qkv), a)
}

// FusedAttentionGrad sets dst to the fused attention's gradient with
// respect to qkv.
func (hostKernels) FusedAttentionGrad(dst, qkv, out, lse, gp Buffer, a hostmath.Attention) {
	g, glse := unpack(Floats(gp), a)
	hostmath.FusedAttentionGrad(Floats(dst), Floats(qkv), Floats(out), Floats(lse), g, glse, a)
}

// FusedAttentionUnpack sets dst to the output or the log-sum-exps of
// packed.
func (hostKernels) FusedAttentionUnpack(dst, packed Buffer, lse bool, a hostmath.Attention) {
	out, l := unpack(Floats(packed), a)
	if lse {
		out = l
	}
	copy(Floats(dst)[:len(out)], out)
}

// FusedAttentionPack sets dst to g followed by zeros.
func (hostKernels) FusedAttentionPack(dst, g Buffer, a hostmath.Attention) {
	out, lse := unpack(Floats(dst), a)
	copy(out, Floats(g)[:len(out)])
	clear(lse)
}

// unpack splits a packed fused attention value into its output and its
// log-sum-exps.
func unpack(packed []float32, a hostmath.Attention) (out, lse []float32) {
	n := a.OutLen()
	return packed[:n], packed[n : n+a.LSELen()]
}

// SoftmaxCrossEntropy sets dst[0] to the loss.
func (hostKernels) SoftmaxCrossEntropy(dst, logits, targets Buffer) error {
	loss, err := hostmath.SoftmaxCrossEntropy(Floats(logits), Floats(targets))
	Floats(dst)[0] = float32(loss)
	return err
}

// SoftmaxCrossEntropyGrad sets dst to the loss's gradient times seed[0].
func (hostKernels) SoftmaxCrossEntropyGrad(dst, logits, targets, seed Buffer) error {
	return hostmath.SoftmaxCrossEntropyGrad(Floats(dst), Floats(logits), Floats(targets), Floats(seed)[0])
}

// GELUTanh sets dst to the activation of src.
func (hostKernels) GELUTanh(dst, src Buffer) { hostmath.GELUTanh(Floats(dst), Floats(src)) }

// GELUTanhGrad sets dst to the activation's gradient.
func (hostKernels) GELUTanhGrad(dst, x, g Buffer) {
	hostmath.GELUTanhGrad(Floats(dst), Floats(x), Floats(g))
}

// CacheWrite writes the new tokens' keys and values into the cache.
func (hostKernels) CacheWrite(kv, qkv, pos Buffer, c hostmath.KVCache) error {
	start, err := CacheStart(Floats(pos)[0], c)
	if err != nil {
		return err
	}
	if c.Format != 0 {
		keys, values := cacheParts(Halves(kv), c)
		hostmath.CacheWriteHalf(keys, values, Floats(qkv), c, start, c.Format)
		return nil
	}
	keys, values := cacheParts(Floats(kv), c)
	hostmath.CacheWrite(keys, values, Floats(qkv), c, start)
	return nil
}

// CacheAttend computes the new tokens' attention against the cache.
func (hostKernels) CacheAttend(dst, qkv, kv, pos Buffer, c hostmath.KVCache) error {
	start, err := CacheStart(Floats(pos)[0], c)
	if err != nil {
		return err
	}
	if c.Format != 0 {
		keys, values := cacheParts(Halves(kv), c)
		hostmath.CacheAttendHalf(Floats(dst), Floats(qkv), keys, values, c, start, c.Format)
		return nil
	}
	keys, values := cacheParts(Floats(kv), c)
	hostmath.CacheAttend(Floats(dst), Floats(qkv), keys, values, c, start)
	return nil
}

// cacheParts splits a key-value cache's elements into its keys and its
// values.
func cacheParts[T float32 | uint16](kv []T, c hostmath.KVCache) (keys, values []T) {
	n := c.Elements()
	return kv[:n:n], kv[n : 2*n : 2*n]
}

// CacheStart returns the position of the first new token, given as a
// float32 (the first of the new tokens' positions, as the model feeds
// them), or an error when it is not an integer or the new tokens do not
// fit the cache from it.
func CacheStart(pos float32, c hostmath.KVCache) (int, error) {
	start := int(pos)
	if float32(start) != pos {
		return 0, fmt.Errorf("key-value cache: position %v is not an integer", float64(pos))
	}
	return start, c.Validate(start)
}

// TokenEmbedding looks the ids up.
func (hostKernels) TokenEmbedding(dst, ids, weight Buffer) error {
	return hostmath.TokenEmbedding(Floats(dst), Floats(ids), Floats(weight))
}

// AddPositions adds the positions to x.
func (hostKernels) AddPositions(dst, x, pos Buffer, p hostmath.Positions) {
	hostmath.AddPositions(Floats(dst), Floats(x), Floats(pos), p)
}

// PositionsGrad sums the gradient's rows by position.
func (hostKernels) PositionsGrad(dst, g Buffer, p hostmath.Positions) {
	hostmath.PositionsGrad(Floats(dst), Floats(g), p)
}
