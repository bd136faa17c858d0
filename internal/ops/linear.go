package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/kernels"
)

// Linear is the affine layer y = x·Wᵀ + b of PyTorch's nn.Linear: inputs x
// [batch, in], W [out, in] and b [out]; output [batch, out].
type Linear struct{ base }

// Arity is 3: x, W, b.
func (Linear) Arity() int { return 3 }

// Type is (matrix, matrix, vector) → matrix.
func (Linear) Type() hm.Type {
	return hm.NewFnType(tensorType(2), tensorType(2), tensorType(1), tensorType(2))
}

// InferShape checks that x, W and b fit together and returns [batch, out].
func (op Linear) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	shapes, err := shapesOf(op, inputs, 3)
	if err != nil {
		return nil, err
	}
	x, w, b := shapes[0], shapes[1], shapes[2]
	if len(x) != 2 || len(w) != 2 || len(b) != 1 || x[1] != w[1] || b[0] != w[0] {
		return nil, fmt.Errorf("%v: shapes x %v, W %v, b %v do not fit", op, x, w, b)
	}
	return tensor.Shape{x[0], w[0]}, nil
}

// Do computes x·Wᵀ + b.
func (op Linear) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 3); err != nil {
		return nil, err
	}
	return byDtype(op, values, linearDo[float32], linearDo[float64])
}

func linearDo[T kernels.Float](v []gorgonia.Value) (gorgonia.Value, error) {
	batch, in := v[0].Shape()[0], v[0].Shape()[1]
	out := v[1].Shape()[0]
	y := newTensor[T](batch, out)
	LinearForward(floats[T](y), floats[T](v[0]), floats[T](v[1]), floats[T](v[2]), batch, in, out)
	return y, nil
}

// LinearForward computes y = x·Wᵀ + b on host slices; x is [batch, in],
// W [out, in], b [out] and y [batch, out].
func LinearForward[T kernels.Float](y, x, w, b []T, batch, in, out int) {
	kernels.Gemm(false, true, batch, out, in, 1, x, w, 0, y)
	kernels.AddRowVector(y, b)
}

// String names the op.
func (Linear) String() string { return "Linear" }

// WriteHash writes the op's identity to h.
func (op Linear) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op Linear) Hashcode() uint32 { return hashcode(op) }

// DiffWRT reports that Linear is differentiable in all three inputs.
func (Linear) DiffWRT(int) []bool { return []bool{true, true, true} }

// SymDiff returns the gradient nodes for x, W and b given the gradient of y.
func (Linear) SymDiff(inputs gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	x, w := inputs[0], inputs[1]
	dx, err := gorgonia.ApplyOp(LinearInputGrad{}, grad, w)
	if err != nil {
		return nil, fmt.Errorf("Linear input gradient: %w", err)
	}
	dw, err := gorgonia.ApplyOp(LinearWeightGrad{}, grad, x)
	if err != nil {
		return nil, fmt.Errorf("Linear weight gradient: %w", err)
	}
	db, err := gorgonia.ApplyOp(LinearBiasGrad{}, grad)
	if err != nil {
		return nil, fmt.Errorf("Linear bias gradient: %w", err)
	}
	return gorgonia.Nodes{dx, dw, db}, nil
}

// LinearInputGrad is the gradient of Linear with respect to x: given the
// output gradient g [batch, out] and W [out, in], dx = g·W [batch, in].
type LinearInputGrad struct{ base }

// Arity is 2: g, W.
func (LinearInputGrad) Arity() int { return 2 }

// Type is (matrix, matrix) → matrix.
func (LinearInputGrad) Type() hm.Type {
	return hm.NewFnType(tensorType(2), tensorType(2), tensorType(2))
}

// InferShape returns [batch, in].
func (op LinearInputGrad) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	return matmulShape(op, inputs, false)
}

// Do computes g·W.
func (op LinearInputGrad) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 2); err != nil {
		return nil, err
	}
	return byDtype(op, values, linearInputGradDo[float32], linearInputGradDo[float64])
}

func linearInputGradDo[T kernels.Float](v []gorgonia.Value) (gorgonia.Value, error) {
	batch, out := v[0].Shape()[0], v[0].Shape()[1]
	in := v[1].Shape()[1]
	dx := newTensor[T](batch, in)
	kernels.Gemm(false, false, batch, in, out, 1, floats[T](v[0]), floats[T](v[1]), 0, floats[T](dx))
	return dx, nil
}

