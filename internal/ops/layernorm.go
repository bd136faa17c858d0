package ops

import (
	"fmt"

	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/perfmodel"
)

// DefaultLayerNormEps is the ε of PyTorch's nn.LayerNorm.
const DefaultLayerNormEps = 1e-5

// LayerNorm is PyTorch's nn.LayerNorm over the last axis: each row of x
// [rows, d] is normalised to zero mean and unit (biased) variance, with Eps
// added to the variance, then scaled by gamma [d] and shifted by beta [d].
type LayerNorm struct {
	Eps float64
}

func (LayerNorm) signature() []int { return []int{2, 1, 1, 2} }

func (LayerNorm) shape(in []tensor.Shape) (tensor.Shape, error) {
	x, gamma, beta := in[0], in[1], in[2]
	if gamma[0] != x[1] || beta[0] != x[1] {
		return nil, fmt.Errorf("shapes x %v, gamma %v, beta %v do not fit", x, gamma, beta)
	}
	return x, nil
}

func (op LayerNorm) kernel() kernel {
	return call3(fixed(op.Eps), hostmath.LayerNorm, hostmath.LayerNorm, device.Kernels.LayerNorm)
}

// grads: x's and gamma's recompute each row's mean and variance from x
// rather than keep them (normGradsOf); beta's is the column sums of g, as
// Linear's bias's.
func (op LayerNorm) grads() []grad {
	return append(normGradsOf(LayerNormInputGrad{Eps: op.Eps}, LayerNormWeightGrad{Eps: op.Eps}),
		gradOf(LinearBiasGrad{}, gArg))
}

// LayerNormInputGrad is the gradient of LayerNorm with respect to x, given
// x, gamma and the output gradient g, with LayerNorm's Eps (normgrad.go).
type LayerNormInputGrad = normInputGrad[LayerNorm]

// LayerNormWeightGrad is the gradient of LayerNorm with respect to gamma,
// given x and the output gradient g, with LayerNorm's Eps: the column sums
// of g ⊙ x̂ (normgrad.go).
type LayerNormWeightGrad = normWeightGrad[LayerNorm]

// The normalisation in the performance model: a row reduction
// (perfmodel.ClassNormalisation), as its gradients (normgrad.go).
func (LayerNorm) class() string { return perfmodel.ClassNormalisation }

// cost: about 8 operations per element (mean, variance, normalise, scale
// and shift).
func (LayerNorm) cost(in []tensor.Shape, out tensor.Shape) device.Cost { return perElement(in, out, 8) }

// The normalisation, under 16-bit precision: read and stored in float32
// (autocast's fp32 list: softmax, layer norm, the losses, sums).
func (LayerNorm) cast() levers.Cast { return levers.CastFP32 }
