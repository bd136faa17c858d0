package ops

import (
	"fmt"

	"gorgonia.org/tensor"

	"gpuz/internal/levers"
	"gpuz/internal/perfmodel"
)

// normInputGrad is what the input gradients of the row normalisations
// (LayerNormInputGrad, RMSNormInputGrad) share: their inputs x [rows, d],
// the scale [d] and the output gradient g [rows, d], and the gradient's
// shape, x's; its class and cast are a normalisation's. Each embeds it
// and adds its kernel and cost.
type normInputGrad struct{}

func (normInputGrad) signature() []int { return []int{2, 1, 2, 2} }

func (normInputGrad) shape(in []tensor.Shape) (tensor.Shape, error) {
	x, scale, g := in[0], in[1], in[2]
	if !x.Eq(g) || scale[0] != x[1] {
		return nil, fmt.Errorf("shapes x %v, scale %v, gradient %v do not fit", x, scale, g)
	}
	return x, nil
}

// normWeightGrad is what the scale gradients of the row normalisations
// (LayerNormWeightGrad, RMSNormWeightGrad) share: their inputs x and the
// output gradient g, of one shape [rows, d], and the gradient's, one
// entry per column (the column sums of g ⊙ x̂); its class and cast are a
// normalisation's. Each embeds it and adds its kernel and cost.
type normWeightGrad struct{}

func (normWeightGrad) signature() []int { return []int{2, 2, 1} }

func (normWeightGrad) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(sameShape, in, func(x tensor.Shape) tensor.Shape { return tensor.Shape{x[1]} })
}

// The normalisations' gradients in the performance model: row
// reductions (perfmodel.ClassNormalisation).
func (normInputGrad) class() string  { return perfmodel.ClassNormalisation }
func (normWeightGrad) class() string { return perfmodel.ClassNormalisation }

// The normalisations' gradients, under 16-bit precision: read and stored
// in float32 (autocast's fp32 list: layer norm; LlamaRMSNorm computes in
// float32 itself).
func (normInputGrad) cast() levers.Cast  { return levers.CastFP32 }
func (normWeightGrad) cast() levers.Cast { return levers.CastFP32 }
