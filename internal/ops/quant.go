package ops

import (
	"fmt"

	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/quant"
)

// quantLauncher is a spec that can read one argument, its weight, stored
// in a quantized kind (engine.QuantLauncher): the products by a frozen
// weight, Projection and Linear, and their input gradient,
// LinearInputGrad, through
// device.Kernels.QuantXWt and QuantGW, and the token lookup,
// TokenEmbedding, through device.Kernels.QuantEmbedding.
type quantLauncher interface {
	quantOperand() int
	launchQuant(kind quant.Kind, d launchArgs) error
}

// QuantOperand is the argument the op can read quantized; -1 when none.
func (o op) QuantOperand() int {
	if q, ok := o.spec.(quantLauncher); ok {
		return q.quantOperand()
	}
	return -1
}

// LaunchQuant computes the op on a device with argument QuantOperand
// stored in kind, the other arguments and out float32.
func (o op) LaunchQuant(k device.Kernels, kind quant.Kind, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error {
	q, ok := o.spec.(quantLauncher)
	if !ok {
		return fmt.Errorf("%s has no quantized launch", o)
	}
	return q.launchQuant(kind, launchArgs{k: k, out: out, args: args, shapes: shapes})
}

// quantOperand: W, the second argument of y = x·Wᵀ.
func (Projection) quantOperand() int { return 1 }

// launchQuant is launch with W stored in kind.
func (Projection) launchQuant(kind quant.Kind, d launchArgs) error {
	return sized(xwtGemm, d.shapes, func(p gemm) { d.k.QuantXWt(kind, p.m, p.n, p.k, d.args[0], d.args[1], d.out) })
}

// quantOperand: W, the second argument of y = x·Wᵀ + b.
func (Linear) quantOperand() int { return 1 }

// launchQuant is launch with W stored in kind: the product, then the
// bias.
func (Linear) launchQuant(kind quant.Kind, d launchArgs) error {
	return sized(xwtGemm, d.shapes, func(p gemm) {
		d.k.QuantXWt(kind, p.m, p.n, p.k, d.args[0], d.args[1], d.out)
		d.k.AddRowVector(d.out, d.args[2])
	})
}

// quantOperand: W, the second argument of dx = g·W.
func (LinearInputGrad) quantOperand() int { return 1 }

// launchQuant is launch with W [out, in] stored in kind: dx [batch, in]
// = g [batch, out]·W, the product's k being W's rows.
func (op LinearInputGrad) launchQuant(kind quant.Kind, d launchArgs) error {
	return sized(gemmOf(op), d.shapes, func(p gemm) { d.k.QuantGW(kind, p.m, p.k, p.n, d.args[0], d.args[1], d.out) })
}

// quantOperand: the table, the second argument of the lookup.
func (TokenEmbedding) quantOperand() int { return 1 }

// launchQuant is the lookup in a table [vocab, d] stored in kind, only
// the rows named dequantized.
func (TokenEmbedding) launchQuant(kind quant.Kind, d launchArgs) error {
	return d.k.QuantEmbedding(kind, d.out, d.args[0], d.args[1], d.shapes[1][0])
}
