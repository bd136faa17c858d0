package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/kernels"
)

// MSE is the mean squared error between a prediction and a target of the
// same shape: mean((pred − target)²), a scalar. It is differentiable in the
// prediction only, as the target is data.
type MSE struct {
	base
	Dims int // dimensions of the input tensors
}

// Arity is 2: pred, target.
func (MSE) Arity() int { return 2 }

// Type is (tensor, tensor) → scalar.
func (op MSE) Type() hm.Type {
	return hm.NewFnType(tensorType(op.Dims), tensorType(op.Dims), elementType())
}

// InferShape checks that pred and target agree and returns a scalar shape.
func (op MSE) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	if err := sameShapes(op, inputs, 2); err != nil {
		return nil, err
	}
	return tensor.ScalarShape(), nil
}

// Do computes the loss.
func (op MSE) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 2); err != nil {
		return nil, err
	}
	return byDtype(op, values, mseDo[float32], mseDo[float64])
}

func mseDo[T kernels.Float](v []gorgonia.Value) (gorgonia.Value, error) {
	return newScalar[T](kernels.MeanSquaredError(floats[T](v[0]), floats[T](v[1]))), nil
}

// String names the op.
func (op MSE) String() string { return fmt.Sprintf("MSE(%dD)", op.Dims) }

// WriteHash writes the op's identity to h.
func (op MSE) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op MSE) Hashcode() uint32 { return hashcode(op) }

// DiffWRT reports that MSE is differentiable in the prediction only.
func (MSE) DiffWRT(int) []bool { return []bool{true, false} }

// SymDiff returns the gradient node for the prediction (and nil for the
// target).
func (op MSE) SymDiff(inputs gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	dpred, err := gorgonia.ApplyOp(MSEGrad{Dims: op.Dims}, inputs[0], inputs[1], grad)
	if err != nil {
		return nil, fmt.Errorf("MSE gradient: %w", err)
	}
	return gorgonia.Nodes{dpred, nil}, nil
}

// MSEGrad is the gradient of MSE with respect to the prediction, given the
// prediction, the target and the scalar gradient of the loss (the seed):
// seed · 2(pred − target)/n.
type MSEGrad struct {
	base
	Dims int // dimensions of the input tensors
}

// Arity is 3: pred, target, seed.
func (MSEGrad) Arity() int { return 3 }

// Type is (tensor, tensor, scalar) → tensor.
func (op MSEGrad) Type() hm.Type {
	return hm.NewFnType(tensorType(op.Dims), tensorType(op.Dims), elementType(), tensorType(op.Dims))
}

// InferShape returns the prediction's shape.
func (op MSEGrad) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	if err := sameShapes(op, inputs, 2); err != nil {
		return nil, err
	}
	s, _ := shapeOf(inputs, 0)
	return s.Clone(), nil
}

// Do computes the gradient.
func (op MSEGrad) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 3); err != nil {
		return nil, err
	}
	return byDtype(op, values, mseGradDo[float32], mseGradDo[float64])
}

func mseGradDo[T kernels.Float](v []gorgonia.Value) (gorgonia.Value, error) {
	d := newTensor[T](v[0].Shape()...)
	kernels.MeanSquaredErrorGrad(floats[T](d), floats[T](v[0]), floats[T](v[1]), scalar[T](v[2]))
	return d, nil
}

// String names the op.
func (op MSEGrad) String() string { return fmt.Sprintf("MSEGrad(%dD)", op.Dims) }

// WriteHash writes the op's identity to h.
func (op MSEGrad) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op MSEGrad) Hashcode() uint32 { return hashcode(op) }

// Mean is the mean of all elements of a tensor, a scalar: what evaluation
// accumulates over batches.
type Mean struct {
	base
	Dims int // dimensions of the input tensors
}

// Arity is 1.
func (Mean) Arity() int { return 1 }

// Type is tensor → scalar.
func (op Mean) Type() hm.Type { return hm.NewFnType(tensorType(op.Dims), elementType()) }

// InferShape returns a scalar shape.
func (op Mean) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	if _, err := shapeOf(inputs, 0); err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	return tensor.ScalarShape(), nil
}

// Do computes the mean.
func (op Mean) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 1); err != nil {
		return nil, err
	}
	return byDtype(op, values, meanDo[float32], meanDo[float64])
}

func meanDo[T kernels.Float](v []gorgonia.Value) (gorgonia.Value, error) {
	x := floats[T](v[0])
	return newScalar[T](kernels.Sum(x) / float64(len(x))), nil
}

// String names the op.
func (op Mean) String() string { return fmt.Sprintf("Mean(%dD)", op.Dims) }

// WriteHash writes the op's identity to h.
func (op Mean) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op Mean) Hashcode() uint32 { return hashcode(op) }

// DiffWRT reports that Mean is differentiable in its input.
func (Mean) DiffWRT(int) []bool { return []bool{true} }

// SymDiff returns the gradient node for the input.
func (op Mean) SymDiff(inputs gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	dx, err := gorgonia.ApplyOp(MeanGrad{Dims: op.Dims}, inputs[0], grad)
	if err != nil {
		return nil, fmt.Errorf("Mean gradient: %w", err)
	}
	return gorgonia.Nodes{dx}, nil
}

// MeanGrad is the gradient of Mean: every element is seed/n, given the
// input (for its shape) and the scalar seed.
type MeanGrad struct {
	base
	Dims int // dimensions of the input tensors
}

// Arity is 2: x, seed.
func (MeanGrad) Arity() int { return 2 }

// Type is (tensor, scalar) → tensor.
func (op MeanGrad) Type() hm.Type {
	return hm.NewFnType(tensorType(op.Dims), elementType(), tensorType(op.Dims))
}

// InferShape returns the input's shape.
func (op MeanGrad) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapeOf(inputs, 0)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	return s.Clone(), nil
}

// Do computes the gradient.
func (op MeanGrad) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 2); err != nil {
		return nil, err
	}
	return byDtype(op, values, meanGradDo[float32], meanGradDo[float64])
}

func meanGradDo[T kernels.Float](v []gorgonia.Value) (gorgonia.Value, error) {
	d := newTensor[T](v[0].Shape()...)
	out := floats[T](d)
	fill := scalar[T](v[1]) * (1 / T(len(out)))
	for i := range out {
		out[i] = fill
	}
	return d, nil
}

// String names the op.
func (op MeanGrad) String() string { return fmt.Sprintf("MeanGrad(%dD)", op.Dims) }

// WriteHash writes the op's identity to h.
func (op MeanGrad) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op MeanGrad) Hashcode() uint32 { return hashcode(op) }

// sameShapes checks that the first n inputs have one shape.
func sameShapes(op fmt.Stringer, inputs []gorgonia.DimSizer, n int) error {
	shapes, err := shapesOf(op, inputs, n)
	if err != nil {
		return err
	}
	for _, s := range shapes[1:] {
		if !s.Eq(shapes[0]) {
			return fmt.Errorf("%v: input shapes %v and %v differ", op, shapes[0], s)
		}
	}
	return nil
}
