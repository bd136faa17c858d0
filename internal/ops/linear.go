package ops

import (
	"fmt"

	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/half"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/perfmodel"
)

// Linear is the affine layer y = x·Wᵀ + b of PyTorch's nn.Linear: inputs x
// [batch, in], W [out, in] and b [out]; output [batch, out].
type Linear struct{}

func (Linear) signature() []int { return []int{2, 2, 1, 2} }

// gemm reads the sizes of the GEMM x·Wᵀ off the shapes: m the batch, n
// the outputs and k the inputs, b having one entry per output.
func (Linear) gemm(in []tensor.Shape) (gemm, error) {
	x, w, b := in[0], in[1], in[2]
	if x[1] != w[1] || b[0] != w[0] {
		return gemm{}, fmt.Errorf("shapes x %v, W %v, b %v do not fit", x, w, b)
	}
	return xwtGemm(in)
}

// xwtGemm reads the sizes of the product x·Wᵀ of Linear and Projection
// off the shapes of x [batch, in] and W [out, in].
func xwtGemm(in []tensor.Shape) (gemm, error) {
	x, w := in[0], in[1]
	if x[1] != w[1] {
		return gemm{}, fmt.Errorf("shapes x %v and W %v do not fit", x, w)
	}
	return gemm{m: x[0], n: w[0], k: x[1]}, nil
}

// xwtLaunch launches the product x·Wᵀ of Linear and Projection into out:
// in float32, or, when f is not nil, from x and W holding 16-bit values of
// format *f (summed in float32).
func xwtLaunch(d launchArgs, p gemm, f *half.Format) {
	if f != nil {
		d.k.GemmHalf(*f, false, true, p.m, p.n, p.k, d.args[0], d.args[1], d.out)
		return
	}
	d.k.Gemm(false, true, p.m, p.n, p.k, d.args[0], d.args[1], d.out)
}

func (op Linear) shape(in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(op.gemm, in, gemm.shape)
}

// transposedB: W is stored [out, in], so the product reads it transposed.
func (Linear) transposedB() bool { return true }

func (op Linear) kernel() kernel { return affineKernel(op) }

// halfOperands: x and W in 16 bits, the bias in float32.
func (Linear) halfOperands() []bool { return []bool{true, true, false} }

func (op Linear) launchHalf(f half.Format, d launchArgs) error { return affineLaunchHalf(op, f, d) }

// affineSpec is Linear or Conv1D: y = x·op(W) + b, the GEMM of x [batch,
// in] and W, transposed (Linear's, stored [out, in]) or not (Conv1D's,
// stored [in, out]), then the bias b [out] added to every row.
type affineSpec interface {
	Spec
	// gemm reads the sizes of the product off the shapes of x, W and b.
	gemm(in []tensor.Shape) (gemm, error)
	// transposedB reports whether the product reads W transposed.
	transposedB() bool
}

// affineKernel is an affineSpec's kernel: affineHost and affineLaunch.
func affineKernel(op affineSpec) kernel {
	return kernel{hostOf(op, affineHost, affineHost), func(d launchArgs) error { return affineLaunch(op, d) }}
}

// affineHost is an affineSpec's host math.
func affineHost[T hostmath.Float, S affineSpec](op S, h hostArgs[T]) error {
	return sized(op.gemm, h.shapes, func(p gemm) {
		hostmath.Gemm(false, op.transposedB(), p.m, p.n, p.k, 1, h.in[0], h.in[1], 0, h.out)
		hostmath.AddRowVector(h.out, h.in[2])
	})
}

// affineLaunch is an affineSpec's launch.
func affineLaunch(op affineSpec, d launchArgs) error {
	return sized(op.gemm, d.shapes, func(p gemm) {
		d.k.Gemm(false, op.transposedB(), p.m, p.n, p.k, d.args[0], d.args[1], d.out)
		d.k.AddRowVector(d.out, d.args[2])
	})
}

// affineLaunchHalf is affineLaunch with x and W in 16 bits: the product of
// 16-bit operands summed in float32 (GemmHalf), then the bias.
func affineLaunchHalf(op affineSpec, f half.Format, d launchArgs) error {
	return sized(op.gemm, d.shapes, func(p gemm) {
		d.k.GemmHalf(f, false, op.transposedB(), p.m, p.n, p.k, d.args[0], d.args[1], d.out)
		d.k.AddRowVector(d.out, d.args[2])
	})
}

