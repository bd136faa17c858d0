// Package ops defines the gorgonia operations that gpuz models are built
// from, each with the operations that compute its gradients.
//
// Every forward op implements gorgonia.Op and gorgonia.SDOp, so that
// gorgonia.Backpropagate derives a model's backward graph from our own
// gradient ops. The ops' Do methods run the host kernels of package kernels
// in float32 or float64, which is what gorgonia's TapeMachine and the
// gradient checks use; package engine does not call Do but dispatches on the
// op types to a device's kernels. Parameters of an op are exported fields and
// are part of its hash.
package ops

import (
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/kernels"
)

// base holds the answers that every gpuz op gives alike: it returns a new
// value, never a pointer into an input, and overwrites no input.
type base struct{}

func (base) ReturnsPtr() bool                { return false }
func (base) CallsExtern() bool               { return false }
func (base) OverwritesInput() int            { return -1 }
func writeHash(h hash.Hash, op fmt.Stringer) { fmt.Fprint(h, op.String()) }
func hashcode(op fmt.Stringer) uint32 {
	h := fnv.New32a()
	writeHash(h, op)
	return h.Sum32()
}

// tensorType is the gorgonia type of a dims-dimensional tensor of a.
func tensorType(dims int) hm.Type {
	return &gorgonia.TensorType{Dims: dims, Of: hm.TypeVariable('a')}
}

// elementType is the gorgonia type of a scalar of the tensors' element type.
func elementType() hm.Type { return hm.TypeVariable('a') }

// shapeOf returns the shape of the i-th input given to InferShape.
func shapeOf(inputs []gorgonia.DimSizer, i int) (tensor.Shape, error) {
	if i >= len(inputs) {
		return nil, fmt.Errorf("expected at least %d inputs, got %d", i+1, len(inputs))
	}
	if s, ok := inputs[i].(tensor.Shape); ok {
		return s, nil
	}
	return nil, fmt.Errorf("input %d: expected a shape, got %T", i, inputs[i])
}

// shapesOf returns the shapes of the first n inputs given to InferShape.
func shapesOf(op fmt.Stringer, inputs []gorgonia.DimSizer, n int) ([]tensor.Shape, error) {
	shapes := make([]tensor.Shape, n)
	for i := range n {
		s, err := shapeOf(inputs, i)
		if err != nil {
			return nil, fmt.Errorf("%v: %w", op, err)
		}
		shapes[i] = s
	}
	return shapes, nil
}

// checkArity reports an error unless exactly n values were given.
func checkArity(op fmt.Stringer, values []gorgonia.Value, n int) error {
	if len(values) != n {
		return fmt.Errorf("%v: expected %d inputs, got %d", op, n, len(values))
	}
	return nil
}

// byDtype runs f32 or f64 according to the element type of values[0].
func byDtype(op fmt.Stringer, values []gorgonia.Value, f32, f64 func([]gorgonia.Value) (gorgonia.Value, error)) (gorgonia.Value, error) {
	switch dt := values[0].Dtype(); dt {
	case tensor.Float32:
		return f32(values)
	case tensor.Float64:
		return f64(values)
	default:
		return nil, fmt.Errorf("%v: unsupported element type %v", op, dt)
	}
}

// floats returns the elements of a tensor value.
func floats[T kernels.Float](v gorgonia.Value) []T { return v.Data().([]T) }

// scalar returns the value of a scalar, given as a gorgonia scalar or a
// tensor of one element.
func scalar[T kernels.Float](v gorgonia.Value) T {
	switch d := v.Data().(type) {
	case T:
		return d
	case []T:
		return d[0]
	}
	panic(fmt.Sprintf("ops: %T is not a scalar of the expected type", v))
}

// newTensor allocates a zeroed tensor of the element type T.
func newTensor[T kernels.Float](shape ...int) *tensor.Dense {
	return tensor.New(tensor.WithBacking(make([]T, tensor.Shape(shape).TotalSize())), tensor.WithShape(shape...))
}

// newScalar wraps x as a gorgonia scalar of the element type T.
func newScalar[T kernels.Float](x float64) gorgonia.Value {
	var zero T
	if _, ok := any(zero).(float32); ok {
		return gorgonia.NewF32(float32(x))
	}
	return gorgonia.NewF64(x)
}
