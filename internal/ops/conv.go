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

// Conv2d is PyTorch's nn.Conv2d with stride 1, a square kernel, Pad zeros
// on every side and a bias: inputs x [batch, in, H, W], W [out, in, k, k]
// and b [out]; output [batch, out, H+2·Pad−k+1, W+2·Pad−k+1].
type Conv2d struct {
	base
	Pad int
}

// Arity is 3: x, W, b.
func (Conv2d) Arity() int { return 3 }

// Type is (4-tensor, 4-tensor, vector) → 4-tensor.
func (Conv2d) Type() hm.Type {
	return hm.NewFnType(tensorType(4), tensorType(4), tensorType(1), tensorType(4))
}

// InferShape checks that x, W and b fit together and returns the output's
// shape.
func (op Conv2d) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	shapes, err := shapesOf(op, inputs, 3)
	if err != nil {
		return nil, err
	}
	s, err := op.shape(shapes[0], shapes[1])
	if err != nil {
		return nil, err
	}
	if b := shapes[2]; len(b) != 1 || b[0] != s.OutC {
		return nil, fmt.Errorf("%v: bias %v does not fit weights %v", op, b, shapes[1])
	}
	return tensor.Shape{s.Batch, s.OutC, s.OutH, s.OutW}, nil
}

// shape returns the convolution of input x by weights w, or why they do not
// fit.
func (op Conv2d) shape(x, w tensor.Shape) (kernels.ConvShape, error) {
	if op.Pad < 0 {
		return kernels.ConvShape{}, fmt.Errorf("%v: negative padding", op)
	}
	if len(x) != 4 || len(w) != 4 || w[1] != x[1] || w[2] != w[3] || w[2] <= 0 {
		return kernels.ConvShape{}, fmt.Errorf("%v: input %v and weights %v do not fit (want [N, C, H, W] and [M, C, k, k])", op, x, w)
	}
	k := w[2]
	s := kernels.ConvShape{Batch: x[0], InC: x[1], InH: x[2], InW: x[3], OutC: w[0],
		OutH: kernels.ConvOutSize(x[2], k, op.Pad), OutW: kernels.ConvOutSize(x[3], k, op.Pad), Kernel: k, Pad: op.Pad}
	if s.OutH <= 0 || s.OutW <= 0 {
		return kernels.ConvShape{}, fmt.Errorf("%v: a %d×%d kernel does not fit the padded %d×%d input", op, k, k, x[2], x[3])
	}
	return s, nil
}

// Do computes the convolution.
func (op Conv2d) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 3); err != nil {
		return nil, err
	}
	s, err := op.shape(values[0].Shape(), values[1].Shape())
	if err != nil {
		return nil, err
	}
	return byDtype(op, values,
		func(v []gorgonia.Value) (gorgonia.Value, error) { return conv2dDo[float32](s, v) },
		func(v []gorgonia.Value) (gorgonia.Value, error) { return conv2dDo[float64](s, v) })
}

func conv2dDo[T kernels.Float](s kernels.ConvShape, v []gorgonia.Value) (gorgonia.Value, error) {
	y := newTensor[T](s.Batch, s.OutC, s.OutH, s.OutW)
	kernels.Conv2d(floats[T](y), floats[T](v[0]), floats[T](v[1]), floats[T](v[2]), s)
	return y, nil
}

// Launch computes the convolution.
func (op Conv2d) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error {
	s, err := op.shape(shapes[0], shapes[1])
	if err != nil {
		return err
	}
	k.Conv2d(out, args[0], args[1], args[2], s)
	return nil
}

// String names the op with its padding.
func (op Conv2d) String() string { return fmt.Sprintf("Conv2d(pad=%d)", op.Pad) }

// WriteHash writes the op's identity to h.
func (op Conv2d) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op Conv2d) Hashcode() uint32 { return hashcode(op) }

// DiffWRT reports that Conv2d is differentiable in all three inputs.
func (Conv2d) DiffWRT(int) []bool { return []bool{true, true, true} }

// SymDiff returns the gradient nodes for x, W and b given the gradient of
// the output.
func (op Conv2d) SymDiff(inputs gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	x, w := inputs[0], inputs[1]
	dx, err := gorgonia.ApplyOp(Conv2dInputGrad{Pad: op.Pad}, grad, w)
	if err != nil {
		return nil, fmt.Errorf("%v input gradient: %w", op, err)
	}
	dw, err := gorgonia.ApplyOp(Conv2dWeightGrad{Pad: op.Pad}, x, grad)
	if err != nil {
		return nil, fmt.Errorf("%v weight gradient: %w", op, err)
	}
	db, err := gorgonia.ApplyOp(Conv2dBiasGrad{}, grad)
	if err != nil {
		return nil, fmt.Errorf("%v bias gradient: %w", op, err)
	}
	return gorgonia.Nodes{dx, dw, db}, nil
}

