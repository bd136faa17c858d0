package ops

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/perfmodel"
)

// FusedAttention is the attention computed without the probabilities
// (FlashAttention, Dao et al., 2022), in one pass that gives both what the
// rest of the model reads and what the gradient needs: from qkv [tokens,
// 3d] (or [tokens, d + 2·kd] with grouped-query heads) to a packed value
// [tokens, d + Heads] holding the attention output [tokens, d] (heads
// merged, what AttentionMix(AttentionProbs(qkv), qkv) gives, up to the
// order of its sums) followed by the log-sum-exp of every row of scaled
// scores [tokens/SeqLen, Heads, SeqLen] (the shape sizes the value; the
// elements are the output's, then the log-sum-exps', as
// hostmath.Attention's OutLen and LSELen split them). It replaces the two
// eager ops in a model, through FusedAttentionOutput:
//
//	qkv = Linear(x, in_proj_weight, in_proj_bias)   [tokens, 3d]
//	a   = FusedAttentionOutput(qkv)                  [tokens, d], heads merged
//	y   = Linear(a, out_proj.weight, out_proj.bias)
//
// An op has one output, so the log-sum-exps travel in the packed value,
// and FusedAttentionOut and FusedAttentionLSE copy the two parts out of
// it. Its gradient reads qkv, the output a (the same node as the model's:
// gorgonia merges equal nodes), the log-sum-exps (FusedAttentionLSE, a
// forward step in training only) and the packed gradient, and recomputes
// the probabilities block by block (FusedAttentionGrad). The packed value
// itself is read by forward steps only, so the engine keeps it no longer
// than the layer's forward pass: training saves qkv, the output and the
// log-sum-exps, B·H·S values for the attention where the eager ops save
// the B·H·S² probabilities, and the scores are computed twice per step
// (the forward and the backward's recomputation), not three times.
type FusedAttention struct{ AttentionConfig }

// FusedAttentionOut is the attention output, [tokens, d], copied out of
// FusedAttention's packed value.
type FusedAttentionOut struct{ AttentionConfig }

// FusedAttentionLSE is the log-sum-exps, [tokens/SeqLen, Heads, SeqLen],
// copied out of FusedAttention's packed value: log Σ_t
// exp(q_s·k_t/√(d/Heads)) over each row's unmasked keys, what the gradient
// needs of the softmax (the probabilities are exp(score − lse)). Nothing
// differentiates through it: FusedAttention's gradient makes it.
type FusedAttentionLSE struct{ AttentionConfig }

// FusedAttentionPack is FusedAttentionOut's gradient: the output gradient
// g [tokens, d] packed as FusedAttention's value, followed by zeros for
// the log-sum-exps, which FusedAttentionOut does not read.
type FusedAttentionPack struct{ AttentionConfig }

// FusedAttentionGrad is the gradient of FusedAttention with respect to
// qkv, given qkv, the output out, the log-sum-exps lse and the packed
// gradient gp (the output's, then the log-sum-exps'): the query, key and
// value gradients, a key or value head's summed over the query heads of
// its group.
type FusedAttentionGrad struct{ AttentionConfig }

// FusedAttentionOutput applies FusedAttention to qkv and returns its
// attention output (FusedAttentionOut of the packed value).
func FusedAttentionOutput(c AttentionConfig, qkv *gorgonia.Node) (*gorgonia.Node, error) {
	packed, err := Apply(FusedAttention{c}, qkv)
	if err != nil {
		return nil, err
	}
	return Apply(FusedAttentionOut{c}, packed)
}

func (FusedAttention) signature() []int     { return []int{2, 2} }
func (FusedAttentionOut) signature() []int  { return []int{2, 2} }
func (FusedAttentionLSE) signature() []int  { return []int{2, 3} }
func (FusedAttentionPack) signature() []int { return []int{2, 2} }
func (FusedAttentionGrad) signature() []int { return []int{2, 2, 3, 2, 2} }

func (op FusedAttention) sizes(in []tensor.Shape) (hostmath.Attention, error) {
	return op.read(in, "qkv")
}

