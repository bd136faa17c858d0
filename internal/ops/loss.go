package ops

import (
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/perfmodel"
)

// MSE is the mean squared error between a prediction and a target of the
// same shape: mean((pred − target)²), a scalar. It is differentiable in the
// prediction only, as the target is data.
type MSE struct {
	Dims int // dimensions of the input tensors
}

func (op MSE) signature() []int { return []int{op.Dims, op.Dims, 0} }

func (MSE) shape(in []tensor.Shape) (tensor.Shape, error) {
	if _, err := sameShape(in); err != nil {
		return nil, err
	}
	return tensor.ScalarShape(), nil
}

func (op MSE) kernel() kernel {
	return kernel{hostOf(op, mseHost, mseHost), op.launch}
}

func mseHost[T hostmath.Float](_ MSE, h hostArgs[T]) error {
	h.out[0] = T(hostmath.MeanSquaredError(h.in[0], h.in[1]))
	return nil
}

func (MSE) launch(d launchArgs) error {
	d.k.MeanSquaredError(d.out, d.args[0], d.args[1])
	return nil
}

func (op MSE) grads() []grad { return []grad{gradOf(MSEGrad(op), 0, 1, gArg), nil} }

// MSEGrad is the gradient of MSE with respect to the prediction, given the
// prediction, the target and the scalar gradient of the loss (the seed):
// seed · 2(pred − target)/n.
type MSEGrad struct {
	Dims int // dimensions of the input tensors
}

func (op MSEGrad) signature() []int { return []int{op.Dims, op.Dims, 0, op.Dims} }

func (MSEGrad) shape(in []tensor.Shape) (tensor.Shape, error) { return sameShape(in[:2]) }

func (op MSEGrad) kernel() kernel {
	return kernel{hostOf(op, mseGradHost, mseGradHost), op.launch}
}

func mseGradHost[T hostmath.Float](_ MSEGrad, h hostArgs[T]) error {
	hostmath.MeanSquaredErrorGrad(h.out, h.in[0], h.in[1], h.in[2][0])
	return nil
}

func (MSEGrad) launch(d launchArgs) error {
	d.k.MeanSquaredErrorGrad(d.out, d.args[0], d.args[1], d.args[2])
	return nil
}

// Mean is the mean of all elements of a tensor, a scalar: what evaluation
// accumulates over batches.
type Mean struct {
	Dims int // dimensions of the input tensors
}

func (op Mean) signature() []int { return []int{op.Dims, 0} }

func (Mean) shape([]tensor.Shape) (tensor.Shape, error) { return tensor.ScalarShape(), nil }

func (op Mean) kernel() kernel {
	return kernel{hostOf(op, meanHost, meanHost), op.launch}
}

func meanHost[T hostmath.Float](_ Mean, h hostArgs[T]) error {
	h.out[0] = T(hostmath.Sum(h.in[0]) / float64(len(h.in[0])))
	return nil
}

func (Mean) launch(d launchArgs) error {
	d.k.Mean(d.out, d.args[0])
	return nil
}

func (op Mean) grads() []grad { return []grad{gradOf(MeanGrad(op), 0, gArg)} }

// MeanGrad is the gradient of Mean: every element is seed/n, given the
// input (for its shape) and the scalar seed.
type MeanGrad struct {
	Dims int // dimensions of the input tensors
}

func (op MeanGrad) signature() []int { return []int{op.Dims, 0, op.Dims} }

func (MeanGrad) shape(in []tensor.Shape) (tensor.Shape, error) { return in[0], nil }

func (op MeanGrad) kernel() kernel {
	return kernel{hostOf(op, meanGradHost, meanGradHost), op.launch}
}

func meanGradHost[T hostmath.Float](_ MeanGrad, h hostArgs[T]) error {
	fill := h.in[1][0] * (1 / T(len(h.out)))
	for i := range h.out {
		h.out[i] = fill
	}
	return nil
}

func (MeanGrad) launch(d launchArgs) error {
	d.k.Fill(d.out, d.args[1], 1/float32(d.out.Len()))
	return nil
}

// cost: a subtraction, a square and a sum per element.
func (MSE) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return stream(in, out, 3*elemsOf(in[0]))
}

// cost: a subtraction and two multiplications per element.
func (MSEGrad) cost(in []tensor.Shape, out tensor.Shape) device.Cost { return perElement(in, out, 3) }

// cost: one addition per element.
func (Mean) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return stream(in, out, elemsOf(in[0]))
}

// cost: a fill: the seed read, the output written; the input gives only
// the shape and is not read.
func (MeanGrad) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return device.Cost{ReadBytes: bytesOf(in[1]), WriteBytes: bytesOf(out)}
}

// The reductions, under 16-bit precision: read and stored in float32
// (autocast's fp32 list: softmax, layer norm, the losses, sums).
func (MSE) cast() levers.Cast      { return levers.CastFP32 }
func (MSEGrad) cast() levers.Cast  { return levers.CastFP32 }
func (Mean) cast() levers.Cast     { return levers.CastFP32 }
func (MeanGrad) cast() levers.Cast { return levers.CastFP32 }

// Element-wise in the performance model: memory-bound or nearly
// (perfmodel.ClassElementwise).
func (MSE) class() string      { return perfmodel.ClassElementwise }
func (MSEGrad) class() string  { return perfmodel.ClassElementwise }
func (Mean) class() string     { return perfmodel.ClassElementwise }
func (MeanGrad) class() string { return perfmodel.ClassElementwise }
