package ops

import (
	"fmt"

	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
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
	if len(x) != 2 || len(gamma) != 1 || len(beta) != 1 || gamma[0] != x[1] || beta[0] != x[1] {
		return nil, fmt.Errorf("shapes x %v, gamma %v, beta %v do not fit", x, gamma, beta)
	}
	return x, nil
}

func (op LayerNorm) host() host { return hostOf(op, layerNormHost[float32], layerNormHost[float64]) }

func layerNormHost[T hostmath.Float](op LayerNorm, h hostArgs[T]) error {
	hostmath.LayerNorm(h.out, h.in[0], h.in[1], h.in[2], op.Eps)
	return nil
}

func (op LayerNorm) launch(d launchArgs) error {
	d.k.LayerNorm(d.out, d.args[0], d.args[1], d.args[2], op.Eps)
	return nil
}

// grads recompute each row's mean and variance from x rather than keep
// them; beta's gradient is the column sums of g, as Linear's bias's.
func (op LayerNorm) grads() []grad {
	return []grad{
		gradOf(LayerNormInputGrad(op), 0, 1, gArg),
		gradOf(LayerNormWeightGrad(op), 0, gArg),
		gradOf(LinearBiasGrad{}, gArg),
	}
}

// LayerNormInputGrad is the gradient of LayerNorm with respect to x, given
// x, gamma and the output gradient g.
type LayerNormInputGrad struct {
	Eps float64
}

func (LayerNormInputGrad) signature() []int { return []int{2, 1, 2, 2} }

func (LayerNormInputGrad) shape(in []tensor.Shape) (tensor.Shape, error) {
	x, gamma, g := in[0], in[1], in[2]
	if len(x) != 2 || !x.Eq(g) || len(gamma) != 1 || gamma[0] != x[1] {
		return nil, fmt.Errorf("shapes x %v, gamma %v, gradient %v do not fit", x, gamma, g)
	}
	return x, nil
}

func (op LayerNormInputGrad) host() host {
	return hostOf(op, layerNormInputGradHost[float32], layerNormInputGradHost[float64])
}

func layerNormInputGradHost[T hostmath.Float](op LayerNormInputGrad, h hostArgs[T]) error {
	hostmath.LayerNormInputGrad(h.out, h.in[0], h.in[1], h.in[2], op.Eps)
	return nil
}

func (op LayerNormInputGrad) launch(d launchArgs) error {
	d.k.LayerNormInputGrad(d.out, d.args[0], d.args[1], d.args[2], op.Eps)
	return nil
}

// LayerNormWeightGrad is the gradient of LayerNorm with respect to gamma,
// given x and the output gradient g: the column sums of g ⊙ x̂.
type LayerNormWeightGrad struct {
	Eps float64
}

func (LayerNormWeightGrad) signature() []int { return []int{2, 2, 1} }

func (LayerNormWeightGrad) shape(in []tensor.Shape) (tensor.Shape, error) {
	if x, g := in[0], in[1]; len(x) != 2 || !x.Eq(g) {
		return nil, fmt.Errorf("shapes x %v and gradient %v do not fit", x, g)
	}
	return tensor.Shape{in[0][1]}, nil
}

func (op LayerNormWeightGrad) host() host {
	return hostOf(op, layerNormWeightGradHost[float32], layerNormWeightGradHost[float64])
}

func layerNormWeightGradHost[T hostmath.Float](op LayerNormWeightGrad, h hostArgs[T]) error {
	hostmath.LayerNormWeightGrad(h.out, h.in[0], h.in[1], op.Eps)
	return nil
}

func (op LayerNormWeightGrad) launch(d launchArgs) error {
	d.k.LayerNormWeightGrad(d.out, d.args[0], d.args[1], op.Eps)
	return nil
}

// cost: about 8 operations per element (mean, variance, normalise, scale
// and shift).
func (LayerNorm) cost(in []tensor.Shape, out tensor.Shape) device.Cost { return perElement(in, out, 8) }

// cost: about 12 operations per element (the statistics recomputed, two
// row sums and the combination).
func (LayerNormInputGrad) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return perElement(in, out, 12)
}

// cost: about 8 operations per element of x (x̂ recomputed, g·x̂ summed).
func (LayerNormWeightGrad) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return stream(in, out, 8*elemsOf(in[0]))
}
