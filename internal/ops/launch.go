package ops

import (
	"gorgonia.org/tensor"

	"gpuz/internal/device"
)

// Launcher is implemented by every op the engine runs: Launch computes the
// op on a device, from argument buffers whose shapes are given, into out.
// Out never aliases an argument.
type Launcher interface {
	Launch(k device.Kernels, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error
}

// Launch computes x·Wᵀ + b.
func (Linear) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error {
	x, w := shapes[0], shapes[1]
	k.Gemm(false, true, x[0], w[0], x[1], args[0], args[1], out)
	k.AddRowVector(out, args[2])
	return nil
}

// Launch computes g·W.
func (LinearInputGrad) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error {
	g, w := shapes[0], shapes[1]
	k.Gemm(false, false, g[0], w[1], g[1], args[0], args[1], out)
	return nil
}

// Launch computes gᵀ·x.
func (LinearWeightGrad) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error {
	g, x := shapes[0], shapes[1]
	k.Gemm(true, false, g[1], x[1], g[0], args[0], args[1], out)
	return nil
}

// Launch sums the rows of g.
func (LinearBiasGrad) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, _ []tensor.Shape) error {
	k.SumRows(out, args[0])
	return nil
}

// Launch applies the activation.
func (op LeakyReLU) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, _ []tensor.Shape) error {
	k.LeakyReLU(out, args[0], float32(op.Slope))
	return nil
}

// Launch computes the activation's gradient.
func (op LeakyReLUGrad) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, _ []tensor.Shape) error {
	k.LeakyReLUGrad(out, args[0], args[1], float32(op.Slope))
	return nil
}

// Launch computes the loss.
func (MSE) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, _ []tensor.Shape) error {
	k.MeanSquaredError(out, args[0], args[1])
	return nil
}

// Launch computes the loss gradient.
func (MSEGrad) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, _ []tensor.Shape) error {
	k.MeanSquaredErrorGrad(out, args[0], args[1], args[2])
	return nil
}

// Launch computes the mean.
func (Mean) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, _ []tensor.Shape) error {
	k.Mean(out, args[0])
	return nil
}

// Launch fills the gradient.
func (MeanGrad) Launch(k device.Kernels, out device.Buffer, args []device.Buffer, _ []tensor.Shape) error {
	k.Fill(out, args[1], 1/float32(out.Len()))
	return nil
}
