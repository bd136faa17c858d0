package ops

import (
	"fmt"

	"gorgonia.org/tensor"

	"gpuz/internal/hostmath"
)

// Conv2d is PyTorch's nn.Conv2d with stride 1, a square kernel, Pad zeros
// on every side and a bias: inputs x [batch, in, H, W], W [out, in, k, k]
// and b [out]; output [batch, out, H+2·Pad−k+1, W+2·Pad−k+1].
type Conv2d struct {
	Pad int
}

func (Conv2d) signature() []int { return []int{4, 4, 1, 4} }

func (op Conv2d) shape(in []tensor.Shape) (tensor.Shape, error) {
	s, err := op.conv(in)
	if err != nil {
		return nil, err
	}
	if b := in[2]; len(b) != 1 || b[0] != s.OutC {
		return nil, fmt.Errorf("bias %v does not fit weights %v", b, in[1])
	}
	return tensor.Shape{s.Batch, s.OutC, s.OutH, s.OutW}, nil
}

// conv returns the convolution of input x by weights W, or why they do not
// fit.
func (op Conv2d) conv(in []tensor.Shape) (hostmath.ConvShape, error) {
	x, w := in[0], in[1]
	if op.Pad < 0 {
		return hostmath.ConvShape{}, fmt.Errorf("negative padding")
	}
	if len(x) != 4 || len(w) != 4 || w[1] != x[1] || w[2] != w[3] || w[2] <= 0 {
		return hostmath.ConvShape{}, fmt.Errorf("input %v and weights %v do not fit (want [N, C, H, W] and [M, C, k, k])", x, w)
	}
	k := w[2]
	s := hostmath.ConvShape{Batch: x[0], InC: x[1], InH: x[2], InW: x[3], OutC: w[0],
		OutH: hostmath.ConvOutSize(x[2], k, op.Pad), OutW: hostmath.ConvOutSize(x[3], k, op.Pad), Kernel: k, Pad: op.Pad}
	if s.OutH <= 0 || s.OutW <= 0 {
		return hostmath.ConvShape{}, fmt.Errorf("a %d×%d kernel does not fit the padded %d×%d input", k, k, x[2], x[3])
	}
	return s, nil
}

func (op Conv2d) host() host { return hostOf(op, conv2dHost[float32], conv2dHost[float64]) }

func conv2dHost[T hostmath.Float](op Conv2d, h hostArgs[T]) error {
	return sized(op.conv, h.shapes, func(s hostmath.ConvShape) {
		hostmath.Conv2d(h.out, h.in[0], h.in[1], h.in[2], s)
	})
}

func (op Conv2d) launch(d launchArgs) error {
	return sized(op.conv, d.shapes, func(s hostmath.ConvShape) {
		d.k.Conv2d(d.out, d.args[0], d.args[1], d.args[2], s)
	})
}

func (op Conv2d) grads() []grad {
	return []grad{
		gradOf(Conv2dInputGrad(op), gArg, 1),
		gradOf(Conv2dWeightGrad(op), 0, gArg),
		gradOf(Conv2dBiasGrad{}, gArg),
	}
}

// Conv2dInputGrad is the gradient of Conv2d with respect to x, given the
// output gradient g [batch, out, H', W'] and W [out, in, k, k]: a
// [batch, in, H'−2·Pad+k−1, W'−2·Pad+k−1] tensor.
type Conv2dInputGrad struct {
	Pad int
}

func (Conv2dInputGrad) signature() []int { return []int{4, 4, 4} }

// conv returns the forward convolution whose output gradient is g.
func (op Conv2dInputGrad) conv(in []tensor.Shape) (hostmath.ConvShape, error) {
	g, w := in[0], in[1]
	if len(g) != 4 || len(w) != 4 || g[1] != w[0] || w[2] != w[3] || w[2] <= 0 || op.Pad < 0 {
		return hostmath.ConvShape{}, fmt.Errorf("gradient %v and weights %v do not fit", g, w)
	}
	k := w[2]
	s := hostmath.ConvShape{Batch: g[0], InC: w[1], InH: g[2] - 2*op.Pad + k - 1, InW: g[3] - 2*op.Pad + k - 1,
		OutC: w[0], OutH: g[2], OutW: g[3], Kernel: k, Pad: op.Pad}
	if s.InH <= 0 || s.InW <= 0 {
		return hostmath.ConvShape{}, fmt.Errorf("no input fits gradient %v and weights %v", g, w)
	}
	return s, nil
}

