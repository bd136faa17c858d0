package ops

import (
	"fmt"
	"slices"

	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/perfmodel"
)

// AttentionConfig is what the attention ops share: multi-head scaled
// dot-product self-attention over sequences of SeqLen tokens whose queries,
// keys and values are packed as [tokens, 3d] rows the way PyTorch's
// MultiheadAttention in_proj produces them (see hostmath.Attention), or,
// with KVHeads < Heads (grouped-query attention, as in Llama 3, Mistral
// and Qwen2), as [tokens, d + 2·kd] rows for kd = KVHeads·d/Heads: the
// queries, then the keys and the values of the KVHeads heads that groups
// of Heads/KVHeads query heads share.
//
// Multi-head self-attention is built from these ops and Linear:
//
//	qkv = Linear(x, in_proj_weight, in_proj_bias)   [tokens, 3d]
//	p   = AttentionProbs(qkv)                        [batch, heads, seq, seq]
//	a   = AttentionMix(p, qkv)                       [tokens, d], heads merged
//	y   = Linear(a, out_proj.weight, out_proj.bias)
//
// The heads are read and written in place in the packed layouts, so no
// split-heads, merge-heads or repeat-kv copy is needed.
type AttentionConfig struct {
	Heads   int  // attention (query) heads; d is a multiple of Heads
	KVHeads int  // key and value heads, a divisor of Heads; 0 means Heads
	SeqLen  int  // tokens per sequence; the rows are whole sequences
	Causal  bool // position s attends to positions t ≤ s only
}

// qkvHeads is the width of a packed qkv row in head widths: Heads plus
// twice the key and value heads.
func (c AttentionConfig) qkvHeads() int {
	if c.KVHeads == 0 {
		return 3 * c.Heads
	}
	return c.Heads + 2*c.KVHeads
}

// attention returns the kernels' description for rows tokens whose
// queries (and attention output) are d wide.
func (c AttentionConfig) attention(rows, d int) (hostmath.Attention, error) {
	if c.Heads <= 0 || c.SeqLen <= 0 || d <= 0 || d%c.Heads != 0 || rows%c.SeqLen != 0 || rows == 0 {
		return hostmath.Attention{}, fmt.Errorf("%d tokens of width %d do not make sequences for %+v", rows, d, c)
	}
	a := hostmath.Attention{Batch: rows / c.SeqLen, Seq: c.SeqLen, Heads: c.Heads, HeadDim: d / c.Heads, KVHeads: c.KVHeads, Causal: c.Causal}
	if err := a.Validate(); err != nil {
		return hostmath.Attention{}, fmt.Errorf("attention config %+v: %w", c, err)
	}
	return a, nil
}

// read returns the kernels' description for the inputs of an attention op
// whose shapes are in and whose kinds, "qkv", "out", "packed" (the fused
// attention's value) or "probs", are names: the input named "qkv", or else
// "out", or else "packed", fixes the sizes, and every input must have the
// shape of its kind at those sizes.
func (c AttentionConfig) read(in []tensor.Shape, names ...string) (hostmath.Attention, error) {
	var a hostmath.Attention
	var err error
	if i := slices.Index(names, "qkv"); i >= 0 {
		if s, n := in[i], c.qkvHeads(); len(s) != 2 || n <= 0 || s[1]%n != 0 {
			return a, fmt.Errorf("qkv shape %v is not [tokens, (heads + 2·kv heads)·head dim] for %+v", s, c)
		}
		a, err = c.attention(in[i][0], in[i][1]/c.qkvHeads()*c.Heads)
	} else if i := slices.Index(names, "out"); i >= 0 {
		if s := in[i]; len(s) != 2 {
			return a, fmt.Errorf("attention output shape %v is not [tokens, d]", s)
		}
		a, err = c.attention(in[i][0], in[i][1])
	} else if s := in[slices.Index(names, "packed")]; len(s) != 2 || s[1] <= c.Heads {
		return a, fmt.Errorf("packed fused attention shape %v is not [tokens, d + heads] for %+v", s, c)
	} else {
		a, err = c.attention(s[0], s[1]-c.Heads)
	}
	if err != nil {
		return a, err
	}
	for i, n := range names {
		if !in[i].Eq(attentionShape(n, a)) {
			return a, fmt.Errorf("%s has shape %v, want %v", n, in[i], attentionShape(n, a))
		}
	}
	return a, nil
}

