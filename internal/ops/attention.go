package ops

import (
	"fmt"
	"hash"
	"slices"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/kernels"
)

// AttentionConfig is what the attention ops share: multi-head scaled
// dot-product self-attention over sequences of SeqLen tokens whose queries,
// keys and values are packed as [tokens, 3d] rows the way PyTorch's
// MultiheadAttention in_proj produces them (see kernels.Attention).
//
// Multi-head self-attention is built from these ops and Linear:
//
//	qkv = Linear(x, in_proj_weight, in_proj_bias)   [tokens, 3d]
//	p   = AttentionProbs(qkv)                        [batch, heads, seq, seq]
//	a   = AttentionMix(p, qkv)                       [tokens, d], heads merged
//	y   = Linear(a, out_proj.weight, out_proj.bias)
//
// The heads are read and written in place in the packed layouts, so no
// split-heads or merge-heads copy is needed.
type AttentionConfig struct {
	Heads  int  // attention heads; d is a multiple of Heads
	SeqLen int  // tokens per sequence; the rows are whole sequences
	Causal bool // position s attends to positions t ≤ s only
}

// String describes the configuration.
func (c AttentionConfig) String() string {
	return fmt.Sprintf("heads %d, seq %d, causal %v", c.Heads, c.SeqLen, c.Causal)
}

// attention returns the kernels' description for rows tokens of width d.
func (c AttentionConfig) attention(rows, d int) (kernels.Attention, error) {
	if c.Heads <= 0 || c.SeqLen <= 0 || d <= 0 || d%c.Heads != 0 || rows%c.SeqLen != 0 || rows == 0 {
		return kernels.Attention{}, fmt.Errorf("%d tokens of width %d do not make sequences for %v", rows, d, c)
	}
	return kernels.Attention{Batch: rows / c.SeqLen, Seq: c.SeqLen, Heads: c.Heads, HeadDim: d / c.Heads, Causal: c.Causal}, nil
}

// fromQKV returns the kernels' description for a packed qkv of shape s.
func (c AttentionConfig) fromQKV(s tensor.Shape) (kernels.Attention, error) {
	if len(s) != 2 || s[1]%3 != 0 {
		return kernels.Attention{}, fmt.Errorf("qkv shape %v is not [tokens, 3d]", s)
	}
	return c.attention(s[0], s[1]/3)
}

// fromOutput returns the kernels' description for an attention output (or
// its gradient) of shape s.
func (c AttentionConfig) fromOutput(s tensor.Shape) (kernels.Attention, error) {
	if len(s) != 2 {
		return kernels.Attention{}, fmt.Errorf("attention output shape %v is not [tokens, d]", s)
	}
	return c.attention(s[0], s[1])
}

// probsShape is the shape of the attention probabilities.
func probsShape(a kernels.Attention) tensor.Shape {
	return tensor.Shape{a.Batch, a.Heads, a.Seq, a.Seq}
}

// qkvShape is the shape of the packed queries, keys and values.
func qkvShape(a kernels.Attention) tensor.Shape {
	return tensor.Shape{a.Batch * a.Seq, 3 * a.DModel()}
}

// inferAttention checks the shapes of an attention op's inputs: each named
// input must have the shape that the configuration and the input named
// "qkv" or "out" (which fixes the sizes) imply. It returns the sizes.
func inferAttention(op fmt.Stringer, c AttentionConfig, inputs []gorgonia.DimSizer, names ...string) (kernels.Attention, error) {
	shapes, err := shapesOf(op, inputs, len(names))
	if err != nil {
		return kernels.Attention{}, err
	}
	var a kernels.Attention
	if i := slices.Index(names, "qkv"); i >= 0 {
		a, err = c.fromQKV(shapes[i])
	} else {
		a, err = c.fromOutput(shapes[slices.Index(names, "out")])
	}
	if err != nil {
		return a, fmt.Errorf("%v: %w", op, err)
	}
	want := map[string]tensor.Shape{"qkv": qkvShape(a), "out": {a.Batch * a.Seq, a.DModel()}, "probs": probsShape(a)}
	for i, n := range names {
		if !shapes[i].Eq(want[n]) {
			return a, fmt.Errorf("%v: %s has shape %v, want %v", op, n, shapes[i], want[n])
		}
	}
	return a, nil
}

