package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/kernels"
)

// DefaultLeakySlope is the negative slope of PyTorch's nn.LeakyReLU.
const DefaultLeakySlope = 0.01

// LeakyReLU is x where x > 0 and Slope·x elsewhere, element-wise, on a
// tensor of any shape.
type LeakyReLU struct {
	base
	Slope float64
}

// Arity is 1.
func (LeakyReLU) Arity() int { return 1 }

// Type is a → a.
func (LeakyReLU) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}

// InferShape returns the input's shape.
func (op LeakyReLU) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapeOf(inputs, 0)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", op, err)
	}
	return s.Clone(), nil
}

// Do applies the activation.
func (op LeakyReLU) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 1); err != nil {
		return nil, err
	}
	return byDtype(op, values,
		func(v []gorgonia.Value) (gorgonia.Value, error) { return leakyReLUDo[float32](op.Slope, v) },
		func(v []gorgonia.Value) (gorgonia.Value, error) { return leakyReLUDo[float64](op.Slope, v) })
}

func leakyReLUDo[T kernels.Float](slope float64, v []gorgonia.Value) (gorgonia.Value, error) {
	y := newTensor[T](v[0].Shape()...)
	kernels.LeakyReLU(floats[T](y), floats[T](v[0]), T(slope))
	return y, nil
}

// String names the op with its slope.
func (op LeakyReLU) String() string { return fmt.Sprintf("LeakyReLU(%g)", op.Slope) }

// WriteHash writes the op's identity to h.
func (op LeakyReLU) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op LeakyReLU) Hashcode() uint32 { return hashcode(op) }

// DiffWRT reports that the op is differentiable in its input.
func (LeakyReLU) DiffWRT(int) []bool { return []bool{true} }

// SymDiff returns the gradient node for the input.
func (op LeakyReLU) SymDiff(inputs gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	dx, err := gorgonia.ApplyOp(LeakyReLUGrad{Slope: op.Slope}, inputs[0], grad)
	if err != nil {
		return nil, fmt.Errorf("%v gradient: %w", op, err)
	}
	return gorgonia.Nodes{dx}, nil
}

// LeakyReLUGrad is the gradient of LeakyReLU: given the activation's input x
// and the output gradient g, it is g where x > 0 and Slope·g elsewhere.
type LeakyReLUGrad struct {
	base
	Slope float64
}

// Arity is 2: x, g.
func (LeakyReLUGrad) Arity() int { return 2 }

// Type is (a, a) → a.
func (LeakyReLUGrad) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a)
}

// InferShape returns the shape of x, which must equal that of g.
func (op LeakyReLUGrad) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	shapes, err := shapesOf(op, inputs, 2)
	if err != nil {
		return nil, err
	}
	x, g := shapes[0], shapes[1]
	if !x.Eq(g) {
		return nil, fmt.Errorf("%v: x %v and gradient %v differ in shape", op, x, g)
	}
	return x.Clone(), nil
}

// Do computes the gradient.
func (op LeakyReLUGrad) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 2); err != nil {
		return nil, err
	}
	return byDtype(op, values,
		func(v []gorgonia.Value) (gorgonia.Value, error) { return leakyReLUGradDo[float32](op.Slope, v) },
		func(v []gorgonia.Value) (gorgonia.Value, error) { return leakyReLUGradDo[float64](op.Slope, v) })
}

func leakyReLUGradDo[T kernels.Float](slope float64, v []gorgonia.Value) (gorgonia.Value, error) {
	dx := newTensor[T](v[0].Shape()...)
	kernels.LeakyReLUGrad(floats[T](dx), floats[T](v[0]), floats[T](v[1]), T(slope))
	return dx, nil
}

// String names the op with its slope.
func (op LeakyReLUGrad) String() string { return fmt.Sprintf("LeakyReLUGrad(%g)", op.Slope) }

// WriteHash writes the op's identity to h.
func (op LeakyReLUGrad) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op LeakyReLUGrad) Hashcode() uint32 { return hashcode(op) }
