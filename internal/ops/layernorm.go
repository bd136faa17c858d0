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

// DefaultLayerNormEps is the ε of PyTorch's nn.LayerNorm.
const DefaultLayerNormEps = 1e-5

// LayerNorm is PyTorch's nn.LayerNorm over the last axis: each row of x
// [rows, d] is normalised to zero mean and unit (biased) variance, with Eps
// added to the variance, then scaled by gamma [d] and shifted by beta [d].
type LayerNorm struct {
	base
	Eps float64
}

// Arity is 3: x, gamma, beta.
func (LayerNorm) Arity() int { return 3 }

// Type is (matrix, vector, vector) → matrix.
func (LayerNorm) Type() hm.Type {
	return hm.NewFnType(tensorType(2), tensorType(1), tensorType(1), tensorType(2))
}

// InferShape checks that gamma and beta match the rows of x and returns the
// shape of x.
func (op LayerNorm) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	shapes, err := shapesOf(op, inputs, 3)
	if err != nil {
		return nil, err
	}
	x, gamma, beta := shapes[0], shapes[1], shapes[2]
	if len(x) != 2 || len(gamma) != 1 || len(beta) != 1 || gamma[0] != x[1] || beta[0] != x[1] {
		return nil, fmt.Errorf("%v: shapes x %v, gamma %v, beta %v do not fit", op, x, gamma, beta)
	}
	return x.Clone(), nil
}

// Do normalises.
func (op LayerNorm) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 3); err != nil {
		return nil, err
	}
	return byDtype(op, values,
		func(v []gorgonia.Value) (gorgonia.Value, error) { return layerNormDo[float32](op.Eps, v) },
		func(v []gorgonia.Value) (gorgonia.Value, error) { return layerNormDo[float64](op.Eps, v) })
}

func layerNormDo[T kernels.Float](eps float64, v []gorgonia.Value) (gorgonia.Value, error) {
	y := newTensor[T](v[0].Shape()...)
	kernels.LayerNorm(floats[T](y), floats[T](v[0]), floats[T](v[1]), floats[T](v[2]), eps)
	return y, nil
}

// Launch normalises.
func (op LayerNorm) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, _ []tensor.Shape) error {
	k.LayerNorm(out, args[0], args[1], args[2], op.Eps)
	return nil
}

// String names the op with its ε.
func (op LayerNorm) String() string { return fmt.Sprintf("LayerNorm(%g)", op.Eps) }

// WriteHash writes the op's identity to h.
func (op LayerNorm) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op LayerNorm) Hashcode() uint32 { return hashcode(op) }

// DiffWRT reports that LayerNorm is differentiable in all three inputs.
func (LayerNorm) DiffWRT(int) []bool { return []bool{true, true, true} }

// SymDiff returns the gradient nodes for x, gamma and beta; the gradient
// ops recompute each row's mean and variance from x rather than keep them.
func (op LayerNorm) SymDiff(inputs gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	x, gamma := inputs[0], inputs[1]
	dx, err := gorgonia.ApplyOp(LayerNormInputGrad{Eps: op.Eps}, x, gamma, grad)
	if err != nil {
		return nil, fmt.Errorf("%v input gradient: %w", op, err)
	}
	dgamma, err := gorgonia.ApplyOp(LayerNormWeightGrad{Eps: op.Eps}, x, grad)
	if err != nil {
		return nil, fmt.Errorf("%v weight gradient: %w", op, err)
	}
	dbeta, err := gorgonia.ApplyOp(LinearBiasGrad{}, grad)
	if err != nil {
		return nil, fmt.Errorf("%v bias gradient: %w", op, err)
	}
	return gorgonia.Nodes{dx, dgamma, dbeta}, nil
}

// LayerNormInputGrad is the gradient of LayerNorm with respect to x, given
// x, gamma and the output gradient g.
type LayerNormInputGrad struct {
	base
	Eps float64
}

// Arity is 3: x, gamma, g.
func (LayerNormInputGrad) Arity() int { return 3 }

// Type is (matrix, vector, matrix) → matrix.
func (LayerNormInputGrad) Type() hm.Type {
	return hm.NewFnType(tensorType(2), tensorType(1), tensorType(2), tensorType(2))
}