// Conv2dInputGrad is the gradient of Conv2d with respect to x, given the
// output gradient g [batch, out, H', W'] and W [out, in, k, k]: a
// [batch, in, H'−2·Pad+k−1, W'−2·Pad+k−1] tensor.
type Conv2dInputGrad struct {
	base
	Pad int
}

// Arity is 2: g, W.
func (Conv2dInputGrad) Arity() int { return 2 }

// Type is (4-tensor, 4-tensor) → 4-tensor.
func (Conv2dInputGrad) Type() hm.Type {
	return hm.NewFnType(tensorType(4), tensorType(4), tensorType(4))
}

// shape returns the forward convolution whose output gradient is g.
func (op Conv2dInputGrad) shape(g, w tensor.Shape) (kernels.ConvShape, error) {
	if len(g) != 4 || len(w) != 4 || g[1] != w[0] || w[2] != w[3] || w[2] <= 0 || op.Pad < 0 {
		return kernels.ConvShape{}, fmt.Errorf("%v: gradient %v and weights %v do not fit", op, g, w)
	}
	k := w[2]
	s := kernels.ConvShape{Batch: g[0], InC: w[1], InH: g[2] - 2*op.Pad + k - 1, InW: g[3] - 2*op.Pad + k - 1,
		OutC: w[0], OutH: g[2], OutW: g[3], Kernel: k, Pad: op.Pad}
	if s.InH <= 0 || s.InW <= 0 {
		return kernels.ConvShape{}, fmt.Errorf("%v: no input fits gradient %v and weights %v", op, g, w)
	}
	return s, nil
}

// InferShape returns the input's shape.
func (op Conv2dInputGrad) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	shapes, err := shapesOf(op, inputs, 2)
	if err != nil {
		return nil, err
	}
	s, err := op.shape(shapes[0], shapes[1])
	if err != nil {
		return nil, err
	}
	return tensor.Shape{s.Batch, s.InC, s.InH, s.InW}, nil
}

// Do computes the gradient.
func (op Conv2dInputGrad) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 2); err != nil {
		return nil, err
	}
	s, err := op.shape(values[0].Shape(), values[1].Shape())
	if err != nil {
		return nil, err
	}
	return byDtype(op, values,
		func(v []gorgonia.Value) (gorgonia.Value, error) { return conv2dInputGradDo[float32](s, v) },
		func(v []gorgonia.Value) (gorgonia.Value, error) { return conv2dInputGradDo[float64](s, v) })
}

func conv2dInputGradDo[T kernels.Float](s kernels.ConvShape, v []gorgonia.Value) (gorgonia.Value, error) {
	dx := newTensor[T](s.Batch, s.InC, s.InH, s.InW)
	kernels.Conv2dInputGrad(floats[T](dx), floats[T](v[0]), floats[T](v[1]), s)
	return dx, nil
}

// Launch computes the gradient.
func (op Conv2dInputGrad) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error {
	s, err := op.shape(shapes[0], shapes[1])
	if err != nil {
		return err
	}
	k.Conv2dInputGrad(out, args[0], args[1], s)
	return nil
}

// String names the op with its padding.
func (op Conv2dInputGrad) String() string { return fmt.Sprintf("Conv2dInputGrad(pad=%d)", op.Pad) }

// WriteHash writes the op's identity to h.
func (op Conv2dInputGrad) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op Conv2dInputGrad) Hashcode() uint32 { return hashcode(op) }

// Conv2dWeightGrad is the gradient of Conv2d with respect to W, given the
// input x [batch, in, H, W] and the output gradient g [batch, out, H', W']:
// an [out, in, k, k] tensor with k = H+2·Pad−H'+1.
type Conv2dWeightGrad struct {
	base
	Pad int
}

// Arity is 2: x, g.
func (Conv2dWeightGrad) Arity() int { return 2 }

// Type is (4-tensor, 4-tensor) → 4-tensor.
func (Conv2dWeightGrad) Type() hm.Type {
	return hm.NewFnType(tensorType(4), tensorType(4), tensorType(4))
}

// shape returns the forward convolution of input x whose output gradient
// is g.
func (op Conv2dWeightGrad) shape(x, g tensor.Shape) (kernels.ConvShape, error) {
	if len(x) != 4 || len(g) != 4 || x[0] != g[0] || op.Pad < 0 {
		return kernels.ConvShape{}, fmt.Errorf("%v: input %v and gradient %v do not fit", op, x, g)
	}
	k := x[2] + 2*op.Pad - g[2] + 1
	if k <= 0 || x[3]+2*op.Pad-g[3]+1 != k {
		return kernels.ConvShape{}, fmt.Errorf("%v: no square kernel maps input %v to gradient %v", op, x, g)
	}
	return kernels.ConvShape{Batch: x[0], InC: x[1], InH: x[2], InW: x[3], OutC: g[1], OutH: g[2], OutW: g[3],
		Kernel: k, Pad: op.Pad}, nil
}

