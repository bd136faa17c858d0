package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/kernels"
)

// Embedding is PyTorch's nn.Embedding followed by the addition of fixed
// positional encodings: given token ids [batch, seq] (exact integers stored
// in the tensors' float type), the weight [vocab, d] and the positions
// [seq, d], row b·seq + s of the output [batch·seq, d] is
// weight[ids[b, s]] + positions[s]. It is differentiable in the weight
// only: the ids are data and the positions fixed.
type Embedding struct{ base }

// Arity is 3: ids, weight, positions.
func (Embedding) Arity() int { return 3 }

// Type is (matrix, matrix, matrix) → matrix.
func (Embedding) Type() hm.Type {
	return hm.NewFnType(tensorType(2), tensorType(2), tensorType(2), tensorType(2))
}

// InferShape checks that the ids, weight and positions fit together and
// returns [batch·seq, d].
func (op Embedding) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	shapes, err := shapesOf(op, inputs, 3)
	if err != nil {
		return nil, err
	}
	ids, w, pos := shapes[0], shapes[1], shapes[2]
	if len(ids) != 2 || len(w) != 2 || len(pos) != 2 || pos[0] != ids[1] || pos[1] != w[1] {
		return nil, fmt.Errorf("%v: shapes ids %v, weight %v, positions %v do not fit", op, ids, w, pos)
	}
	return tensor.Shape{ids[0] * ids[1], w[1]}, nil
}

// Do looks the ids up; ids that are not integers in [0, vocab) are an
// error.
func (op Embedding) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 3); err != nil {
		return nil, err
	}
	return byDtype(op, values, embeddingDo[float32], embeddingDo[float64])
}

func embeddingDo[T kernels.Float](v []gorgonia.Value) (gorgonia.Value, error) {
	ids := v[0].Shape()
	y := newTensor[T](ids[0]*ids[1], v[1].Shape()[1])
	if err := kernels.Embedding(floats[T](y), floats[T](v[0]), floats[T](v[1]), floats[T](v[2])); err != nil {
		return nil, err
	}
	return y, nil
}

// Launch looks the ids up.
func (Embedding) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, _ []tensor.Shape) error {
	return k.Embedding(out, args[0], args[1], args[2])
}

// String names the op.
func (Embedding) String() string { return "Embedding" }

// WriteHash writes the op's identity to h.
func (op Embedding) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op Embedding) Hashcode() uint32 { return hashcode(op) }

// DiffWRT reports that Embedding is differentiable in its weight only.
func (Embedding) DiffWRT(int) []bool { return []bool{false, true, false} }

// SymDiff returns the gradient node for the weight (and nil for the ids and
// the positions).
func (op Embedding) SymDiff(inputs gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	dw, err := gorgonia.ApplyOp(EmbeddingGrad{Vocab: inputs[1].Shape()[0]}, inputs[0], grad)
	if err != nil {
		return nil, fmt.Errorf("%v gradient: %w", op, err)
	}
	return gorgonia.Nodes{nil, dw, nil}, nil
}

// EmbeddingGrad is the gradient of Embedding with respect to its weight,
// given the ids and the output gradient g [batch·seq, d]: a [Vocab, d]
// matrix into whose row id every row of g with that id is added. (gorgonia's
// own ByIndices gradient puts the sums in the wrong rows.)
type EmbeddingGrad struct {
	base
	Vocab int // rows of the weight
}

// Arity is 2: ids, g.
func (EmbeddingGrad) Arity() int { return 2 }

// Type is (matrix, matrix) → matrix.
func (EmbeddingGrad) Type() hm.Type {
	return hm.NewFnType(tensorType(2), tensorType(2), tensorType(2))
}

// InferShape returns [Vocab, d].
func (op EmbeddingGrad) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	shapes, err := shapesOf(op, inputs, 2)
	if err != nil {
		return nil, err
	}
	ids, g := shapes[0], shapes[1]
	if len(ids) != 2 || len(g) != 2 || ids.TotalSize() != g[0] || op.Vocab <= 0 {
		return nil, fmt.Errorf("%v: shapes ids %v and gradient %v do not fit", op, ids, g)
	}
	return tensor.Shape{op.Vocab, g[1]}, nil
}

// Do computes the gradient.
func (op EmbeddingGrad) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 2); err != nil {
		return nil, err
	}
	return byDtype(op, values,
		func(v []gorgonia.Value) (gorgonia.Value, error) { return embeddingGradDo[float32](op.Vocab, v) },
		func(v []gorgonia.Value) (gorgonia.Value, error) { return embeddingGradDo[float64](op.Vocab, v) })
}

func embeddingGradDo[T kernels.Float](vocab int, v []gorgonia.Value) (gorgonia.Value, error) {
	dw := newTensor[T](vocab, v[1].Shape()[1])
	if err := kernels.EmbeddingGrad(floats[T](dw), floats[T](v[0]), floats[T](v[1])); err != nil {
		return nil, err
	}
	return dw, nil
}

// Launch computes the gradient.
func (EmbeddingGrad) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, _ []tensor.Shape) error {
	return k.EmbeddingGrad(out, args[0], args[1])
}

// String names the op with the vocabulary size.
func (op EmbeddingGrad) String() string { return fmt.Sprintf("EmbeddingGrad(%d)", op.Vocab) }

// WriteHash writes the op's identity to h.
func (op EmbeddingGrad) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op EmbeddingGrad) Hashcode() uint32 { return hashcode(op) }