func (op FusedAttentionOut) sizes(in []tensor.Shape) (hostmath.Attention, error) {
	return op.read(in, "packed")
}

func (op FusedAttentionLSE) sizes(in []tensor.Shape) (hostmath.Attention, error) {
	return op.read(in, "packed")
}

func (op FusedAttentionPack) sizes(in []tensor.Shape) (hostmath.Attention, error) {
	return op.read(in, "out")
}

// sizes: the log-sum-exps must be [batch, heads, seq] at qkv's sizes.
func (op FusedAttentionGrad) sizes(in []tensor.Shape) (hostmath.Attention, error) {
	a, err := op.read([]tensor.Shape{in[0], in[1], in[3]}, "qkv", "out", "packed")
	if err != nil {
		return a, err
	}
	if !in[2].Eq(lseShape(a)) {
		return a, fmt.Errorf("lse has shape %v, want %v", in[2], lseShape(a))
	}
	return a, nil
}

func lseShape(a hostmath.Attention) tensor.Shape { return tensor.Shape{a.Batch, a.Heads, a.Seq} }

// packedShape is the shape of FusedAttention's value: a row per token of
// d + Heads elements, as many as the output and the log-sum-exps.
func packedShape(a hostmath.Attention) tensor.Shape {
	return tensor.Shape{a.Batch * a.Seq, a.DModel() + a.Heads}
}

func (op FusedAttention) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.sizes, in, packedShape)
}

func (op FusedAttentionOut) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.sizes, in, outShape)
}

func (op FusedAttentionLSE) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.sizes, in, lseShape)
}

func (op FusedAttentionPack) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.sizes, in, packedShape)
}

func (op FusedAttentionGrad) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.sizes, in, qkvShape)
}

func (op FusedAttention) kernel() kernel {
	return call1(op.sizes, fusedPacked[float32], fusedPacked[float64],
		func(k device.Kernels, packed, qkv device.Buffer, a hostmath.Attention) {
			k.FusedAttention(packed, qkv, a)
		})
}

func (op FusedAttentionOut) kernel() kernel {
	return call1(op.sizes, unpackPart[float32](false), unpackPart[float64](false),
		func(k device.Kernels, out, packed device.Buffer, a hostmath.Attention) {
			k.FusedAttentionUnpack(out, packed, false, a)
		})
}

func (op FusedAttentionLSE) kernel() kernel {
	return call1(op.sizes, unpackPart[float32](true), unpackPart[float64](true),
		func(k device.Kernels, lse, packed device.Buffer, a hostmath.Attention) {
			k.FusedAttentionUnpack(lse, packed, true, a)
		})
}

func (op FusedAttentionPack) kernel() kernel {
	return call1(op.sizes, packGrad[float32], packGrad[float64],
		func(k device.Kernels, packed, g device.Buffer, a hostmath.Attention) {
			k.FusedAttentionPack(packed, g, a)
		})
}

func (op FusedAttentionGrad) kernel() kernel {
	return sizedKernel(op.sizes, fusedGrad[float32], fusedGrad[float64], func(d launchArgs, a hostmath.Attention) {
		d.k.FusedAttentionGrad(d.out, d.args[0], d.args[1], d.args[2], d.args[3], a)
	})
}

// fusedPacked is FusedAttention's host math: the output and the
// log-sum-exps in one pass, into the two parts of packed.
func fusedPacked[T hostmath.Float](packed, qkv []T, a hostmath.Attention) {
	hostmath.FusedAttention(packed[:a.OutLen()], packed[a.OutLen():], qkv, a)
}

// unpackPart is the host math of FusedAttentionOut (lse false) and
// FusedAttentionLSE (lse true).
func unpackPart[T hostmath.Float](lse bool) func(dst, packed []T, a hostmath.Attention) {
	return func(dst, packed []T, a hostmath.Attention) {
		if lse {
			copy(dst, packed[a.OutLen():])
		} else {
			copy(dst, packed[:a.OutLen()])
		}
	}
}