// InferShape returns the weights' shape.
func (op Conv2dWeightGrad) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	shapes, err := shapesOf(op, inputs, 2)
	if err != nil {
		return nil, err
	}
	s, err := op.shape(shapes[0], shapes[1])
	if err != nil {
		return nil, err
	}
	return tensor.Shape{s.OutC, s.InC, s.Kernel, s.Kernel}, nil
}

// Do computes the gradient.
func (op Conv2dWeightGrad) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 2); err != nil {
		return nil, err
	}
	s, err := op.shape(values[0].Shape(), values[1].Shape())
	if err != nil {
		return nil, err
	}
	return byDtype(op, values,
		func(v []gorgonia.Value) (gorgonia.Value, error) { return conv2dWeightGradDo[float32](s, v) },
		func(v []gorgonia.Value) (gorgonia.Value, error) { return conv2dWeightGradDo[float64](s, v) })
}

func conv2dWeightGradDo[T kernels.Float](s kernels.ConvShape, v []gorgonia.Value) (gorgonia.Value, error) {
	dw := newTensor[T](s.OutC, s.InC, s.Kernel, s.Kernel)
	kernels.Conv2dWeightGrad(floats[T](dw), floats[T](v[0]), floats[T](v[1]), s)
	return dw, nil
}

// Launch computes the gradient.
func (op Conv2dWeightGrad) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error {
	s, err := op.shape(shapes[0], shapes[1])
	if err != nil {
		return err
	}
	k.Conv2dWeightGrad(out, args[0], args[1], s)
	return nil
}

// String names the op with its padding.
func (op Conv2dWeightGrad) String() string { return fmt.Sprintf("Conv2dWeightGrad(pad=%d)", op.Pad) }

// WriteHash writes the op's identity to h.
func (op Conv2dWeightGrad) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op Conv2dWeightGrad) Hashcode() uint32 { return hashcode(op) }

// Conv2dBiasGrad is the gradient of Conv2d with respect to b: the output
// gradient g [batch, out, H', W'] summed over images and positions, [out].
type Conv2dBiasGrad struct{ base }

// Arity is 1: g.
func (Conv2dBiasGrad) Arity() int { return 1 }

// Type is 4-tensor → vector.
func (Conv2dBiasGrad) Type() hm.Type { return hm.NewFnType(tensorType(4), tensorType(1)) }

// shape returns the convolution shape that the kernel needs of g.
func (op Conv2dBiasGrad) shape(g tensor.Shape) (kernels.ConvShape, error) {
	if len(g) != 4 {
		return kernels.ConvShape{}, fmt.Errorf("%v: expected a [N, C, H, W] gradient, got %v", op, g)
	}
	return kernels.ConvShape{Batch: g[0], OutC: g[1], OutH: g[2], OutW: g[3]}, nil
}

// InferShape returns [out].
func (op Conv2dBiasGrad) InferShape(inputs ...gorgonia.DimSizer) (tensor.Shape, error) {
	shapes, err := shapesOf(op, inputs, 1)
	if err != nil {
		return nil, err
	}
	s, err := op.shape(shapes[0])
	if err != nil {
		return nil, err
	}
	return tensor.Shape{s.OutC}, nil
}

// Do sums the gradient per channel.
func (op Conv2dBiasGrad) Do(values ...gorgonia.Value) (gorgonia.Value, error) {
	if err := checkArity(op, values, 1); err != nil {
		return nil, err
	}
	s, err := op.shape(values[0].Shape())
	if err != nil {
		return nil, err
	}
	return byDtype(op, values,
		func(v []gorgonia.Value) (gorgonia.Value, error) { return conv2dBiasGradDo[float32](s, v) },
		func(v []gorgonia.Value) (gorgonia.Value, error) { return conv2dBiasGradDo[float64](s, v) })
}

func conv2dBiasGradDo[T kernels.Float](s kernels.ConvShape, v []gorgonia.Value) (gorgonia.Value, error) {
	db := newTensor[T](s.OutC)
	kernels.Conv2dBiasGrad(floats[T](db), floats[T](v[0]), s.Batch, s.OutC, s.OutH*s.OutW)
	return db, nil
}

// Launch sums the gradient per channel.
func (op Conv2dBiasGrad) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error {
	s, err := op.shape(shapes[0])
	if err != nil {
		return err
	}
	k.Conv2dBiasGrad(out, args[0], s)
	return nil
}

// String names the op.
func (Conv2dBiasGrad) String() string { return "Conv2dBiasGrad" }

// WriteHash writes the op's identity to h.
func (op Conv2dBiasGrad) WriteHash(h hash.Hash) { writeHash(h, op) }

// Hashcode is the op's hash.
func (op Conv2dBiasGrad) Hashcode() uint32 { return hashcode(op) }
