package ops

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/perfmodel"
)

// AddPositions adds learned absolute positions (GPT-2's wpe): given x
// [tokens, d], sequences of SeqLen tokens laid one after another (tokens a
// multiple of SeqLen), and the table pos [rows, d] with rows ≥ SeqLen
// (GPT-2's has n_positions rows, of which only the first SeqLen are used),
// row r of the output [tokens, d] is row r of x plus row r mod SeqLen of
// pos. It is differentiable in both: x's gradient is the output's, pos's
// PositionsGrad.
type AddPositions struct {
	SeqLen int // tokens per sequence
}

func (AddPositions) signature() []int { return []int{2, 2, 2} }

// positions reads the table's layout off the shapes of x and pos.
func (op AddPositions) positions(in []tensor.Shape) (hostmath.Positions, error) {
	x, pos := in[0], in[1]
	switch {
	case op.SeqLen <= 0:
		return hostmath.Positions{}, fmt.Errorf("sequence length %d is not positive", op.SeqLen)
	case x[1] != pos[1]:
		return hostmath.Positions{}, fmt.Errorf("shapes x %v and positions %v do not fit", x, pos)
	case x[0]%op.SeqLen != 0:
		return hostmath.Positions{}, fmt.Errorf("%d tokens are not sequences of %d", x[0], op.SeqLen)
	case pos[0] < op.SeqLen:
		return hostmath.Positions{}, fmt.Errorf("positions %v have fewer than %d rows", pos, op.SeqLen)
	}
	return hostmath.Positions{SeqLen: op.SeqLen, Dim: x[1]}, nil
}

func (op AddPositions) shape(in []tensor.Shape) (tensor.Shape, error) {
	if _, err := op.positions(in); err != nil {
		return nil, err
	}
	return in[0], nil
}

func (op AddPositions) kernel() kernel {
	return call2(op.positions, hostmath.AddPositions, hostmath.AddPositions, device.Kernels.AddPositions)
}

func (op AddPositions) grads() []grad { return []grad{passGrad, op.positionsGrad} }

// positionsGrad is the gradient of the table, inputs[1], of its shape.
func (op AddPositions) positionsGrad(inputs gorgonia.Nodes, _, g *gorgonia.Node) (*gorgonia.Node, error) {
	return Apply(PositionsGrad{SeqLen: op.SeqLen, Rows: inputs[1].Shape()[0]}, g)
}

// PositionsGrad is the gradient of AddPositions with respect to its table,
// given the output gradient g [tokens, d]: a [Rows, d] matrix whose row
// s < SeqLen is the sum of the rows r of g with r mod SeqLen = s, added in
// increasing r (deterministic), and whose rows from SeqLen on are zero.
type PositionsGrad struct {
	SeqLen int // tokens per sequence
	Rows   int // rows of the table
}

func (PositionsGrad) signature() []int { return []int{2, 2} }

// positions reads the table's layout off the gradient's shape.
func (op PositionsGrad) positions(in []tensor.Shape) (hostmath.Positions, error) {
	g := in[0]
	switch {
	case op.SeqLen <= 0 || op.Rows < op.SeqLen:
		return hostmath.Positions{}, fmt.Errorf("a table of %d rows does not hold sequences of %d", op.Rows, op.SeqLen)
	case g[0]%op.SeqLen != 0:
		return hostmath.Positions{}, fmt.Errorf("%d tokens are not sequences of %d", g[0], op.SeqLen)
	}
	return hostmath.Positions{SeqLen: op.SeqLen, Dim: g[1]}, nil
}

func (op PositionsGrad) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.positions, in, func(p hostmath.Positions) tensor.Shape { return tensor.Shape{op.Rows, p.Dim} })
}

func (op PositionsGrad) kernel() kernel {
	return call1(op.positions, hostmath.PositionsGrad, hostmath.PositionsGrad, device.Kernels.PositionsGrad)
}

// cost: one addition per element, x read in full and the SeqLen rows of
// the table that are used.
func (op AddPositions) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return device.Cost{FLOPs: elemsOf(out), ReadBytes: bytesOf(in[0], tensor.Shape{op.SeqLen, in[1][1]}), WriteBytes: bytesOf(out)}
}

// cost: each element of g added once into its position's row (g read),
// the table written whole.
func (PositionsGrad) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return stream(in, out, elemsOf(in[0]))
}

// Under 16-bit precision the gradient is a sum, as LinearBiasGrad's:
// float32 (autocast's fp32 list); AddPositions promotes, as Add does.
func (PositionsGrad) cast() levers.Cast { return levers.CastFP32 }

// Element-wise in the performance model: memory-bound or nearly
// (perfmodel.ClassElementwise).
func (AddPositions) class() string  { return perfmodel.ClassElementwise }
func (PositionsGrad) class() string { return perfmodel.ClassElementwise }
