package ops

import (
	"fmt"

	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/half"
	"gpuz/internal/levers"
	"gpuz/internal/perfmodel"
)

// Conv1D is GPT-2's Conv1D (transformers' pytorch_utils.Conv1D), the affine
// layer y = x·W + b with the weight stored [in, out], transposed against
// nn.Linear's: inputs x [batch, in], W [in, out] and b [out]; output
// [batch, out]. It is Linear's GEMM with W read as stored, then the bias.
type Conv1D struct{}

func (Conv1D) signature() []int { return []int{2, 2, 1, 2} }

// gemm reads the sizes of the GEMM x·W off the shapes: m the batch, n
// the outputs and k the inputs, b having one entry per output.
func (Conv1D) gemm(in []tensor.Shape) (gemm, error) {
	x, w, b := in[0], in[1], in[2]
	if x[1] != w[0] || b[0] != w[1] {
		return gemm{}, fmt.Errorf("shapes x %v, W %v, b %v do not fit", x, w, b)
	}
	return gemm{m: x[0], n: w[1], k: x[1]}, nil
}

// transposedB: W is stored [in, out] and read as stored.
func (Conv1D) transposedB() bool { return false }

func (op Conv1D) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.gemm, in, gemm.shape)
}

func (op Conv1D) kernel() kernel { return affineKernel(op) }

// halfOperands: x and W in 16 bits, the bias in float32.
func (Conv1D) halfOperands() []bool { return []bool{true, true, false} }

func (op Conv1D) launchHalf(f half.Format, d launchArgs) error { return affineLaunchHalf(op, f, d) }

func (Conv1D) grads() []grad {
	return []grad{gradOf(Conv1DInputGrad{}, gArg, 1), gradOf(Conv1DWeightGrad{}, 0, gArg), gradOf(LinearBiasGrad{}, gArg)}
}

// Conv1DInputGrad is the gradient of Conv1D with respect to x: given the
// output gradient g [batch, out] and W [in, out], dx = g·Wᵀ [batch, in].
type Conv1DInputGrad struct{}

// Conv1DWeightGrad is the gradient of Conv1D with respect to W: given x
// [batch, in] and the output gradient g [batch, out], dW = xᵀ·g [in, out],
// the weight's own layout.
type Conv1DWeightGrad struct{}

func (Conv1DInputGrad) signature() []int   { return []int{2, 2, 2} }
func (Conv1DWeightGrad) signature() []int  { return []int{2, 2, 2} }
func (Conv1DInputGrad) transposed() bool   { return false }
func (Conv1DWeightGrad) transposed() bool  { return true }
func (Conv1DInputGrad) transposedB() bool  { return true }
func (Conv1DWeightGrad) transposedB() bool { return false }

func (op Conv1DInputGrad) shape(in []tensor.Shape) (tensor.Shape, error)  { return gemmShape(op, in) }
func (op Conv1DWeightGrad) shape(in []tensor.Shape) (tensor.Shape, error) { return gemmShape(op, in) }
func (op Conv1DInputGrad) kernel() kernel                                 { return gemmKernel(op) }
func (op Conv1DWeightGrad) kernel() kernel                                { return gemmKernel(op) }

// halfOperands: both factors in 16 bits.
func (Conv1DInputGrad) halfOperands() []bool  { return []bool{true, true} }
func (Conv1DWeightGrad) halfOperands() []bool { return []bool{true, true} }

func (op Conv1DInputGrad) launchHalf(f half.Format, d launchArgs) error {
	return gemmLaunchHalf(op, f, d)
}

func (op Conv1DWeightGrad) launchHalf(f half.Format, d launchArgs) error {
	return gemmLaunchHalf(op, f, d)
}

// cost: the GEMM x·W (2·batch·out·in operations, x and W read, y
// written), then the bias pass, which reads y and b and writes y again.
func (op Conv1D) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return affineCost(op, in, out)
}

// cost: the GEMM g·Wᵀ.
func (op Conv1DInputGrad) cost(in []tensor.Shape, _ tensor.Shape) device.Cost {
	return sizedCost(gemmOf(op), in, func(p gemm) device.Cost { return gemmCost(p.m, p.n, p.k) })
}

// cost: the GEMM xᵀ·g.
func (op Conv1DWeightGrad) cost(in []tensor.Shape, _ tensor.Shape) device.Cost {
	return sizedCost(gemmOf(op), in, func(p gemm) device.Cost { return gemmCost(p.m, p.n, p.k) })
}

// The products, under 16-bit precision: operands rounded to 16 bits, sums
// in float32, results stored in 16 bits (autocast's lower-precision list).
func (Conv1D) cast() levers.Cast           { return levers.CastLower }
func (Conv1DInputGrad) cast() levers.Cast  { return levers.CastLower }
func (Conv1DWeightGrad) cast() levers.Cast { return levers.CastLower }

// The products in the performance model: a GEMM (perfmodel.ClassProducts).
func (Conv1D) class() string           { return perfmodel.ClassProducts }
func (Conv1DInputGrad) class() string  { return perfmodel.ClassProducts }
func (Conv1DWeightGrad) class() string { return perfmodel.ClassProducts }
