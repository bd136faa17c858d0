package ops

import (
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/perfmodel"
)

// GELUTanh is the tanh form of GELU, element-wise, on a tensor of any
// shape: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), transformers'
// gelu_new (NewGELUActivation, GPT-2's activation), computed in the
// element type in torch's order (see hostmath.GELUTanh).
type GELUTanh struct{}

func (GELUTanh) signature() []int { return []int{0, 0} }

func (GELUTanh) shape(in []tensor.Shape) (tensor.Shape, error) { return in[0], nil }

func (GELUTanh) kernel() kernel {
	return plain1(hostmath.GELUTanh, hostmath.GELUTanh, device.Kernels.GELUTanh)
}

func (GELUTanh) grads() []grad { return []grad{gradOf(GELUTanhGrad{}, 0, gArg)} }

// GELUTanhGrad is the gradient of GELUTanh: given the activation's input x
// and the output gradient g, g times the activation's derivative at x.
type GELUTanhGrad struct{}

func (GELUTanhGrad) signature() []int { return []int{0, 0, 0} }

func (GELUTanhGrad) shape(in []tensor.Shape) (tensor.Shape, error) { return sameShape(in) }

func (op GELUTanhGrad) kernel() kernel {
	return kernel{hostOf(op, geluTanhGradHost, geluTanhGradHost), op.launch}
}

func geluTanhGradHost[T hostmath.Float](_ GELUTanhGrad, h hostArgs[T]) error {
	hostmath.GELUTanhGrad(h.out, h.in[0], h.in[1])
	return nil
}

func (GELUTanhGrad) launch(d launchArgs) error {
	d.k.GELUTanhGrad(d.out, d.args[0], d.args[1])
	return nil
}

// cost: per element, x³ (2 multiplications), the scaling and the sum
// inside tanh (3), tanh, counted as one operation as the exponentials of
// the other kernels are, and 0.5·x·(1 + t) (3): 9; x read and y written.
func (GELUTanh) cost(in []tensor.Shape, out tensor.Shape) device.Cost { return perElement(in, out, 9) }

// cost: per element, tanh's argument as in the forward pass (6), the tanh
// (1), 0.5·(1 + t) (2), 1 − t² (2), the x² factor 1 + 3a·x² (3), the
// products of the second term and its sum (5) and the product with g (1):
// 20; x and g read.
func (GELUTanhGrad) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return perElement(in, out, 20)
}

// Element-wise in the performance model: memory-bound or nearly
// (perfmodel.ClassElementwise).
func (GELUTanh) class() string     { return perfmodel.ClassElementwise }
func (GELUTanhGrad) class() string { return perfmodel.ClassElementwise }
