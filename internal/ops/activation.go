package ops

import (
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/perfmodel"
)

// DefaultLeakySlope is the negative slope of PyTorch's nn.LeakyReLU.
const DefaultLeakySlope = 0.01

// LeakyReLU is x where x > 0 and Slope·x elsewhere, element-wise, on a
// tensor of any shape.
type LeakyReLU struct {
	Slope float64
}

func (LeakyReLU) signature() []int { return []int{0, 0} }

func (LeakyReLU) shape(in []tensor.Shape) (tensor.Shape, error) { return in[0], nil }

func (op LeakyReLU) kernel() kernel {
	return kernel{hostOf(op, leakyReLUHost, leakyReLUHost), op.launch}
}

func leakyReLUHost[T hostmath.Float](op LeakyReLU, h hostArgs[T]) error {
	hostmath.LeakyReLU(h.out, h.in[0], T(op.Slope))
	return nil
}

func (op LeakyReLU) launch(d launchArgs) error {
	d.k.LeakyReLU(d.out, d.args[0], float32(op.Slope))
	return nil
}

func (op LeakyReLU) grads() []grad { return []grad{gradOf(LeakyReLUGrad(op), 0, gArg)} }

// LeakyReLUGrad is the gradient of LeakyReLU: given the activation's input x
// and the output gradient g, it is g where x > 0 and Slope·g elsewhere.
type LeakyReLUGrad struct {
	Slope float64
}

func (LeakyReLUGrad) signature() []int { return []int{0, 0, 0} }

func (LeakyReLUGrad) shape(in []tensor.Shape) (tensor.Shape, error) { return sameShape(in) }

func (op LeakyReLUGrad) kernel() kernel {
	return kernel{hostOf(op, leakyReLUGradHost, leakyReLUGradHost), op.launch}
}

func leakyReLUGradHost[T hostmath.Float](op LeakyReLUGrad, h hostArgs[T]) error {
	hostmath.LeakyReLUGrad(h.out, h.in[0], h.in[1], T(op.Slope))
	return nil
}

func (op LeakyReLUGrad) launch(d launchArgs) error {
	d.k.LeakyReLUGrad(d.out, d.args[0], d.args[1], float32(op.Slope))
	return nil
}

// cost: a compare and a multiply per element, x read and y written.
func (LeakyReLU) cost(in []tensor.Shape, out tensor.Shape) device.Cost { return perElement(in, out, 1) }

// cost: a compare and a multiply per element, x and g read.
func (LeakyReLUGrad) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return perElement(in, out, 1)
}

// Element-wise in the performance model: memory-bound or nearly
// (perfmodel.ClassElementwise).
func (LeakyReLU) class() string     { return perfmodel.ClassElementwise }
func (LeakyReLUGrad) class() string { return perfmodel.ClassElementwise }
