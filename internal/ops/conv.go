package ops

import (
	"fmt"

	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/perfmodel"
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

func (op Conv2d) kernel() kernel {
	return call3(op.conv, hostmath.Conv2d, hostmath.Conv2d, device.Kernels.Conv2d)
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

func (op Conv2dInputGrad) kernel() kernel {
	return call2(op.conv, hostmath.Conv2dInputGrad, hostmath.Conv2dInputGrad, device.Kernels.Conv2dInputGrad)
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

func (op Conv2dWeightGrad) kernel() kernel {
	return call2(op.conv, hostmath.Conv2dWeightGrad, hostmath.Conv2dWeightGrad, device.Kernels.Conv2dWeightGrad)
}

// Conv2dBiasGrad is the gradient of Conv2d with respect to b: the output
// gradient g [batch, out, H', W'] summed over images and positions, [out].
type Conv2dBiasGrad struct{}

func (Conv2dBiasGrad) signature() []int { return []int{4, 1} }

func (Conv2dBiasGrad) shape(in []tensor.Shape) (tensor.Shape, error) { return biasShape(in[0], 4) }

func (op Conv2dBiasGrad) kernel() kernel {
	return kernel{hostOf(op, conv2dBiasGradHost, conv2dBiasGradHost), op.launch}
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

// convCost is the cost of a convolution of shape s computed as the devices
// compute it: im2col writes the column matrix (InC·k² rows, one column per
// output position of every image) reading x, a GEMM per tile reads the
// weights and the columns and writes the output: 2·OutC·InC·k² operations
// per output position.
func convCost(s hostmath.ConvShape) device.Cost {
	positions := int64(s.Batch) * int64(s.OutH) * int64(s.OutW)
	patch := int64(s.InC) * int64(s.Kernel) * int64(s.Kernel)
	cols := 4 * patch * positions
	in := 4 * int64(s.Batch) * int64(s.InC) * int64(s.InH) * int64(s.InW)
	w, out := 4*int64(s.OutC)*patch, 4*int64(s.OutC)*positions
	return device.Cost{FLOPs: 2 * int64(s.OutC) * patch * positions, ReadBytes: in + cols + w, WriteBytes: cols + out}
}

// cost: the convolution (convCost), then the bias pass, which reads the
// output and b and writes the output again.
func (op Conv2d) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return sizedCost(op.conv, in, func(s hostmath.ConvShape) device.Cost {
		return convCost(s).Plus(device.Cost{FLOPs: elemsOf(out), ReadBytes: bytesOf(out, in[2]), WriteBytes: bytesOf(out)})
	})
}

// cost: the weights flipped into the workspace (read and written once),
// then the convolution of g with them, padded by k−1−Pad, back to x's
// shape.
func (op Conv2dInputGrad) cost(in []tensor.Shape, _ tensor.Shape) device.Cost {
	return sizedCost(op.conv, in, func(s hostmath.ConvShape) device.Cost {
		back := hostmath.ConvShape{Batch: s.Batch, InC: s.OutC, InH: s.OutH, InW: s.OutW, OutC: s.InC, OutH: s.InH, OutW: s.InW,
			Kernel: s.Kernel, Pad: s.Kernel - 1 - s.Pad}
		w := bytesOf(in[1])
		return convCost(back).Plus(device.Cost{ReadBytes: w, WriteBytes: w})
	})
}

// cost: im2col of x as in the forward convolution, and the GEMMs g·colsᵀ
// into the weight gradient: 2·OutC·InC·k² operations per output position.
func (op Conv2dWeightGrad) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return sizedCost(op.conv, in, func(s hostmath.ConvShape) device.Cost {
		c := convCost(s)
		// The GEMMs read g where the forward one reads the weights, and
		// write the weights' gradient where it writes the output.
		g, w := bytesOf(in[1]), bytesOf(out)
		c.ReadBytes += g - w
		c.WriteBytes += w - g
		return c
	})
}

// cost: one addition per element of g.
func (Conv2dBiasGrad) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return stream(in, out, elemsOf(in[0]))
}

// The products, under 16-bit precision: operands rounded to 16 bits, sums
// in float32, results stored in 16 bits (autocast's lower-precision list).
func (Conv2d) cast() levers.Cast           { return levers.CastLower }
func (Conv2dInputGrad) cast() levers.Cast  { return levers.CastLower }
func (Conv2dWeightGrad) cast() levers.Cast { return levers.CastLower }

// The reductions, under 16-bit precision: read and stored in float32
// (autocast's fp32 list: softmax, layer norm, the losses, sums).
func (Conv2dBiasGrad) cast() levers.Cast { return levers.CastFP32 }

// The convolutions in the performance model: im2col and a GEMM
// (perfmodel.ClassConvolutions).
func (Conv2d) class() string           { return perfmodel.ClassConvolutions }
func (Conv2dInputGrad) class() string  { return perfmodel.ClassConvolutions }
func (Conv2dWeightGrad) class() string { return perfmodel.ClassConvolutions }

// Element-wise in the performance model: memory-bound or nearly
// (perfmodel.ClassElementwise).
func (Conv2dBiasGrad) class() string { return perfmodel.ClassElementwise }
