package ops

import (
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/perfmodel"
)

// Add is the element-wise sum of two tensors of one shape: the residual
// connection x + f(x). It returns a new tensor, never a view of an input.
type Add struct{}

func (Add) signature() []int                              { return []int{0, 0, 0} }
func (Add) shape(in []tensor.Shape) (tensor.Shape, error) { return sameShape(in) }
func (op Add) kernel() kernel {
	return kernel{hostOf(op, addHost, addHost), op.launch}
}
func (Add) grads() []grad { return []grad{passGrad, passGrad} }

func addHost[T hostmath.Float](_ Add, h hostArgs[T]) error {
	hostmath.Add(h.out, h.in[0], h.in[1])
	return nil
}

func (Add) launch(d launchArgs) error {
	d.k.Add(d.out, d.args[0], d.args[1])
	return nil
}

// cost: one addition per element, both inputs read.
func (Add) cost(in []tensor.Shape, out tensor.Shape) device.Cost { return perElement(in, out, 1) }

// Element-wise in the performance model: memory-bound or nearly
// (perfmodel.ClassElementwise).
func (Add) class() string { return perfmodel.ClassElementwise }