// attentionShape is the shape of the packed queries, keys and values
// ("qkv"), of the attention output ("out"), of the fused attention's
// packed value ("packed") or of the probabilities ("probs") for the
// sizes a.
func attentionShape(name string, a hostmath.Attention) tensor.Shape {
	switch name {
	case "qkv":
		return qkvShape(a)
	case "out":
		return outShape(a)
	case "packed":
		return packedShape(a)
	}
	return probsShape(a)
}

func probsShape(a hostmath.Attention) tensor.Shape {
	return tensor.Shape{a.Batch, a.Heads, a.Seq, a.Seq}
}
func qkvShape(a hostmath.Attention) tensor.Shape {
	return tensor.Shape{a.Batch * a.Seq, a.QKVWidth()}
}
func outShape(a hostmath.Attention) tensor.Shape { return tensor.Shape{a.Batch * a.Seq, a.DModel()} }

// AttentionProbs is the attention probabilities softmax(QKᵀ/√(d/Heads))
// of every sequence and (query) head, K its group's keys, causally masked
// when Causal: from qkv [tokens, 3d] (or [tokens, d + 2·kd]) to
// [tokens/SeqLen, Heads, SeqLen, SeqLen].
type AttentionProbs struct{ AttentionConfig }

// AttentionProbsGrad is the gradient of AttentionProbs with respect to qkv,
// given qkv, the probabilities p and their gradient dp: the softmax's
// backward pass, then the query and key gradients, a key head's summed
// over the query heads of its group; the value columns are 0.
type AttentionProbsGrad struct{ AttentionConfig }

// AttentionMix is the attention output: for every sequence and head the
// probabilities times the values, P·V (with P's entries above the diagonal
// taken as 0 when Causal), the heads merged into [tokens, d].
type AttentionMix struct{ AttentionConfig }

// AttentionMixProbsGrad is the gradient of AttentionMix with respect to the
// probabilities, given the output gradient g [tokens, d] and qkv: G·Vᵀ per
// sequence and head, 0 above the diagonal when Causal.
type AttentionMixProbsGrad struct{ AttentionConfig }

// AttentionMixValueGrad is the gradient of AttentionMix with respect to
// qkv, given the probabilities p and the output gradient g: Pᵀ·G per
// sequence and head in the value columns, a value head's summed over the
// query heads of its group, 0 in the query and key columns.
type AttentionMixValueGrad struct{ AttentionConfig }

// The attention ops differ only in the kinds of their inputs and output,
// each a qkv, an out or a probs tensor (attentionShape), and in the kernels
// they call, so their methods are written as a table: method by method,
// the ops in the same order.

func (AttentionProbs) signature() []int        { return []int{2, 4} }
func (AttentionProbsGrad) signature() []int    { return []int{2, 4, 4, 2} }
func (AttentionMix) signature() []int          { return []int{4, 2, 2} }
func (AttentionMixProbsGrad) signature() []int { return []int{2, 2, 4} }
func (AttentionMixValueGrad) signature() []int { return []int{4, 2, 2} }

// sizes read the sizes off the inputs, by kind.
func (op AttentionProbs) sizes(in []tensor.Shape) (hostmath.Attention, error) {
	return op.read(in, "qkv")
}

func (op AttentionProbsGrad) sizes(in []tensor.Shape) (hostmath.Attention, error) {
	return op.read(in, "qkv", "probs", "probs")
}

func (op AttentionMix) sizes(in []tensor.Shape) (hostmath.Attention, error) {
	return op.read(in, "probs", "qkv")
}

func (op AttentionMixProbsGrad) sizes(in []tensor.Shape) (hostmath.Attention, error) {
	return op.read(in, "out", "qkv")
}

func (op AttentionMixValueGrad) sizes(in []tensor.Shape) (hostmath.Attention, error) {
	return op.read(in, "probs", "out")
}

func (op AttentionProbs) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.sizes, in, probsShape)
}

func (op AttentionProbsGrad) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.sizes, in, qkvShape)
}

func (op AttentionMix) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.sizes, in, outShape)
}

func (op AttentionMixProbsGrad) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.sizes, in, probsShape)
}

func (op AttentionMixValueGrad) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.sizes, in, qkvShape)
}

// kernel: the same kernel of package hostmath on the host (given for
// float32 and for float64) and of device.Kernels on a device.
func (op AttentionProbs) kernel() kernel {
	return call1(op.sizes, hostmath.AttentionProbs, hostmath.AttentionProbs, device.Kernels.AttentionProbs)
}

func (op AttentionProbsGrad) kernel() kernel {
	return call3(op.sizes, hostmath.AttentionProbsGrad, hostmath.AttentionProbsGrad, device.Kernels.AttentionProbsGrad)
}