// attentionDo runs a kernel on the values' float slices into a new tensor of
// the given shape.
func attentionDo[T kernels.Float](shape tensor.Shape, v []gorgonia.Value, kernel func(out []T, args [][]T)) gorgonia.Value {
	out := newTensor[T](shape...)
	args := make([][]T, len(v))
	for i := range v {
		args[i] = floats[T](v[i])
	}
	kernel(floats[T](out), args)
	return out
}

// AttentionProbs is the attention probabilities softmax(QKᵀ/√(d/Heads))
// of every sequence and head, causally masked when Causal: from qkv
// [tokens, 3d] to [tokens/SeqLen, Heads, SeqLen, SeqLen].
type AttentionProbs struct {
	base
	AttentionConfig
}

// Arity is 1: qkv.
func (AttentionProbs) Arity() int { return 1 }

// Type is matrix → 4-tensor.
func (AttentionProbs) Type() hm.Type { return hm.NewFnType(tensorType(2), tensorType(4)) }

// InferShape returns [batch, heads, seq, seq].
func (op AttentionProbs) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	a, err := inferAttention(op, op.AttentionConfig, inputs, "qkv")
	if err != nil {
		return nil, err
	}
	return probsShape(a), nil
}

// Do computes the probabilities.
func (op AttentionProbs) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 1); err != nil {
		return nil, err
	}
	a, err := op.fromQKV(values[0].Shape())
	if err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	return byDtype(op, values,
		func(v []gorgonia.Value) (gorgonia.Value, error) {
			return attentionDo(probsShape(a), v, func(out []float32, x [][]float32) { kernels.AttentionProbs(out, x[0], a) }), nil
		},
		func(v []gorgonia.Value) (gorgonia.Value, error) {
			return attentionDo(probsShape(a), v, func(out []float64, x [][]float64) { kernels.AttentionProbs(out, x[0], a) }), nil
		})
}

// Launch computes the probabilities.
func (op AttentionProbs) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error {
	a, err := op.fromQKV(shapes[0])
	if err != nil {
		return err
	}
	k.AttentionProbs(out, args[0], a)
	return nil
}

// String names the op with its configuration.
func (op AttentionProbs) String() string {
	return fmt.Sprintf("AttentionProbs(%v)", op.AttentionConfig)
}

// WriteHash writes the op's identity to h.
func (op AttentionProbs) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op AttentionProbs) Hashcode() uint32 { return hashcode(op) }

// DiffWRT reports that the op is differentiable in qkv.
func (AttentionProbs) DiffWRT(int) []bool { return []bool{true} }

// SymDiff returns the gradient node for qkv, computed from the
// probabilities themselves.
func (op AttentionProbs) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	dqkv, err := gorgonia.ApplyOp(AttentionProbsGrad(op), inputs[0], output, grad)
	if err != nil {
		return nil, fmt.Errorf("%v gradient: %w", op, err)
	}
	return gorgonia.Nodes{dqkv}, nil
}

// AttentionProbsGrad is the gradient of AttentionProbs with respect to qkv,
// given qkv, the probabilities p and their gradient dp: the softmax's
// backward pass, then the query and key gradients; the value columns are 0.
type AttentionProbsGrad struct {
	base
	AttentionConfig
}

// Arity is 3: qkv, p, dp.
func (AttentionProbsGrad) Arity() int { return 3 }

// Type is (matrix, 4-tensor, 4-tensor) → matrix.
func (AttentionProbsGrad) Type() hm.Type {
	return hm.NewFnType(tensorType(2), tensorType(4), tensorType(4), tensorType(2))
}

// InferShape returns the shape of qkv.
func (op AttentionProbsGrad) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	a, err := inferAttention(op, op.AttentionConfig, inputs, "qkv", "probs", "probs")
	if err != nil {
		return nil, err
	}
	return qkvShape(a), nil
}

