package ops

import (
	"fmt"

	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/perfmodel"
)

// Rotary is the rotary position embedding of the Llama family
// (transformers' apply_rotary_pos_emb, rotate_half convention) applied in
// place in a packed row: inputs x [tokens, width], cos and sin
// [SeqLen, HeadDim/2] (constants the model computes from the config's
// inverse frequencies); output [tokens, width]. Row r is the token at
// position r mod SeqLen; each of its first Heads heads of HeadDim columns
// has its halves x1 = x[j], x2 = x[j + HeadDim/2] turned to
// x1·cos − x2·sin and x2·cos + x1·sin (in float32 as transformers computes
// q·cos + rotate_half(q)·sin); the columns from Heads·HeadDim on (a packed
// row's values) are copied unchanged. It is differentiable in x only.
type Rotary struct {
	Heads, HeadDim, SeqLen int
}

// RotaryGrad is the gradient of Rotary with respect to x, given the output
// gradient g [tokens, width] and the tables: each head rotated by the
// opposite angle (the rotation's transpose), the other columns passed
// through.
type RotaryGrad struct {
	Heads, HeadDim, SeqLen int
}

func (Rotary) signature() []int     { return []int{2, 2, 2, 2} }
func (RotaryGrad) signature() []int { return []int{2, 2, 2, 2} }

// rotaryShape reads the layout off the shapes of x (or g) and the tables
// and checks it: HeadDim even, rows of at least Heads·HeadDim columns,
// whole sequences, tables of [SeqLen, HeadDim/2].
func rotaryShape(heads, headDim, seqLen int, in []tensor.Shape) (hostmath.RotaryShape, error) {
	x, cos, sin := in[0], in[1], in[2]
	s := hostmath.RotaryShape{Heads: heads, HeadDim: headDim, SeqLen: seqLen, Width: x[1]}
	if err := s.Check(); err != nil {
		return s, err
	}
	table := tensor.Shape{seqLen, headDim / 2}
	switch {
	case x[0]%seqLen != 0:
		return s, fmt.Errorf("rotary: %d tokens are not whole sequences of %d", x[0], seqLen)
	case !cos.Eq(table) || !sin.Eq(table):
		return s, fmt.Errorf("rotary: tables cos %v and sin %v, want %v", cos, sin, table)
	}
	return s, nil
}

func (op Rotary) size(in []tensor.Shape) (hostmath.RotaryShape, error) {
	return rotaryShape(op.Heads, op.HeadDim, op.SeqLen, in)
}

func (op RotaryGrad) size(in []tensor.Shape) (hostmath.RotaryShape, error) {
	return rotaryShape(op.Heads, op.HeadDim, op.SeqLen, in)
}

func (op Rotary) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.size, in, func(hostmath.RotaryShape) tensor.Shape { return in[0] })
}

func (op RotaryGrad) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.size, in, func(hostmath.RotaryShape) tensor.Shape { return in[0] })
}

func (op Rotary) kernel() kernel {
	return call3(op.size, hostmath.Rotary, hostmath.Rotary, device.Kernels.Rotary)
}

func (op RotaryGrad) kernel() kernel {
	return call3(op.size, hostmath.RotaryGrad, hostmath.RotaryGrad, device.Kernels.RotaryGrad)
}

// grads: x's is the opposite rotation of g; the tables are constants.
func (op Rotary) grads() []grad { return []grad{gradOf(RotaryGrad(op), gArg, 1, 2), nil, nil} }

// cost: 3 operations per rotated element (two products and a sum), none
// for the copied columns; x and the tables read, y written.
func (op Rotary) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return rotaryCost(op.size, in, out)
}

// cost: as Rotary's.
func (op RotaryGrad) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return rotaryCost(op.size, in, out)
}

// rotaryCost is Rotary's and RotaryGrad's cost.
func rotaryCost(size func([]tensor.Shape) (hostmath.RotaryShape, error), in []tensor.Shape, out tensor.Shape) device.Cost {
	return sizedCost(size, in, func(s hostmath.RotaryShape) device.Cost {
		return stream(in, out, 3*int64(in[0][0])*int64(s.Heads*s.HeadDim))
	})
}

// Under 16-bit precision the rotation reads and stores float32, its tables
// being float32: transformers applies it to the 16-bit queries and keys in
// their own type, gpuz keeps it in float32 (autocast's fp32 class) so that
// the tables are not rounded to 16 bits.
func (Rotary) cast() levers.Cast     { return levers.CastFP32 }
func (RotaryGrad) cast() levers.Cast { return levers.CastFP32 }

// Element-wise in the performance model: memory-bound or nearly
// (perfmodel.ClassElementwise).
func (Rotary) class() string     { return perfmodel.ClassElementwise }
func (RotaryGrad) class() string { return perfmodel.ClassElementwise }
