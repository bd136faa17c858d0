package engine

import (
	"strings"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/levers"
)

// CostOp is an op that reports the work of one launch on inputs of the
// given shapes. Every op of package ops is one; an op that is not is
// counted with its launches but no work.
type CostOp interface {
	Cost(shapes []tensor.Shape) device.Cost
}

// HalfCostOp is an op whose 16-bit launch (HalfLauncher) takes the
// arguments it marks as stored without being a product (the key-value
// cache's, on a 16-bit state): CostHalf is that launch's work, those
// arguments read (or written in place) at 2 bytes an element, the
// arithmetic float32.
type HalfCostOp interface {
	CostHalf(shapes []tensor.Shape) device.Cost
}

// The names under which Work counts the engine's own kernels.
const (
	// KernelGradientSum is gorgonia's sum of a value's gradients from
	// several consumers, which the engine runs as an element-wise
	// addition, and gradient accumulation's sum of each parameter's
	// gradients over an optimizer step's micro-batches (Spec.Accumulate).
	KernelGradientSum = "GradientSum"
	// KernelSumSquares is the sum of squares of each parameter's gradient,
	// taken as soon as it is final, for the block's gradient-norm clip.
	KernelSumSquares = "SumSquares"
	// KernelAdam is Adam's update of one parameter, the clip's scale
	// applied to its gradient.
	KernelAdam = "AdamStep"
	// KernelConvert is the conversions of 16-bit precision: values
	// widened to float32 for a step, a step's result rounded to 16 bits,
	// a master rounded into its 16-bit copy.
	KernelConvert = "Convert16"
)

// adamFLOPs is the floating-point operations of Adam's update per element
// (hostmath.AdamStep): the clip's scale, the two moments, the square root,
// the bias corrections and the step.
const adamFLOPs = 14

// KernelWork is the work of one kind of kernel in one batch.
type KernelWork struct {
	// Name is the op's type without its parameters ("Linear",
	// "Conv2dInputGrad"), or one of the engine's own kernels
	// (KernelGradientSum, KernelSumSquares, KernelAdam).
	Name string
	// Launches counts the op's launches; one op may run several device
	// kernels (a GEMM and a bias pass).
	Launches int64
	FLOPs    int64
	// Bytes is the device memory read and written.
	Bytes int64
	// Half says the kernel's FLOPs are products of 16-bit operands
	// (device.Kernels.GemmHalf), which a GPU runs on its tensor cores.
	Half bool
}

// Work is the device work of one batch: one training step (forward,
// backward and every block's update; when accumulating gradients, its
// micro-batches' forward and backward passes, the accumulation and one
// update) or one evaluation forward pass. An epoch's work is this times
// the epoch's batches; the caller multiplies.
type Work struct {
	// Kernels lists each kind of kernel in the order of its first launch.
	Kernels  []KernelWork
	Launches int64
	FLOPs    int64
	Bytes    int64
}

// add counts n launches of kernel name, each of cost c; half says its
// FLOPs are 16-bit products.
func (w *Work) add(name string, n int64, c device.Cost, half bool) {
	w.addTotal(name, n, device.Cost{FLOPs: n * c.FLOPs, ReadBytes: n * c.ReadBytes, WriteBytes: n * c.WriteBytes}, half)
}

// addTotal counts n launches of kernel name that cost c together.
func (w *Work) addTotal(name string, n int64, c device.Cost, half bool) {
	i := 0
	for i < len(w.Kernels) && w.Kernels[i].Name != name {
		i++
	}
	if i == len(w.Kernels) {
		w.Kernels = append(w.Kernels, KernelWork{Name: name})
	}
	k := &w.Kernels[i]
	k.Half = k.Half || half
	k.Launches += n
	k.FLOPs += c.FLOPs
	k.Bytes += c.Bytes()
	w.Launches += n
	w.FLOPs += c.FLOPs
	w.Bytes += c.Bytes()
}

// Work returns the device work of one batch, known from the Schedule
// before anything is allocated: every compute step through its op's cost
// (CostOp), and when training each gradient's sum of squares and each
// parameter's Adam update. The clip's scale is host arithmetic on the sums
// and costs no kernel. Under a placement that runs the optimizer on the
// host the Adam updates happen there instead; Work still counts them.
func (sc *Schedule) Work() Work {
	var w Work
	micro := int64(sc.microBatches())
	for range micro {
		for si := range sc.steps {
			sc.addStepWork(&w, si)
		}
	}
	if !sc.spec.Train {
		return w
	}
	for _, g := range sc.grads {
		if g < 0 { // frozen
			continue
		}
		n := int64(sc.count(g))
		w.add(KernelSumSquares, 1, device.Cost{FLOPs: 2 * n, ReadBytes: 4 * n}, false)
		if sc.values[g].store.narrow() { // widened for the sum of squares, or each micro-batch for the accumulator
			w.add(KernelConvert, micro, widenCost(n), false)
		}
		if sc.accumulates() { // added into its float32 accumulator each micro-batch
			w.add(KernelGradientSum, micro, device.Cost{FLOPs: n, ReadBytes: 8 * n, WriteBytes: 4 * n}, false)
		}
	}
	for i, pv := range sc.params {
		if sc.grads[i] < 0 { // frozen: no update
			continue
		}
		n := int64(sc.count(pv))
		// p, g, m and v read; p, m and v written.
		w.add(KernelAdam, 1, device.Cost{FLOPs: adamFLOPs * n, ReadBytes: 16 * n, WriteBytes: 12 * n}, false)
		if sc.values[pv].store.narrow() { // the master rounded into the 16-bit copy
			w.add(KernelConvert, 1, narrowCost(n), false)
		}
		if g := sc.grads[i]; sc.values[g].store.narrow() && !sc.accumulates() { // the gradient widened for the update
			w.add(KernelConvert, 1, widenCost(n), false)
		}
	}
	return w
}

// addStepWork adds step si's work to w: its op's cost (CostOp), with
// 16-bit precision's conversions around it.
func (sc *Schedule) addStepWork(w *Work, si int) {
	s := sc.steps[si]
	shapes := make([]tensor.Shape, len(s.args))
	for j, a := range s.args {
		shapes[j] = sc.values[a].shape
	}
	name, c := opName(s.op), device.Cost{}
	switch op := s.op.(type) {
	case CostOp:
		c = op.Cost(shapes)
		if h, ok := s.op.(HalfCostOp); ok && s.half16 && castOf(s.op) != levers.CastLower {
			c = h.CostHalf(shapes)
		}
	default:
		if isGradientSum(s.op) {
			n := 4 * int64(sc.count(s.out))
			name, c = KernelGradientSum, device.Cost{FLOPs: n / 4, ReadBytes: 2 * n, WriteBytes: n}
		}
	}
	c, conv, half := sc.stepCost16(si, c)
	c.ReadBytes = max(c.ReadBytes-sc.quantReadSaving(s), 0)
	w.add(name, 1, c, half)
	if conv.launches > 0 {
		w.addTotal(KernelConvert, conv.launches, conv.Cost, false)
	}
}

// opName is an op's name without its parameters.
func opName(op gorgonia.Op) string {
	name, _, _ := strings.Cut(op.String(), "{")
	return name
}
