package ops

import (
	"fmt"

	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/perfmodel"
)

// DefaultRMSNormEps is the ε of transformers' LlamaRMSNorm; models read
// their own from the config's rms_norm_eps.
const DefaultRMSNormEps = 1e-6

// RMSNorm is transformers' LlamaRMSNorm over the last axis: each row of x
// [rows, d] is divided by √(mean(x²) + Eps), then scaled by weight [d]
// (y = weight ⊙ x/√(mean(x²) + Eps)); no mean is subtracted and there is no
// shift. The mean of squares is accumulated in float64.
type RMSNorm struct {
	Eps float64
}

func (RMSNorm) signature() []int { return []int{2, 1, 2} }

func (RMSNorm) shape(in []tensor.Shape) (tensor.Shape, error) {
	x, w := in[0], in[1]
	if w[0] != x[1] {
		return nil, fmt.Errorf("shapes x %v and weight %v do not fit", x, w)
	}
	return x, nil
}

func (op RMSNorm) kernel() kernel {
	return call2(fixed(op.Eps), hostmath.RMSNorm, hostmath.RMSNorm, device.Kernels.RMSNorm)
}

// grads recompute each row's root mean square from x rather than keep it,
// as LayerNorm's do (normGradsOf).
func (op RMSNorm) grads() []grad {
	return normGradsOf(RMSNormInputGrad{Eps: op.Eps}, RMSNormWeightGrad{Eps: op.Eps})
}

// RMSNormInputGrad is the gradient of RMSNorm with respect to x, given x,
// the weight and the output gradient g, with RMSNorm's Eps (normgrad.go).
type RMSNormInputGrad = normInputGrad[RMSNorm]

// RMSNormWeightGrad is the gradient of RMSNorm with respect to its weight,
// given x and the output gradient g, with RMSNorm's Eps: the column sums
// of g ⊙ x̂ (normgrad.go).
type RMSNormWeightGrad = normWeightGrad[RMSNorm]

// The normalisation in the performance model: a row reduction
// (perfmodel.ClassNormalisation), as its gradients (normgrad.go).
func (RMSNorm) class() string { return perfmodel.ClassNormalisation }

// cost: about 4 operations per element (square and add, normalise, scale).
func (RMSNorm) cost(in []tensor.Shape, out tensor.Shape) device.Cost { return perElement(in, out, 4) }

// The normalisation, under 16-bit precision: read and stored in float32
// (autocast's fp32 list, as layer norm; LlamaRMSNorm itself computes in
// float32).
func (RMSNorm) cast() levers.Cast { return levers.CastFP32 }
