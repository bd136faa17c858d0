package ops

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
)

// FusedAttention is the attention output computed without the
// probabilities (FlashAttention, Dao et al., 2022): from qkv [tokens, 3d]
// (or [tokens, d + 2·kd] with grouped-query heads) to [tokens, d], the
// output AttentionMix(AttentionProbs(qkv), qkv) gives, up to the order of
// its sums. It replaces the two eager ops in a model:
//
//	qkv = Linear(x, in_proj_weight, in_proj_bias)   [tokens, 3d]
//	a   = FusedAttention(qkv)                        [tokens, d], heads merged
//	y   = Linear(a, out_proj.weight, out_proj.bias)
//
// Its gradient reads qkv, the output and one log-sum-exp per row of scores
// (FusedAttentionLSE), and recomputes the probabilities block by block
// (FusedAttentionGrad), so training keeps B·H·S values for the attention
// where the eager ops keep the B·H·S² probabilities.
//
// An op has one output, so the log-sum-exps are a value of their own,
// made by FusedAttentionLSE from qkv in the forward pass when the
// gradient is wired (in training only). We chose that over one op whose
// output packs the attention output and the log-sum-exps: the out
// projection reads the output as [tokens, d], so a packed value would
// need a copy of the output beside it, saved for the out projection's
// weight gradient, and then the packed value, read by the backward pass,
// would be saved too, the output twice. With two values the saved bytes
// are the output and the log-sum-exps, nothing more; the price is the
// scores computed once more in the forward pass of training (the online
// maxima and sums without the values' product: a third more attention
// work forward, counted in FusedAttentionLSE's cost).
type FusedAttention struct{ AttentionConfig }

// FusedAttentionLSE is the log-sum-exp of every row of scaled scores,
// log Σ_t exp(q_s·k_t/√(d/Heads)) over the row's unmasked keys: from qkv
// to [tokens/SeqLen, Heads, SeqLen]. It is what FusedAttention's gradient
// needs of the softmax: the probabilities are exp(score − lse).
type FusedAttentionLSE struct{ AttentionConfig }

// FusedAttentionGrad is the gradient of FusedAttention with respect to
// qkv, given qkv, the output out, the log-sum-exps lse and the output
// gradient g: the query, key and value gradients, a key or value head's
// summed over the query heads of its group.
type FusedAttentionGrad struct{ AttentionConfig }

func (FusedAttention) signature() []int     { return []int{2, 2} }
func (FusedAttentionLSE) signature() []int  { return []int{2, 3} }
func (FusedAttentionGrad) signature() []int { return []int{2, 2, 3, 2, 2} }

func (op FusedAttention) sizes(in []tensor.Shape) (hostmath.Attention, error) {
	return op.read(in, "qkv")
}

func (op FusedAttentionLSE) sizes(in []tensor.Shape) (hostmath.Attention, error) {
	return op.read(in, "qkv")
}

// sizes: the log-sum-exps must be [batch, heads, seq] at qkv's sizes.
func (op FusedAttentionGrad) sizes(in []tensor.Shape) (hostmath.Attention, error) {
	a, err := op.read(in[:2], "qkv", "out")
	if err != nil {
		return a, err
	}
	if _, err := op.read([]tensor.Shape{in[0], in[3]}, "qkv", "out"); err != nil {
		return a, err
	}
	if !in[2].Eq(lseShape(a)) {
		return a, fmt.Errorf("lse has shape %v, want %v", in[2], lseShape(a))
	}
	return a, nil
}

func lseShape(a hostmath.Attention) tensor.Shape { return tensor.Shape{a.Batch, a.Heads, a.Seq} }

func (op FusedAttention) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.sizes, in, outShape)
}

func (op FusedAttentionLSE) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.sizes, in, lseShape)
}

func (op FusedAttentionGrad) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.sizes, in, qkvShape)
}

// kernel: the fused kernel with the log-sum-exps not written.
func (op FusedAttention) kernel() kernel {
	return call1(op.sizes, fusedOut[float32], fusedOut[float64],
		func(k device.Kernels, out, qkv device.Buffer, a hostmath.Attention) {
			k.FusedAttention(out, nil, qkv, a)
		})
}