// String names the op.
func (LinearInputGrad) String() string { return "LinearInputGrad" }

// WriteHash writes the op's identity to h.
func (op LinearInputGrad) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op LinearInputGrad) Hashcode() uint32 { return hashcode(op) }

// LinearWeightGrad is the gradient of Linear with respect to W: given the
// output gradient g [batch, out] and x [batch, in], dW = gᵀ·x [out, in].
type LinearWeightGrad struct{ base }

// Arity is 2: g, x.
func (LinearWeightGrad) Arity() int { return 2 }

// Type is (matrix, matrix) → matrix.
func (LinearWeightGrad) Type() hm.Type {
	return hm.NewFnType(tensorType(2), tensorType(2), tensorType(2))
}

// InferShape returns [out, in].
func (op LinearWeightGrad) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	return matmulShape(op, inputs, true)
}

// Do computes gᵀ·x.
func (op LinearWeightGrad) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 2); err != nil {
		return nil, err
	}
	return byDtype(op, values, linearWeightGradDo[float32], linearWeightGradDo[float64])
}

func linearWeightGradDo[T kernels.Float](v []gorgonia.Value) (gorgonia.Value, error) {
	batch, out := v[0].Shape()[0], v[0].Shape()[1]
	in := v[1].Shape()[1]
	dw := newTensor[T](out, in)
	kernels.Gemm(true, false, out, in, batch, 1, floats[T](v[0]), floats[T](v[1]), 0, floats[T](dw))
	return dw, nil
}

// String names the op.
func (LinearWeightGrad) String() string { return "LinearWeightGrad" }

// WriteHash writes the op's identity to h.
func (op LinearWeightGrad) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op LinearWeightGrad) Hashcode() uint32 { return hashcode(op) }

// matmulShape infers the shape of g·W (transposeG false) or gᵀ·x
// (transposeG true) for the two matrix inputs of a Linear gradient op.
func matmulShape(op fmt.Stringer, inputs []gorgonia.DimSizer, transposeG bool) (tensor.Shape, error) {
	shapes, err := shapesOf(op, inputs, 2)
	if err != nil {
		return nil, err
	}
	g, other := shapes[0], shapes[1]
	if len(g) != 2 || len(other) != 2 {
		return nil, fmt.Errorf("%v: expected matrices, got %v and %v", op, g, other)
	}
	if transposeG {
		if g[0] != other[0] {
			return nil, fmt.Errorf("%v: batch sizes %v and %v differ", op, g, other)
		}
		return tensor.Shape{g[1], other[1]}, nil
	}
	if g[1] != other[0] {
		return nil, fmt.Errorf("%v: shapes %v and %v do not fit", op, g, other)
	}
	return tensor.Shape{g[0], other[1]}, nil
}

// LinearBiasGrad is the gradient of Linear with respect to b: the column
// sums of the output gradient g [batch, out].
type LinearBiasGrad struct{ base }

// Arity is 1: g.
func (LinearBiasGrad) Arity() int { return 1 }

// Type is matrix → vector.
func (LinearBiasGrad) Type() hm.Type { return hm.NewFnType(tensorType(2), tensorType(1)) }

// InferShape returns [out].
func (op LinearBiasGrad) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	g, err := shapeOf(inputs, 0)
	if err != nil || len(g) != 2 {
		return nil, fmt.Errorf("%v: expected a matrix gradient, got %v (%v)", op, g, err)
	}
	return tensor.Shape{g[1]}, nil
}

// Do sums the rows of g.
func (op LinearBiasGrad) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 1); err != nil {
		return nil, err
	}
	return byDtype(op, values, linearBiasGradDo[float32], linearBiasGradDo[float64])
}

func linearBiasGradDo[T kernels.Float](v []gorgonia.Value) (gorgonia.Value, error) {
	db := newTensor[T](v[0].Shape()[1])
	kernels.SumRows(floats[T](db), floats[T](v[0]))
	return db, nil
}

// String names the op.
func (LinearBiasGrad) String() string { return "LinearBiasGrad" }

// WriteHash writes the op's identity to h.
func (op LinearBiasGrad) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op LinearBiasGrad) Hashcode() uint32 { return hashcode(op) }
