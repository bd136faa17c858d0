package ops

import (
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/half"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/perfmodel"
)

// Projection is nn.Linear without a bias, y = x·Wᵀ, as the Llama family's
// attention and MLP projections are: inputs x [batch, in] and W [out, in];
// output [batch, out]. It runs Linear's product (xwtGemm, xwtLaunch) and
// has Linear's gradients for x and W.
type Projection struct{}

func (Projection) signature() []int { return []int{2, 2, 2} }

func (Projection) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(xwtGemm, in, gemm.shape)
}

func (op Projection) kernel() kernel {
	return kernel{hostOf(op, projectionHost, projectionHost), op.launch}
}

func projectionHost[T hostmath.Float](_ Projection, h hostArgs[T]) error {
	return sized(xwtGemm, h.shapes, func(p gemm) { hostmath.Gemm(false, true, p.m, p.n, p.k, 1, h.in[0], h.in[1], 0, h.out) })
}

func (Projection) launch(d launchArgs) error {
	return sized(xwtGemm, d.shapes, func(p gemm) { xwtLaunch(d, p, nil) })
}

// halfOperands: x and W in 16 bits.
func (Projection) halfOperands() []bool { return []bool{true, true} }

// launchHalf is launch with x and W in 16 bits, summed in float32.
func (Projection) launchHalf(f half.Format, d launchArgs) error {
	return sized(xwtGemm, d.shapes, func(p gemm) { xwtLaunch(d, p, &f) })
}

// grads are Linear's: dx = g·W and dW = gᵀ·x.
func (Projection) grads() []grad {
	return []grad{gradOf(LinearInputGrad{}, gArg, 1), gradOf(LinearWeightGrad{}, gArg, 0)}
}

// cost: the GEMM x·Wᵀ.
func (Projection) cost(in []tensor.Shape, _ tensor.Shape) device.Cost {
	return sizedCost(xwtGemm, in, func(p gemm) device.Cost { return gemmCost(p.m, p.n, p.k) })
}

// The product, under 16-bit precision: operands rounded to 16 bits, sums
// in float32, the result stored in 16 bits (autocast's lower-precision
// list), as Linear.
func (Projection) cast() levers.Cast { return levers.CastLower }

// The products in the performance model: a GEMM (perfmodel.ClassProducts).
func (Projection) class() string { return perfmodel.ClassProducts }