func (op Conv2dInputGrad) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.conv, in, func(s hostmath.ConvShape) tensor.Shape { return tensor.Shape{s.Batch, s.InC, s.InH, s.InW} })
}

func (op Conv2dInputGrad) host() host {
	return hostOf(op, conv2dInputGradHost[float32], conv2dInputGradHost[float64])
}

func conv2dInputGradHost[T hostmath.Float](op Conv2dInputGrad, h hostArgs[T]) error {
	return sized(op.conv, h.shapes, func(s hostmath.ConvShape) { hostmath.Conv2dInputGrad(h.out, h.in[0], h.in[1], s) })
}

func (op Conv2dInputGrad) launch(d launchArgs) error {
	return sized(op.conv, d.shapes, func(s hostmath.ConvShape) { d.k.Conv2dInputGrad(d.out, d.args[0], d.args[1], s) })
}

// Conv2dWeightGrad is the gradient of Conv2d with respect to W, given the
// input x [batch, in, H, W] and the output gradient g [batch, out, H', W']:
// an [out, in, k, k] tensor with k = H+2·Pad−H'+1.
type Conv2dWeightGrad struct {
	Pad int
}

func (Conv2dWeightGrad) signature() []int { return []int{4, 4, 4} }

// conv returns the forward convolution of input x whose output gradient is
// g.
func (op Conv2dWeightGrad) conv(in []tensor.Shape) (hostmath.ConvShape, error) {
	x, g := in[0], in[1]
	if len(x) != 4 || len(g) != 4 || x[0] != g[0] || op.Pad < 0 {
		return hostmath.ConvShape{}, fmt.Errorf("input %v and gradient %v do not fit", x, g)
	}
	k := x[2] + 2*op.Pad - g[2] + 1
	if k <= 0 || x[3]+2*op.Pad-g[3]+1 != k {
		return hostmath.ConvShape{}, fmt.Errorf("no square kernel maps input %v to gradient %v", x, g)
	}
	return hostmath.ConvShape{Batch: x[0], InC: x[1], InH: x[2], InW: x[3], OutC: g[1], OutH: g[2], OutW: g[3],
		Kernel: k, Pad: op.Pad}, nil
}

func (op Conv2dWeightGrad) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.conv, in, func(s hostmath.ConvShape) tensor.Shape { return tensor.Shape{s.OutC, s.InC, s.Kernel, s.Kernel} })
}

func (op Conv2dWeightGrad) host() host {
	return hostOf(op, conv2dWeightGradHost[float32], conv2dWeightGradHost[float64])
}

func conv2dWeightGradHost[T hostmath.Float](op Conv2dWeightGrad, h hostArgs[T]) error {
	return sized(op.conv, h.shapes, func(s hostmath.ConvShape) { hostmath.Conv2dWeightGrad(h.out, h.in[0], h.in[1], s) })
}

func (op Conv2dWeightGrad) launch(d launchArgs) error {
	return sized(op.conv, d.shapes, func(s hostmath.ConvShape) { d.k.Conv2dWeightGrad(d.out, d.args[0], d.args[1], s) })
}

// Conv2dBiasGrad is the gradient of Conv2d with respect to b: the output
// gradient g [batch, out, H', W'] summed over images and positions, [out].
type Conv2dBiasGrad struct{}

func (Conv2dBiasGrad) signature() []int { return []int{4, 1} }

func (Conv2dBiasGrad) shape(in []tensor.Shape) (tensor.Shape, error) { return biasShape(in[0], 4) }

func (op Conv2dBiasGrad) host() host {
	return hostOf(op, conv2dBiasGradHost[float32], conv2dBiasGradHost[float64])
}

func conv2dBiasGradHost[T hostmath.Float](_ Conv2dBiasGrad, h hostArgs[T]) error {
	g := h.shapes[0]
	hostmath.Conv2dBiasGrad(h.out, h.in[0], g[0], g[1], g[2]*g[3])
	return nil
}

func (Conv2dBiasGrad) launch(d launchArgs) error {
	g := d.shapes[0]
	d.k.Conv2dBiasGrad(d.out, d.args[0], hostmath.ConvShape{Batch: g[0], OutC: g[1], OutH: g[2], OutW: g[3]})
	return nil
}