// Do computes the gradient.
func (op AttentionProbsGrad) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 3); err != nil {
		return nil, err
	}
	a, err := op.fromQKV(values[0].Shape())
	if err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	return byDtype(op, values,
		func(v []gorgonia.Value) (gorgonia.Value, error) {
			return attentionDo(qkvShape(a), v, func(out []float32, x [][]float32) { kernels.AttentionProbsGrad(out, x[0], x[1], x[2], a) }), nil
		},
		func(v []gorgonia.Value) (gorgonia.Value, error) {
			return attentionDo(qkvShape(a), v, func(out []float64, x [][]float64) { kernels.AttentionProbsGrad(out, x[0], x[1], x[2], a) }), nil
		})
}

// Launch computes the gradient.
func (op AttentionProbsGrad) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error {
	a, err := op.fromQKV(shapes[0])
	if err != nil {
		return err
	}
	k.AttentionProbsGrad(out, args[0], args[1], args[2], a)
	return nil
}

// String names the op with its configuration.
func (op AttentionProbsGrad) String() string {
	return fmt.Sprintf("AttentionProbsGrad(%v)", op.AttentionConfig)
}

// WriteHash writes the op's identity to h.
func (op AttentionProbsGrad) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op AttentionProbsGrad) Hashcode() uint32 { return hashcode(op) }

// AttentionMix is the attention output: for every sequence and head the
// probabilities times the values, P·V (with P's entries above the diagonal
// taken as 0 when Causal), the heads merged into [tokens, d].
type AttentionMix struct {
	base
	AttentionConfig
}

// Arity is 2: p, qkv.
func (AttentionMix) Arity() int { return 2 }

// Type is (4-tensor, matrix) → matrix.
func (AttentionMix) Type() hm.Type {
	return hm.NewFnType(tensorType(4), tensorType(2), tensorType(2))
}

// InferShape returns [tokens, d].
func (op AttentionMix) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	a, err := inferAttention(op, op.AttentionConfig, inputs, "probs", "qkv")
	if err != nil {
		return nil, err
	}
	return tensor.Shape{a.Batch * a.Seq, a.DModel()}, nil
}

// Do computes the output.
func (op AttentionMix) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 2); err != nil {
		return nil, err
	}
	a, err := op.fromQKV(values[1].Shape())
	if err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	shape := tensor.Shape{a.Batch * a.Seq, a.DModel()}
	return byDtype(op, values,
		func(v []gorgonia.Value) (gorgonia.Value, error) {
			return attentionDo(shape, v, func(out []float32, x [][]float32) { kernels.AttentionMix(out, x[0], x[1], a) }), nil
		},
		func(v []gorgonia.Value) (gorgonia.Value, error) {
			return attentionDo(shape, v, func(out []float64, x [][]float64) { kernels.AttentionMix(out, x[0], x[1], a) }), nil
		})
}

// Launch computes the output.
func (op AttentionMix) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error {
	a, err := op.fromQKV(shapes[1])
	if err != nil {
		return err
	}
	k.AttentionMix(out, args[0], args[1], a)
	return nil
}

// String names the op with its configuration.
func (op AttentionMix) String() string { return fmt.Sprintf("AttentionMix(%v)", op.AttentionConfig) }

// WriteHash writes the op's identity to h.
func (op AttentionMix) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op AttentionMix) Hashcode() uint32 { return hashcode(op) }

// DiffWRT reports that the op is differentiable in p and qkv.
func (AttentionMix) DiffWRT(int) []bool { return []bool{true, true} }

// SymDiff returns the gradient nodes for p and for qkv (whose value columns
// only are non-zero; gorgonia adds them to the query and key gradients that
// AttentionProbs gives).
func (op AttentionMix) SymDiff(inputs gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	p, qkv := inputs[0], inputs[1]
	dp, err := gorgonia.ApplyOp(AttentionMixProbsGrad(op), grad, qkv)
	if err != nil {
		return nil, fmt.Errorf("%v probabilities gradient: %w", op, err)
	}
	dqkv, err := gorgonia.ApplyOp(AttentionMixValueGrad(op), p, grad)
	if err != nil {
		return nil, fmt.Errorf("%v value gradient: %w", op, err)
	}
	return gorgonia.Nodes{dp, dqkv}, nil
}

// AttentionMixProbsGrad is the gradient of AttentionMix with respect to the
// probabilities, given the output gradient g [tokens, d] and qkv: G·Vᵀ per
// sequence and head, 0 above the diagonal when Causal.
type AttentionMixProbsGrad struct {
	base
	AttentionConfig
}