func (Linear) grads() []grad {
	return []grad{gradOf(LinearInputGrad{}, gArg, 1), gradOf(LinearWeightGrad{}, gArg, 0), gradOf(LinearBiasGrad{}, gArg)}
}

// LinearInputGrad is the gradient of Linear with respect to x: given the
// output gradient g [batch, out] and W [out, in], dx = g·W [batch, in].
type LinearInputGrad struct{}

// LinearWeightGrad is the gradient of Linear with respect to W: given the
// output gradient g [batch, out] and x [batch, in], dW = gᵀ·x [out, in].
type LinearWeightGrad struct{}

func (LinearInputGrad) signature() []int  { return []int{2, 2, 2} }
func (LinearWeightGrad) signature() []int { return []int{2, 2, 2} }
func (LinearInputGrad) transposed() bool  { return false }
func (LinearWeightGrad) transposed() bool { return true }

// transposedB: W and x are read as stored.
func (LinearInputGrad) transposedB() bool  { return false }
func (LinearWeightGrad) transposedB() bool { return false }

func (op LinearInputGrad) shape(in []tensor.Shape) (tensor.Shape, error)  { return gemmShape(op, in) }
func (op LinearWeightGrad) shape(in []tensor.Shape) (tensor.Shape, error) { return gemmShape(op, in) }
func (op LinearInputGrad) kernel() kernel                                 { return gemmKernel(op) }
func (op LinearWeightGrad) kernel() kernel                                { return gemmKernel(op) }

// gemmSpec is a gradient that is one product of its two inputs: Linear's
// LinearInputGrad g·W of the output gradient and the weights and,
// transposed, LinearWeightGrad gᵀ·x of the output gradient and the input;
// Conv1D's Conv1DInputGrad g·Wᵀ, the second factor transposed, and
// Conv1DWeightGrad xᵀ·g.
type gemmSpec interface {
	Spec
	// transposed reports whether the first factor is read transposed.
	transposed() bool
	// transposedB reports whether the second factor is read transposed.
	transposedB() bool
}

// gemm is the sizes of a gemmSpec's product, m×k by k×n.
type gemm struct{ m, n, k int }

// gemmOf reads the sizes of op's product off the shapes of its inputs.
func gemmOf(op gemmSpec) func([]tensor.Shape) (gemm, error) {
	return func(in []tensor.Shape) (gemm, error) {
		g, other := in[0], in[1]
		switch {
		case len(g) != 2 || len(other) != 2:
			return gemm{}, fmt.Errorf("expected matrices, got %v and %v", g, other)
		case op.transposed() && g[0] != other[0]:
			return gemm{}, fmt.Errorf("batch sizes %v and %v differ", g, other)
		case op.transposed():
			return gemm{m: g[1], n: other[1], k: g[0]}, nil
		case op.transposedB() && g[1] != other[1]:
			return gemm{}, fmt.Errorf("shapes %v and %v do not fit", g, other)
		case op.transposedB():
			return gemm{m: g[0], n: other[0], k: g[1]}, nil
		case g[1] != other[0]:
			return gemm{}, fmt.Errorf("shapes %v and %v do not fit", g, other)
		}
		return gemm{m: g[0], n: other[1], k: g[1]}, nil
	}
}

// shape is the product's shape, [m, n].
func (p gemm) shape() tensor.Shape { return tensor.Shape{p.m, p.n} }

// gemmShape is a gemmSpec's shape rule: [m, n].
func gemmShape(op gemmSpec, in []tensor.Shape) (tensor.Shape, error) {
	return shapeBy(gemmOf(op), in, gemm.shape)
}

// gemmKernel is a gemmSpec's kernel: gemmHost and gemmLaunch.
func gemmKernel(op gemmSpec) kernel {
	return kernel{hostOf(op, gemmHost, gemmHost), func(d launchArgs) error { return gemmLaunch(op, d) }}
}

// gemmHost is a gemmSpec's host math.
func gemmHost[T hostmath.Float, S gemmSpec](op S, h hostArgs[T]) error {
	return sized(gemmOf(op), h.shapes, func(p gemm) {
		hostmath.Gemm(op.transposed(), op.transposedB(), p.m, p.n, p.k, 1, h.in[0], h.in[1], 0, h.out)
	})
}