func (op AttentionMix) kernel() kernel {
	return call2(op.sizes, hostmath.AttentionMix, hostmath.AttentionMix, device.Kernels.AttentionMix)
}

func (op AttentionMixProbsGrad) kernel() kernel {
	return call2(op.sizes, hostmath.AttentionMixProbsGrad, hostmath.AttentionMixProbsGrad, device.Kernels.AttentionMixProbsGrad)
}

func (op AttentionMixValueGrad) kernel() kernel {
	return call2(op.sizes, hostmath.AttentionMixValueGrad, hostmath.AttentionMixValueGrad, device.Kernels.AttentionMixValueGrad)
}

// grads: AttentionProbs' gradient of qkv comes from the probabilities
// themselves; AttentionMix gives p's gradient and qkv's, whose value
// columns only are non-zero, which gorgonia adds to the query and key
// gradients that AttentionProbs gives.
func (op AttentionProbs) grads() []grad { return []grad{gradOf(AttentionProbsGrad(op), 0, yArg, gArg)} }

func (op AttentionMix) grads() []grad {
	return []grad{gradOf(AttentionMixProbsGrad(op), gArg, 1), gradOf(AttentionMixValueGrad(op), 0, gArg)}
}

// products is the multiply-adds of one S×S by S×hd product per sequence
// and query head that the model needs (grouped-query attention shares the
// keys and values, not the products): B·H·S²·hd, or, when Causal, those of the
// lower triangle with its diagonal only, B·H·S(S+1)/2·hd, as the host
// kernels skip the masked half (they compute it in tiles of 6 rows by 64
// columns, a few per cent more, which is not counted).
func products(a hostmath.Attention) int64 {
	pairs := int64(a.Batch) * int64(a.Heads) * int64(a.HeadDim)
	if a.Causal {
		return pairs * int64(a.Seq) * int64(a.Seq+1) / 2
	}
	return pairs * int64(a.Seq) * int64(a.Seq)
}

// probs is the elements of the probabilities, B·H·S².
func probs(a hostmath.Attention) int64 {
	return int64(a.Batch) * int64(a.Heads) * int64(a.Seq) * int64(a.Seq)
}

// cost: the scores Q·Kᵀ (2·B·H·S²·hd) and a softmax of about 5
// operations per score (scale, max, exp, sum, divide).
func (op AttentionProbs) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return sizedCost(op.sizes, in, func(a hostmath.Attention) device.Cost {
		return stream(in, out, 2*products(a)+5*probs(a))
	})
}

// cost: the softmax's backward pass (about 4 operations per probability),
// then dQ = dS·K and dK = dSᵀ·Q.
func (op AttentionProbsGrad) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return sizedCost(op.sizes, in, func(a hostmath.Attention) device.Cost {
		return stream(in, out, 4*products(a)+4*probs(a))
	})
}

// cost: P·V.
func (op AttentionMix) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return sizedCost(op.sizes, in, func(a hostmath.Attention) device.Cost { return stream(in, out, 2*products(a)) })
}

// cost: G·Vᵀ.
func (op AttentionMixProbsGrad) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return sizedCost(op.sizes, in, func(a hostmath.Attention) device.Cost { return stream(in, out, 2*products(a)) })
}

// cost: Pᵀ·G into the value columns; the query and key columns are
// written as zeros.
func (op AttentionMixValueGrad) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return sizedCost(op.sizes, in, func(a hostmath.Attention) device.Cost { return stream(in, out, 2*products(a)) })
}

// The products, under 16-bit precision: operands rounded to 16 bits, sums
// in float32, results stored in 16 bits (autocast's lower-precision list).
func (AttentionMix) cast() levers.Cast          { return levers.CastLower }
func (AttentionMixProbsGrad) cast() levers.Cast { return levers.CastLower }
func (AttentionMixValueGrad) cast() levers.Cast { return levers.CastLower }

// The reductions, under 16-bit precision: read and stored in float32
// (autocast's fp32 list: softmax, layer norm, the losses, sums).
func (AttentionProbs) cast() levers.Cast     { return levers.CastFP32 }
func (AttentionProbsGrad) cast() levers.Cast { return levers.CastFP32 }

// The attention kernels in the performance model: a product and a
// softmax per head, hand-written (perfmodel.ClassAttention).
func (AttentionProbs) class() string        { return perfmodel.ClassAttention }
func (AttentionProbsGrad) class() string    { return perfmodel.ClassAttention }
func (AttentionMix) class() string          { return perfmodel.ClassAttention }
func (AttentionMixProbsGrad) class() string { return perfmodel.ClassAttention }
func (AttentionMixValueGrad) class() string { return perfmodel.ClassAttention }
