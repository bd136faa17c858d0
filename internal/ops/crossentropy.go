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

// SoftmaxCrossEntropy is PyTorch's F.cross_entropy with integer targets and
// mean reduction: given logits [tokens, classes] and targets of any 2-D
// shape holding one exact integer class id per token (in the tensors' float
// type), it is the mean over tokens of logsumexp(row) − row[target], a
// scalar, computed with the row maximum subtracted so that it cannot
// overflow. It is differentiable in the logits only.
type SoftmaxCrossEntropy struct{ base }

// Arity is 2: logits, targets.
func (SoftmaxCrossEntropy) Arity() int { return 2 }

// Type is (matrix, matrix) → scalar.
func (SoftmaxCrossEntropy) Type() hm.Type {
	return hm.NewFnType(tensorType(2), tensorType(2), elementType())
}

// InferShape checks that there is one target per row of logits and returns
// a scalar shape.
func (op SoftmaxCrossEntropy) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	if err := checkLogitsTargets(op, inputs); err != nil {
		return nil, err
	}
	return tensor.ScalarShape(), nil
}

// checkLogitsTargets checks that the first two inputs are logits
// [tokens, classes] and one target per token.
func checkLogitsTargets(op fmt.Stringer, inputs []gorgonia.DimSizer) error {
	shapes, err := shapesOf(op, inputs, 2)
	if err != nil {
		return err
	}
	logits, targets := shapes[0], shapes[1]
	if len(logits) != 2 || logits[1] == 0 || targets.TotalSize() != logits[0] {
		return fmt.Errorf("%v: logits %v and targets %v do not fit", op, logits, targets)
	}
	return nil
}

// Do computes the loss; targets that are not class ids are an error.
func (op SoftmaxCrossEntropy) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 2); err != nil {
		return nil, err
	}
	return byDtype(op, values, softmaxCrossEntropyDo[float32], softmaxCrossEntropyDo[float64])
}

func softmaxCrossEntropyDo[T kernels.Float](v []gorgonia.Value) (gorgonia.Value, error) {
	loss, err := kernels.SoftmaxCrossEntropy(floats[T](v[0]), floats[T](v[1]))
	if err != nil {
		return nil, err
	}
	return newScalar[T](loss), nil
}

// Launch computes the loss.
func (SoftmaxCrossEntropy) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, _ []tensor.Shape) error {
	return k.SoftmaxCrossEntropy(out, args[0], args[1])
}

// String names the op.
func (SoftmaxCrossEntropy) String() string { return "SoftmaxCrossEntropy" }

// WriteHash writes the op's identity to h.
func (op SoftmaxCrossEntropy) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op SoftmaxCrossEntropy) Hashcode() uint32 { return hashcode(op) }

// DiffWRT reports that the loss is differentiable in the logits only.
func (SoftmaxCrossEntropy) DiffWRT(int) []bool { return []bool{true, false} }

// SymDiff returns the gradient node for the logits (and nil for the
// targets).
func (op SoftmaxCrossEntropy) SymDiff(inputs gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	dlogits, err := gorgonia.ApplyOp(SoftmaxCrossEntropyGrad{}, inputs[0], inputs[1], grad)
	if err != nil {
		return nil, fmt.Errorf("%v gradient: %w", op, err)
	}
	return gorgonia.Nodes{dlogits, nil}, nil
}

// SoftmaxCrossEntropyGrad is the gradient of SoftmaxCrossEntropy with
// respect to the logits, given the logits, the targets and the scalar
// gradient of the loss (the seed): seed·(softmax(row) − onehot(target))/tokens.
type SoftmaxCrossEntropyGrad struct{ base }

// Arity is 3: logits, targets, seed.
func (SoftmaxCrossEntropyGrad) Arity() int { return 3 }

// Type is (matrix, matrix, scalar) → matrix.
func (SoftmaxCrossEntropyGrad) Type() hm.Type {
	return hm.NewFnType(tensorType(2), tensorType(2), elementType(), tensorType(2))
}

// InferShape returns the logits' shape.
func (op SoftmaxCrossEntropyGrad) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	if err := checkLogitsTargets(op, inputs); err != nil {
		return nil, err
	}
	s, _ := shapeOf(inputs, 0)
	return s.Clone(), nil
}

// Do computes the gradient.
func (op SoftmaxCrossEntropyGrad) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 3); err != nil {
		return nil, err
	}
	return byDtype(op, values, softmaxCrossEntropyGradDo[float32], softmaxCrossEntropyGradDo[float64])
}

func softmaxCrossEntropyGradDo[T kernels.Float](v []gorgonia.Value) (gorgonia.Value, error) {
	d := newTensor[T](v[0].Shape()...)
	if err := kernels.SoftmaxCrossEntropyGrad(floats[T](d), floats[T](v[0]), floats[T](v[1]), scalar[T](v[2])); err != nil {
		return nil, err
	}
	return d, nil
}

// Launch computes the gradient.
func (SoftmaxCrossEntropyGrad) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, _ []tensor.Shape) error {
	return k.SoftmaxCrossEntropyGrad(out, args[0], args[1], args[2])
}

// String names the op.
func (SoftmaxCrossEntropyGrad) String() string { return "SoftmaxCrossEntropyGrad" }

// WriteHash writes the op's identity to h.
func (op SoftmaxCrossEntropyGrad) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op SoftmaxCrossEntropyGrad) Hashcode() uint32 { return hashcode(op) }