// gemmLaunch is a gemmSpec's launch.
func gemmLaunch(op gemmSpec, d launchArgs) error {
	return sized(gemmOf(op), d.shapes, func(p gemm) {
		d.k.Gemm(op.transposed(), op.transposedB(), p.m, p.n, p.k, d.args[0], d.args[1], d.out)
	})
}

// halfOperands: both factors in 16 bits.
func (LinearInputGrad) halfOperands() []bool  { return []bool{true, true} }
func (LinearWeightGrad) halfOperands() []bool { return []bool{true, true} }

func (op LinearInputGrad) launchHalf(f half.Format, d launchArgs) error {
	return gemmLaunchHalf(op, f, d)
}

func (op LinearWeightGrad) launchHalf(f half.Format, d launchArgs) error {
	return gemmLaunchHalf(op, f, d)
}

// gemmLaunchHalf is gemmLaunch with both factors in 16 bits.
func gemmLaunchHalf(op gemmSpec, f half.Format, d launchArgs) error {
	return sized(gemmOf(op), d.shapes, func(p gemm) {
		d.k.GemmHalf(f, op.transposed(), op.transposedB(), p.m, p.n, p.k, d.args[0], d.args[1], d.out)
	})
}

// LinearBiasGrad is the gradient of Linear with respect to b: the column
// sums of the output gradient g [batch, out].
type LinearBiasGrad struct{}

func (LinearBiasGrad) signature() []int { return []int{2, 1} }

func (LinearBiasGrad) shape(in []tensor.Shape) (tensor.Shape, error) { return biasShape(in[0], 2) }

// biasShape is the shape rule of a bias gradient: [C] for an output
// gradient g of dims dimensions whose axis 1 is C channels.
func biasShape(g tensor.Shape, dims int) (tensor.Shape, error) {
	if len(g) != dims {
		return nil, fmt.Errorf("expected a %d-dimensional gradient, got %v", dims, g)
	}
	return tensor.Shape{g[1]}, nil
}

func (LinearBiasGrad) kernel() kernel {
	return plain1(hostmath.SumRows, hostmath.SumRows, device.Kernels.SumRows)
}

// cost: the GEMM x·Wᵀ (2·batch·out·in operations, x and W read, y written),
// then the bias pass, which reads y and b and writes y again.
func (op Linear) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return affineCost(op, in, out)
}

// affineCost is an affineSpec's cost: the GEMM, then the bias pass.
func affineCost(op affineSpec, in []tensor.Shape, out tensor.Shape) device.Cost {
	return sizedCost(op.gemm, in, func(p gemm) device.Cost {
		return gemmCost(p.m, p.n, p.k).Plus(device.Cost{FLOPs: elemsOf(out), ReadBytes: bytesOf(out, in[2]), WriteBytes: bytesOf(out)})
	})
}

// cost: the GEMM g·W.
func (op LinearInputGrad) cost(in []tensor.Shape, _ tensor.Shape) device.Cost {
	return sizedCost(gemmOf(op), in, func(p gemm) device.Cost { return gemmCost(p.m, p.n, p.k) })
}

// cost: the GEMM gᵀ·x.
func (op LinearWeightGrad) cost(in []tensor.Shape, _ tensor.Shape) device.Cost {
	return sizedCost(gemmOf(op), in, func(p gemm) device.Cost { return gemmCost(p.m, p.n, p.k) })
}

// cost: one addition per element of g.
func (LinearBiasGrad) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return stream(in, out, elemsOf(in[0]))
}

// The products, under 16-bit precision: operands rounded to 16 bits, sums
// in float32, results stored in 16 bits (autocast's lower-precision list).
func (Linear) cast() levers.Cast           { return levers.CastLower }
func (LinearInputGrad) cast() levers.Cast  { return levers.CastLower }
func (LinearWeightGrad) cast() levers.Cast { return levers.CastLower }

// The reductions, under 16-bit precision: read and stored in float32
// (autocast's fp32 list: softmax, layer norm, the losses, sums).
func (LinearBiasGrad) cast() levers.Cast { return levers.CastFP32 }

// The products in the performance model: a GEMM (perfmodel.ClassProducts).
func (Linear) class() string           { return perfmodel.ClassProducts }
func (LinearInputGrad) class() string  { return perfmodel.ClassProducts }
func (LinearWeightGrad) class() string { return perfmodel.ClassProducts }

// Element-wise in the performance model: memory-bound or nearly
// (perfmodel.ClassElementwise).
func (LinearBiasGrad) class() string { return perfmodel.ClassElementwise }