// kernel: the fused kernel with the output not written (nor the values
// read).
func (op FusedAttentionLSE) kernel() kernel {
	return call1(op.sizes, fusedLSE[float32], fusedLSE[float64],
		func(k device.Kernels, lse, qkv device.Buffer, a hostmath.Attention) {
			k.FusedAttention(nil, lse, qkv, a)
		})
}

func (op FusedAttentionGrad) kernel() kernel {
	return sizedKernel(op.sizes, fusedGrad[float32], fusedGrad[float64], func(d launchArgs, a hostmath.Attention) {
		d.k.FusedAttentionGrad(d.out, d.args[0], d.args[1], d.args[2], d.args[3], a)
	})
}

func fusedOut[T hostmath.Float](out, qkv []T, a hostmath.Attention) {
	hostmath.FusedAttention(out, nil, qkv, a)
}

func fusedLSE[T hostmath.Float](lse, qkv []T, a hostmath.Attention) {
	hostmath.FusedAttention(nil, lse, qkv, a)
}

func fusedGrad[T hostmath.Float](h hostArgs[T], a hostmath.Attention) {
	hostmath.FusedAttentionGrad(h.out, h.in[0], h.in[1], h.in[2], h.in[3], a)
}

// grads: qkv's gradient from qkv, the output, the log-sum-exps (a forward
// value of their own, see FusedAttention) and the output's gradient. The
// log-sum-exps depend on qkv only, so the engine computes them in the
// forward pass and keeps them with the output for the backward pass.
func (op FusedAttention) grads() []grad {
	return []grad{func(inputs gorgonia.Nodes, output, g *gorgonia.Node) (*gorgonia.Node, error) {
		lse, err := Apply(FusedAttentionLSE(op), inputs[0])
		if err != nil {
			return nil, err
		}
		return Apply(FusedAttentionGrad(op), inputs[0], output, lse, g)
	}}
}

// cost: the scores Q·Kᵀ and P·V (2·B·H·S²·hd multiply-adds each, half
// when causal) and about 5 operations per score (scale, maximum,
// exponential, sum, the rescale of the running sum).
func (op FusedAttention) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return sizedCost(op.sizes, in, func(a hostmath.Attention) device.Cost {
		return stream(in, out, 4*products(a)+5*scores(a))
	})
}

// cost: the scores again, and their maxima, exponentials and sums.
func (op FusedAttentionLSE) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return sizedCost(op.sizes, in, func(a hostmath.Attention) device.Cost {
		return stream(in, out, 2*products(a)+4*scores(a))
	})
}

// cost: the recomputed scores Q·Kᵀ (the recomputation), dV += Pᵀ·dO,
// dP = dO·Vᵀ, dQ += dS·K and dK += dSᵀ·Q: five products; and about 5
// operations per score (subtract the log-sum-exp, exponential, dP − D,
// times P, scale).
func (op FusedAttentionGrad) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return sizedCost(op.sizes, in, func(a hostmath.Attention) device.Cost {
		return stream(in, out, 10*products(a)+5*scores(a))
	})
}

// scores is the scores the kernels compute: B·H·S², or B·H·S(S+1)/2 when
// causal, as the fused kernels skip the masked ones.
func scores(a hostmath.Attention) int64 {
	if a.Causal {
		return int64(a.Batch) * int64(a.Heads) * int64(a.Seq) * int64(a.Seq+1) / 2
	}
	return probs(a)
}

// Under 16-bit precision the output is a product's, as AttentionMix's:
// operands rounded to 16 bits (exactly, when qkv is stored in 16 bits),
// running sums in float32, the output stored in 16 bits.
func (FusedAttention) cast() levers.Cast { return levers.CastLower }

// The log-sum-exps and the gradient, which reads them, stay in float32
// (autocast's fp32 class, as AttentionProbs and its gradient): a
// log-sum-exp rounded to 16 bits would scale the recomputed probabilities
// by up to 2^-8 of its magnitude in the exponent.
func (FusedAttentionLSE) cast() levers.Cast  { return levers.CastFP32 }
func (FusedAttentionGrad) cast() levers.Cast { return levers.CastFP32 }
