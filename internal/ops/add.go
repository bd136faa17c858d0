package ops

import (
	"hash"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/kernels"
)

// Add is the element-wise sum of two tensors of one shape: the residual
// connection x + f(x). It returns a new tensor, never a view of an input.
type Add struct{ base }

// Arity is 2.
func (Add) Arity() int { return 2 }

// Type is (a, a) → a.
func (Add) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a)
}

// InferShape checks that both inputs have one shape and returns it.
func (op Add) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	if err := sameShapes(op, inputs, 2); err != nil {
		return nil, err
	}
	s, _ := shapeOf(inputs, 0)
	return s.Clone(), nil
}

// Do computes the sum.
func (op Add) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 2); err != nil {
		return nil, err
	}
	return byDtype(op, values, addDo[float32], addDo[float64])
}

func addDo[T kernels.Float](v []gorgonia.Value) (gorgonia.Value, error) {
	y := newTensor[T](v[0].Shape()...)
	kernels.Add(floats[T](y), floats[T](v[0]), floats[T](v[1]))
	return y, nil
}

// Launch computes the sum.
func (Add) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, _ []tensor.Shape) error {
	k.Add(out, args[0], args[1])
	return nil
}

// String names the op.
func (Add) String() string { return "Add" }

// WriteHash writes the op's identity to h.
func (op Add) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op Add) Hashcode() uint32 { return hashcode(op) }

// DiffWRT reports that Add is differentiable in both inputs.
func (Add) DiffWRT(int) []bool { return []bool{true, true} }

// SymDiff returns the output gradient itself as the gradient of both
// inputs: no op is needed.
func (Add) SymDiff(_ gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	return gorgonia.Nodes{grad, grad}, nil
}
