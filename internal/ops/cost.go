package ops

import (
	"gorgonia.org/tensor"

	"gpuz/internal/device"
)

// Cost returns the work of one launch of the op on inputs of the given
// shapes: its floating-point operations and the bytes of device memory it
// reads and writes, by the op's cost rule (each spec's cost method). Every
// input is counted as read once and the output as written once, plus what
// the kernels do beyond that where it matters (a GEMM's operands, a
// convolution's im2col column matrix, a bias added in a second pass).
// Shapes the op rejects cost nothing.
func (o op) Cost(shapes []tensor.Shape) device.Cost {
	out, err := o.shape(shapes)
	if err != nil {
		return device.Cost{}
	}
	return o.spec.cost(shapes, out)
}

// CostHalf returns the work of one launch of the op's 16-bit launch
// (LaunchHalf) where the op is not a product: the arguments HalfOperands
// marks read, or written in place, at 2 bytes an element (the key-value
// cache's, each spec's halfCost method); its Cost for an op without one.
func (o op) CostHalf(shapes []tensor.Shape) device.Cost {
	out, err := o.shape(shapes)
	if err != nil {
		return device.Cost{}
	}
	if h, ok := o.spec.(halfCoster); ok {
		return h.halfCost(shapes, out)
	}
	return o.spec.cost(shapes, out)
}

// halfCoster is a spec whose 16-bit launch reads its marked arguments as
// stored without being a product: halfCost is that launch's work.
type halfCoster interface {
	halfCost(in []tensor.Shape, out tensor.Shape) device.Cost
}

// elemsOf is the elements of a tensor of shape s: 1 for a scalar.
func elemsOf(s tensor.Shape) int64 {
	if s.IsScalar() {
		return 1
	}
	return int64(s.TotalSize())
}

// bytesOf is the bytes of float32 tensors of the given shapes.
func bytesOf(shapes ...tensor.Shape) int64 {
	var n int64
	for _, s := range shapes {
		n += 4 * elemsOf(s)
	}
	return n
}

// stream is the cost of a kernel that reads every input once, writes the
// output once and does flops floating-point operations in all.
func stream(in []tensor.Shape, out tensor.Shape, flops int64) device.Cost {
	return device.Cost{FLOPs: flops, ReadBytes: bytesOf(in...), WriteBytes: bytesOf(out)}
}

// perElement is stream with flops operations per output element.
func perElement(in []tensor.Shape, out tensor.Shape, flops int64) device.Cost {
	return stream(in, out, flops*elemsOf(out))
}

// gemmCost is the cost of a GEMM of an m×k by a k×n matrix: 2mnk
// operations, both operands read once, the m×n product written once.
func gemmCost(m, n, k int) device.Cost {
	return device.Cost{FLOPs: 2 * int64(m) * int64(n) * int64(k), ReadBytes: 4 * (int64(m)*int64(k) + int64(k)*int64(n)),
		WriteBytes: 4 * int64(m) * int64(n)}
}

// sizedCost is the cost that f gives for the sizes size reads off in, or
// nothing when in has none.
func sizedCost[P any](size func([]tensor.Shape) (P, error), in []tensor.Shape, f func(P) device.Cost) device.Cost {
	p, err := size(in)
	if err != nil {
		return device.Cost{}
	}
	return f(p)
}
