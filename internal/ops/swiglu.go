package ops

import (
	"fmt"

	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/perfmodel"
)

// SwiGLU is the gated MLP's activation of the Llama family on a packed
// input: x [rows, 2n] holds the gate in columns [0, n) and up in [n, 2n)
// (the model fuses gate_proj and up_proj into one weight, as vLLM's
// SiluAndMul reads it); the output [rows, n] is silu(gate)·up,
// silu(z) = z·σ(z), computed as PyTorch's act(gate)·up in float32.
type SwiGLU struct{}

func (SwiGLU) signature() []int { return []int{2, 2} }

// swigluHalf reads n, half of x's columns, off the shapes.
func swigluHalf(in []tensor.Shape) (int, error) {
	if w := in[0][1]; w%2 != 0 {
		return 0, fmt.Errorf("swiglu: %d columns do not split into gate and up halves", w)
	}
	return in[0][1] / 2, nil
}

func (SwiGLU) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(swigluHalf, in, func(n int) tensor.Shape { return tensor.Shape{in[0][0], n} })
}

func (SwiGLU) kernel() kernel {
	return call1(swigluHalf, hostmath.SwiGLU, hostmath.SwiGLU, device.Kernels.SwiGLU)
}

func (SwiGLU) grads() []grad { return []grad{gradOf(SwiGLUGrad{}, 0, gArg)} }

// SwiGLUGrad is the gradient of SwiGLU with respect to x, given x
// [rows, 2n] and the output gradient g [rows, n]: [rows, 2n] holding
// g·up·silu'(gate), silu'(z) = σ(z)·(1 + z·(1 − σ(z))), and g·silu(gate).
type SwiGLUGrad struct{}

func (SwiGLUGrad) signature() []int { return []int{2, 2, 2} }

func (SwiGLUGrad) shape(in []tensor.Shape) (tensor.Shape, error) {
	n, err := swigluHalf(in)
	if err != nil {
		return nil, err
	}
	if g := in[1]; g[0] != in[0][0] || g[1] != n {
		return nil, fmt.Errorf("shapes x %v and gradient %v do not fit", in[0], g)
	}
	return in[0], nil
}

func (SwiGLUGrad) kernel() kernel {
	return call2(swigluHalf, hostmath.SwiGLUGrad, hostmath.SwiGLUGrad, device.Kernels.SwiGLUGrad)
}

// cost: about 6 operations per output element (the exponential counted as
// 3, a sum, a division, the product with up).
func (SwiGLU) cost(in []tensor.Shape, out tensor.Shape) device.Cost { return perElement(in, out, 6) }

// cost: about 12 operations per element of g (the exponential, σ, silu,
// silu' and the two products).
func (SwiGLUGrad) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return stream(in, out, 12*elemsOf(in[1]))
}

// Under 16-bit precision as autocast treats SiLU and mul, which are on
// none of its lists: run in the widest type of the inputs
// (levers.CastPromote), the float32 arithmetic of the kernels on 16-bit
// storage widened.
func (SwiGLU) cast() levers.Cast     { return levers.CastPromote }
func (SwiGLUGrad) cast() levers.Cast { return levers.CastPromote }

// Element-wise in the performance model: memory-bound or nearly
// (perfmodel.ClassElementwise).
func (SwiGLU) class() string     { return perfmodel.ClassElementwise }
func (SwiGLUGrad) class() string { return perfmodel.ClassElementwise }
