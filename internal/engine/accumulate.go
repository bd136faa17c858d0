package engine

import (
	"fmt"
	"slices"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
)

// Gradient accumulation (Spec.Accumulate = K > 1): a Run computes one
// micro-batch's gradients in the arena as ever; at each block's update
// the block's trained gradients are added into its accumulators, float32
// buffers kept with Adam's moments (stateElems: they travel, page and
// migrate with them), the first micro-batch's copied in. Only the K-th
// Run of an optimizer step updates: the clip and Adam read the
// accumulators, scaled by 1/K (folded into the update's gradient scale,
// stepScale), so that the step is the mean over K micro-batches, the one
// of the batch K times the graph's. The micro-batches' gradients are
// added in the same order under every placement, so that a
// configuration's modes compute the same bits.

// lastMicro reports whether the current Run ends its optimizer step.
func (prog *Program) lastMicro() bool { return prog.micro == prog.sched.microBatches()-1 }

// accumulate adds block b's trained gradients of this Run into their
// accumulators on the block's side, copying them in on the step's first
// micro-batch, and on its last takes each accumulator's sum of squares
// for the clip. It reports whether the Run ends the optimizer step (the
// update then applies Adam).
func (prog *Program) accumulate(b int) bool {
	sc := prog.sched
	onHost := prog.sides.blockHost[b]
	k := prog.kernelsOn(onHost)
	for _, i := range prog.layouts[b].params {
		if sc.grads[i] < 0 { // frozen
			continue
		}
		grad, acc := prog.buffers[sc.grads[i]], prog.accums[i]
		if sc.values[sc.grads[i]].store.narrow() {
			grad = prog.converter(onHost).widen(grad, sc.count(sc.grads[i]))
		}
		if prog.micro == 0 {
			copyFloats(k, acc, grad)
		} else {
			k.Add(acc, acc, grad)
		}
		if prog.lastMicro() {
			prog.gradSquares[i] = k.SumSquares(acc)
		}
	}
	return prog.lastMicro()
}

// copyFloats sets dst to src, exactly: the leaky activation with slope 1,
// the identity (Kernels has no copy of its own).
func copyFloats(k device.Kernels, dst, src device.Buffer) { k.LeakyReLU(dst, src, 1) }

// accumulateOnHost is accumulate for a paged block whose optimizer runs
// on the host: the gradients, copied from the device (and widened) into
// grads, are added into the host accumulators. On the step's last
// micro-batch grads are set to the accumulators and sumSquares to their
// sum of squares. It reports whether the Run ends the optimizer step.
func (r *residency) accumulateOnHost(trained []int, grads [][]float32, sumSquares *float64) bool {
	*sumSquares = 0
	for j, i := range trained {
		acc := r.hostAccums[i]
		if r.prog.micro == 0 {
			copy(acc, grads[j])
		} else {
			hostmath.Add(acc, acc, grads[j])
		}
		if r.prog.lastMicro() {
			grads[j] = acc
			*sumSquares += hostmath.SumSquares(acc)
		}
	}
	return r.prog.lastMicro()
}

// stepScale returns the factor an update multiplies its gradients by, as
// gradScale does, for gradients that are the sum of the step's
// micro-batches' (K of them: the accumulators): their mean's clip, times
// 1/K. Without accumulation it is gradScale.
func (prog *Program) stepScale(sumSquares float64) (scale float64, ok bool) {
	if !prog.sched.accumulates() {
		return prog.gradScale(sumSquares)
	}
	k := float64(prog.sched.microBatches())
	scale, ok = prog.gradScale(sumSquares / (k * k))
	return scale / k, ok
}

// accumulated returns trained parameter i's gradient of the last
// optimizer step, the mean of its accumulator over the micro-batches,
// unscaled under fp16's loss scale.
func (prog *Program) accumulated(i int) ([]float32, error) {
	sc := prog.sched
	pv := sc.params[i]
	n := sc.count(pv)
	out := make([]float32, n)
	switch acc := prog.accums[i]; {
	case acc != nil:
		if err := prog.on(prog.sides.blockHost[sc.values[pv].block]).Download(out, acc); err != nil {
			return nil, fmt.Errorf("engine: reading %s's accumulated gradient: %w", sc.values[pv].node.Name(), err)
		}
	default: // where a paged placement keeps it: the host
		r, ok := prog.placed.(*residency)
		if !ok {
			return nil, fmt.Errorf("engine: %s has no accumulated gradient", sc.values[pv].node.Name())
		}
		b := sc.values[pv].block
		l := prog.layouts[b]
		j := slices.Index(l.params, i)
		switch {
		case r.hostAccums != nil && r.hostAccums[i] != nil:
			copy(out, r.hostAccums[i])
		case l.accums != nil && l.accums[j] >= 0:
			copy(out, r.host[b][l.accums[j]:l.accums[j]+n])
		default:
			return nil, fmt.Errorf("engine: %s has no accumulated gradient", sc.values[pv].node.Name())
		}
	}
	div := float64(sc.microBatches())
	if prog.scalesLoss() {
		div *= prog.seedScale
	}
	for j := range out {
		out[j] = float32(float64(out[j]) / div)
	}
	return out, nil
}