// Arity is 2: g, qkv.
func (AttentionMixProbsGrad) Arity() int { return 2 }

// Type is (matrix, matrix) → 4-tensor.
func (AttentionMixProbsGrad) Type() hm.Type {
	return hm.NewFnType(tensorType(2), tensorType(2), tensorType(4))
}

// InferShape returns [batch, heads, seq, seq].
func (op AttentionMixProbsGrad) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	a, err := inferAttention(op, op.AttentionConfig, inputs, "out", "qkv")
	if err != nil {
		return nil, err
	}
	return probsShape(a), nil
}

// Do computes the gradient.
func (op AttentionMixProbsGrad) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 2); err != nil {
		return nil, err
	}
	a, err := op.fromQKV(values[1].Shape())
	if err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	return byDtype(op, values,
		func(v []gorgonia.Value) (gorgonia.Value, error) {
			return attentionDo(probsShape(a), v, func(out []float32, x [][]float32) { kernels.AttentionMixProbsGrad(out, x[0], x[1], a) }), nil
		},
		func(v []gorgonia.Value) (gorgonia.Value, error) {
			return attentionDo(probsShape(a), v, func(out []float64, x [][]float64) { kernels.AttentionMixProbsGrad(out, x[0], x[1], a) }), nil
		})
}

// Launch computes the gradient.
func (op AttentionMixProbsGrad) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error {
	a, err := op.fromQKV(shapes[1])
	if err != nil {
		return err
	}
	k.AttentionMixProbsGrad(out, args[0], args[1], a)
	return nil
}

// String names the op with its configuration.
func (op AttentionMixProbsGrad) String() string {
	return fmt.Sprintf("AttentionMixProbsGrad(%v)", op.AttentionConfig)
}

// WriteHash writes the op's identity to h.
func (op AttentionMixProbsGrad) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op AttentionMixProbsGrad) Hashcode() uint32 { return hashcode(op) }

// AttentionMixValueGrad is the gradient of AttentionMix with respect to
// qkv, given the probabilities p and the output gradient g: Pᵀ·G per
// sequence and head in the value columns, 0 in the query and key columns.
type AttentionMixValueGrad struct {
	base
	AttentionConfig
}

// Arity is 2: p, g.
func (AttentionMixValueGrad) Arity() int { return 2 }

// Type is (4-tensor, matrix) → matrix.
func (AttentionMixValueGrad) Type() hm.Type {
	return hm.NewFnType(tensorType(4), tensorType(2), tensorType(2))
}

// InferShape returns [tokens, 3d].
func (op AttentionMixValueGrad) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	a, err := inferAttention(op, op.AttentionConfig, inputs, "probs", "out")
	if err != nil {
		return nil, err
	}
	return qkvShape(a), nil
}

// Do computes the gradient.
func (op AttentionMixValueGrad) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 2); err != nil {
		return nil, err
	}
	a, err := op.fromOutput(values[1].Shape())
	if err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	return byDtype(op, values,
		func(v []gorgonia.Value) (gorgonia.Value, error) {
			return attentionDo(qkvShape(a), v, func(out []float32, x [][]float32) { kernels.AttentionMixValueGrad(out, x[0], x[1], a) }), nil
		},
		func(v []gorgonia.Value) (gorgonia.Value, error) {
			return attentionDo(qkvShape(a), v, func(out []float64, x [][]float64) { kernels.AttentionMixValueGrad(out, x[0], x[1], a) }), nil
		})
}

// Launch computes the gradient.
func (op AttentionMixValueGrad) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error {
	a, err := op.fromOutput(shapes[1])
	if err != nil {
		return err
	}
	k.AttentionMixValueGrad(out, args[0], args[1], a)
	return nil
}

// String names the op with its configuration.
func (op AttentionMixValueGrad) String() string {
	return fmt.Sprintf("AttentionMixValueGrad(%v)", op.AttentionConfig)
}

// WriteHash writes the op's identity to h.
func (op AttentionMixValueGrad) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op AttentionMixValueGrad) Hashcode() uint32 { return hashcode(op) }