func packGrad[T hostmath.Float](packed, g []T, a hostmath.Attention) {
	copy(packed, g[:a.OutLen()])
	clear(packed[a.OutLen():])
}

func fusedGrad[T hostmath.Float](h hostArgs[T], a hostmath.Attention) {
	gp := h.in[3]
	hostmath.FusedAttentionGrad(h.out, h.in[0], h.in[1], h.in[2], gp[:a.OutLen()], gp[a.OutLen():], a)
}

// grads: qkv's gradient from qkv, the output, the log-sum-exps and the
// packed gradient. The output is FusedAttentionOut of the packed value,
// the node the model reads (gorgonia returns the node it has for the
// same op on the same input), and the log-sum-exps FusedAttentionLSE of
// it: both depend on forward values only, so the engine computes them in
// the forward pass and keeps them for the backward pass.
func (op FusedAttention) grads() []grad {
	return []grad{func(inputs gorgonia.Nodes, packed, gp *gorgonia.Node) (*gorgonia.Node, error) {
		out, err := Apply(FusedAttentionOut(op), packed)
		if err != nil {
			return nil, err
		}
		lse, err := Apply(FusedAttentionLSE(op), packed)
		if err != nil {
			return nil, err
		}
		return Apply(FusedAttentionGrad(op), inputs[0], out, lse, gp)
	}}
}

func (op FusedAttentionOut) grads() []grad { return []grad{gradOf(FusedAttentionPack(op), gArg)} }

// cost: the scores Q·Kᵀ and P·V (2·B·H·S²·hd multiply-adds each, half
// when causal) and about 5 operations per score (scale, maximum,
// exponential, sum, the rescale of the running sum); the log-sum-exps
// come with the running maxima and sums.
func (op FusedAttention) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return sizedCost(op.sizes, in, func(a hostmath.Attention) device.Cost {
		return stream(in, out, 4*products(a)+5*scores(a))
	})
}

// cost: the output's part of the packed value read and written.
func (op FusedAttentionOut) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return copyCost(out)
}

// cost: the log-sum-exps' part of the packed value read and written.
func (op FusedAttentionLSE) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return copyCost(out)
}

// cost: g read, the packed value written.
func (op FusedAttentionPack) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return stream(in, out, 0)
}

// copyCost is the cost of copying a value of shape s.
func copyCost(s tensor.Shape) device.Cost {
	return device.Cost{ReadBytes: bytesOf(s), WriteBytes: bytesOf(s)}
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

// Under 16-bit precision the attention is a product's, as AttentionMix's:
// operands rounded to 16 bits (exactly, when qkv is stored in 16 bits),
// running sums in float32; but the packed value holds the log-sum-exps,
// which 16 bits would spoil (a log-sum-exp rounded to 16 bits scales the
// recomputed probabilities by up to 2^-8 of its magnitude in the
// exponent), so it is stored in float32 (levers.CastLowerIn), and
// FusedAttentionOut stores the output in 16 bits, as a product's result.
func (FusedAttention) cast() levers.Cast    { return levers.CastLowerIn }
func (FusedAttentionOut) cast() levers.Cast { return levers.CastLower }

// The log-sum-exps and the gradients, which read them, stay in float32
// (autocast's fp32 class, as AttentionProbs and its gradient).
func (FusedAttentionLSE) cast() levers.Cast  { return levers.CastFP32 }
func (FusedAttentionPack) cast() levers.Cast { return levers.CastFP32 }
func (FusedAttentionGrad) cast() levers.Cast { return levers.CastFP32 }

// The fused attention's own kernels in the performance model
// (perfmodel.ClassFusedAttention).
func (FusedAttention) class() string     { return perfmodel.ClassFusedAttention }
func (FusedAttentionGrad) class() string { return perfmodel.ClassFusedAttention }

// Element-wise in the performance model: memory-bound or nearly
// (perfmodel.ClassElementwise).
func (FusedAttentionOut) class() string  { return perfmodel.ClassElementwise }
func (FusedAttentionLSE) class() string  { return perfmodel.ClassElementwise }
func (FusedAttentionPack) class() string { return perfmodel.ClassElementwise }
