package ops

import (
	"fmt"
	"reflect"

	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/perfmodel"
)

// rowNorm is the row normalisations, by their forward specs: the type
// parameter of their gradients' specs, normInputGrad and normWeightGrad,
// which read their kernels and costs from gradsOf. A normalisation whose
// gradients take these inputs joins the union and gradsOf's switch.
type rowNorm interface{ LayerNorm | RMSNorm }

// normGrads is what the gradients of one row normalisation have of their
// own: the kernel of the gradient with respect to x (from x, the scale and
// the output gradient g) and that of the gradient with respect to the
// scale (from x and g), each for a given ε, and the operations each does
// per element of x.
type normGrads struct {
	input, weight           func(eps float64) kernel
	inputFlops, weightFlops int64
}

// gradsOf is the normGrads of the row normalisation N, a row of rowNorm's
// table.
func gradsOf[N rowNorm]() normGrads {
	var n N
	switch any(n).(type) {
	case LayerNorm:
		// x's gradient: about 12 operations per element (the statistics
		// recomputed, two row sums and the combination); gamma's: about 8
		// per element of x (x̂ recomputed, g·x̂ summed).
		return normGrads{
			input:      callWith3(hostmath.LayerNormInputGrad, hostmath.LayerNormInputGrad, device.Kernels.LayerNormInputGrad),
			weight:     callWith2(hostmath.LayerNormWeightGrad, hostmath.LayerNormWeightGrad, device.Kernels.LayerNormWeightGrad),
			inputFlops: 12, weightFlops: 8,
		}
	case RMSNorm:
		// x's gradient: about 9 operations per element (the statistic
		// recomputed, the row sum of ĝ ⊙ x̂ and the combination); the
		// weight's: about 5 per element of x (the statistic recomputed,
		// g·x̂ summed).
		return normGrads{
			input:      callWith3(hostmath.RMSNormInputGrad, hostmath.RMSNormInputGrad, device.Kernels.RMSNormInputGrad),
			weight:     callWith2(hostmath.RMSNormWeightGrad, hostmath.RMSNormWeightGrad, device.Kernels.RMSNormWeightGrad),
			inputFlops: 9, weightFlops: 5,
		}
	}
	panic(fmt.Sprintf("ops: %T is in rowNorm but has no gradients in gradsOf", n))
}

// callWith2 and callWith3 are call2 and call3 of host math and a device
// kernel whose one parameter, after the output and the inputs, is given
// later: the kernel for each value of it (a row normalisation's ε).
func callWith2[P any](f32 func(y, a, b []float32, p P), f64 func(y, a, b []float64, p P),
	k func(device.Kernels, device.Buffer, device.Buffer, device.Buffer, P)) func(P) kernel {
	return func(p P) kernel { return call2(fixed(p), f32, f64, k) }
}

func callWith3[P any](f32 func(y, a, b, c []float32, p P), f64 func(y, a, b, c []float64, p P),
	k func(device.Kernels, device.Buffer, device.Buffer, device.Buffer, device.Buffer, P)) func(P) kernel {
	return func(p P) kernel { return call3(fixed(p), f32, f64, k) }
}

// normGradsOf wires the gradients of a row normalisation with respect to
// x and to its scale, its inputs 0 and 1, to their specs input (a
// normInputGrad's, from x, the scale and the output gradient) and weight
// (a normWeightGrad's, from x and the output gradient).
func normGradsOf(input, weight Spec) []grad {
	return []grad{gradOf(input, 0, 1, gArg), gradOf(weight, 0, gArg)}
}

// normInputGrad is the gradient of the row normalisation N with respect to
// x, given x [rows, d], the scale [d] and the output gradient g
// [rows, d], with N's ε: LayerNormInputGrad and RMSNormInputGrad, which
// are its instances by name (opName). Its kernel and cost are N's
// normGrads; its class and cast are a normalisation's.
type normInputGrad[N rowNorm] struct {
	Eps float64
}

func (normInputGrad[N]) signature() []int { return []int{2, 1, 2, 2} }

func (normInputGrad[N]) shape(in []tensor.Shape) (tensor.Shape, error) {
	x, scale, g := in[0], in[1], in[2]
	if !x.Eq(g) || scale[0] != x[1] {
		return nil, fmt.Errorf("shapes x %v, scale %v, gradient %v do not fit", x, scale, g)
	}
	return x, nil
}

// normWeightGrad is the gradient of the row normalisation N with respect
// to its scale, given x and the output gradient g, of one shape
// [rows, d], with N's ε: one entry per column (the column sums of
// g ⊙ x̂): LayerNormWeightGrad and RMSNormWeightGrad, which are its
// instances by name (opName). Its kernel and cost are N's normGrads, its
// class and cast a normalisation's.
type normWeightGrad[N rowNorm] struct {
	Eps float64
}

func (normWeightGrad[N]) signature() []int { return []int{2, 2, 1} }

func (normWeightGrad[N]) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(sameShape, in, func(x tensor.Shape) tensor.Shape { return tensor.Shape{x[1]} })
}

// opName is the op's name: its normalisation's and the gradient's, as
// LayerNormInputGrad, which its alias spells and name reads in place of
// the type's own (normInputGrad[gpuz/internal/ops.LayerNorm]).
func (normInputGrad[N]) opName() string  { return reflect.TypeFor[N]().Name() + "InputGrad" }
func (normWeightGrad[N]) opName() string { return reflect.TypeFor[N]().Name() + "WeightGrad" }

func (op normInputGrad[N]) kernel() kernel  { return gradsOf[N]().input(op.Eps) }
func (op normWeightGrad[N]) kernel() kernel { return gradsOf[N]().weight(op.Eps) }

// cost: N's operations per element of x (x's gradient is of x's shape);
// both read every input once and write the output once.
func (normInputGrad[N]) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return perElement(in, out, gradsOf[N]().inputFlops)
}

func (normWeightGrad[N]) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return stream(in, out, gradsOf[N]().weightFlops*elemsOf(in[0]))
}

// The normalisations' gradients in the performance model: row
// reductions (perfmodel.ClassNormalisation).
func (normInputGrad[N]) class() string  { return perfmodel.ClassNormalisation }
func (normWeightGrad[N]) class() string { return perfmodel.ClassNormalisation }

// The normalisations' gradients, under 16-bit precision: read and stored
// in float32 (autocast's fp32 list: layer norm; LlamaRMSNorm computes in
// float32 itself).
func (normInputGrad[N]) cast() levers.Cast  { return levers.CastFP32 }
func (normWeightGrad[N]) cast() levers.Cast { return levers.CastFP32 }