// InferShape returns the shape of x.
func (op LayerNormInputGrad) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	shapes, err := shapesOf(op, inputs, 3)
	if err != nil {
		return nil, err
	}
	x, gamma, g := shapes[0], shapes[1], shapes[2]
	if len(x) != 2 || !x.Eq(g) || len(gamma) != 1 || gamma[0] != x[1] {
		return nil, fmt.Errorf("%v: shapes x %v, gamma %v, gradient %v do not fit", op, x, gamma, g)
	}
	return x.Clone(), nil
}

// Do computes the gradient.
func (op LayerNormInputGrad) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 3); err != nil {
		return nil, err
	}
	return byDtype(op, values,
		func(v []gorgonia.Value) (gorgonia.Value, error) { return layerNormInputGradDo[float32](op.Eps, v) },
		func(v []gorgonia.Value) (gorgonia.Value, error) { return layerNormInputGradDo[float64](op.Eps, v) })
}

func layerNormInputGradDo[T kernels.Float](eps float64, v []gorgonia.Value) (gorgonia.Value, error) {
	dx := newTensor[T](v[0].Shape()...)
	kernels.LayerNormInputGrad(floats[T](dx), floats[T](v[0]), floats[T](v[1]), floats[T](v[2]), eps)
	return dx, nil
}

// Launch computes the gradient.
func (op LayerNormInputGrad) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, _ []tensor.Shape) error {
	k.LayerNormInputGrad(out, args[0], args[1], args[2], op.Eps)
	return nil
}

// String names the op with its ε.
func (op LayerNormInputGrad) String() string { return fmt.Sprintf("LayerNormInputGrad(%g)", op.Eps) }

// WriteHash writes the op's identity to h.
func (op LayerNormInputGrad) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op LayerNormInputGrad) Hashcode() uint32 { return hashcode(op) }

// LayerNormWeightGrad is the gradient of LayerNorm with respect to gamma,
// given x and the output gradient g: the column sums of g ⊙ x̂.
type LayerNormWeightGrad struct {
	base
	Eps float64
}

// Arity is 2: x, g.
func (LayerNormWeightGrad) Arity() int { return 2 }

// Type is (matrix, matrix) → vector.
func (LayerNormWeightGrad) Type() hm.Type {
	return hm.NewFnType(tensorType(2), tensorType(2), tensorType(1))
}

// InferShape returns [d].
func (op LayerNormWeightGrad) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	shapes, err := shapesOf(op, inputs, 2)
	if err != nil {
		return nil, err
	}
	if x, g := shapes[0], shapes[1]; len(x) != 2 || !x.Eq(g) {
		return nil, fmt.Errorf("%v: shapes x %v and gradient %v do not fit", op, x, g)
	}
	return tensor.Shape{shapes[0][1]}, nil
}

// Do computes the gradient.
func (op LayerNormWeightGrad) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 2); err != nil {
		return nil, err
	}
	return byDtype(op, values,
		func(v []gorgonia.Value) (gorgonia.Value, error) { return layerNormWeightGradDo[float32](op.Eps, v) },
		func(v []gorgonia.Value) (gorgonia.Value, error) { return layerNormWeightGradDo[float64](op.Eps, v) })
}

func layerNormWeightGradDo[T kernels.Float](eps float64, v []gorgonia.Value) (gorgonia.Value, error) {
	dgamma := newTensor[T](v[0].Shape()[1])
	kernels.LayerNormWeightGrad(floats[T](dgamma), floats[T](v[0]), floats[T](v[1]), eps)
	return dgamma, nil
}

// Launch computes the gradient.
func (op LayerNormWeightGrad) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, _ []tensor.Shape) error {
	k.LayerNormWeightGrad(out, args[0], args[1], op.Eps)
	return nil
}

// String names the op with its ε.
func (op LayerNormWeightGrad) String() string { return fmt.Sprintf("LayerNormWeightGrad(%g)", op.Eps) }

// WriteHash writes the op's identity to h.
func (op LayerNormWeightGrad) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op LayerNormWeightGrad) Hashcode() uint32 { return hashcode(op) }
