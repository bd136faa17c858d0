package engine

import (
	"fmt"
	"math"
	"slices"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
)

// residency keeps a paged program's blocks: a master copy of every block's
// area in host memory and a window of device slots holding some blocks.
type residency struct {
	prog   *Program
	slots  []int           // block held by each slot, -1 when free
	areas  []device.Buffer // each slot's device memory
	slotOf []int           // slot holding each block, -1 when paged out
	host   [][]float32     // each block's master area
	// hostMoments holds Adam's moments per parameter when the optimizer
	// runs on the host.
	hostMoments [][2][]float32
	dirty       []bool // block changed on the device since it was loaded
	// uses lists, per block, the steps that need it in increasing order
	// (an update counts as a use at the step it follows): the whole future
	// of a Run is known, so the auto policy evicts the block needed
	// farthest ahead (Belady's rule).
	uses     [][]int
	now      int // the step about to run
	done     int // last step executed in this Run, -1 before the first
	gradHost []float32
	// staging receives a saved value computed while its block is paged
	// out, on its way to the block's host master.
	staging device.Buffer
}

// newResidency sizes the window, allocates its slots on the device and the
// master copies on the host.
func (prog *Program) newResidency() (*residency, error) {
	p := prog.plan
	free, _, err := prog.dev.MemInfo()
	if err != nil {
		return nil, fmt.Errorf("engine: sizing the cache window: %w", err)
	}
	largest := 0
	for _, l := range prog.layouts {
		largest = max(largest, l.elems)
	}
	// The arena and the inputs are already allocated: free is what is left
	// for the window.
	staging := p.largestSaved()
	window := p.window(prog.place, free-4*int64(staging), 0, 4*int64(largest))
	r := &residency{prog: prog, slots: make([]int, window), slotOf: make([]int, len(prog.layouts)),
		host: make([][]float32, len(prog.layouts)), dirty: make([]bool, len(prog.layouts)),
		uses: p.blockUses(), done: -1}
	for i := range r.slots {
		r.slots[i] = -1
		area, err := prog.alloc(largest)
		if err != nil {
			return nil, fmt.Errorf("engine: allocating cache slot %d of %d: %w", i+1, window, err)
		}
		r.areas = append(r.areas, area)
	}
	if staging > 0 {
		if r.staging, err = prog.alloc(staging); err != nil {
			return nil, fmt.Errorf("engine: allocating the staging buffer: %w", err)
		}
	}
	for blk, l := range prog.layouts {
		r.slotOf[blk] = -1
		r.host[blk] = make([]float32, l.elems)
	}
	if p.spec.Train && prog.place.OptimizerOnHost {
		r.hostMoments = make([][2][]float32, len(p.params))
		for i, pv := range p.params {
			n := p.values[pv].elems
			r.hostMoments[i] = [2][]float32{make([]float32, n), make([]float32, n)}
		}
	}
	return r, nil
}

// paramPlace returns a parameter's block and offset in the block's area.
func (r *residency) paramPlace(valueIndex int) (block, offset int) {
	p := r.prog.plan
	block = p.values[valueIndex].block
	l := r.prog.layouts[block]
	for j, i := range l.params {
		if p.params[i] == valueIndex {
			return block, l.offsets[j]
		}
	}
	panic("engine: parameter missing from its block's layout")
}

// setParam writes a parameter's master copy, and its device copy when the
// block is resident.
func (r *residency) setParam(valueIndex int, data []float32) error {
	b, off := r.paramPlace(valueIndex)
	n := r.prog.plan.values[valueIndex].elems
	if len(data) != n {
		return fmt.Errorf("%d values for a parameter of %d", len(data), n)
	}
	copy(r.host[b][off:off+n], data)
	if r.slotOf[b] >= 0 {
		return r.prog.dev.Upload(r.prog.buffers[valueIndex], data)
	}
	return nil
}

// readParam returns a copy of a paged-out parameter's master.
func (r *residency) readParam(valueIndex int) []float32 {
	b, off := r.paramPlace(valueIndex)
	n := r.prog.plan.values[valueIndex].elems
	return append([]float32(nil), r.host[b][off:off+n]...)
}

// nextUse returns the first step at or after r.now that needs block b;
// a block not needed again in this Run is needed in the next one, after
// every step of this one.
func (r *residency) nextUse(b int) int {
	uses := r.uses[b]
	i, _ := slices.BinarySearch(uses, r.now)
	if i < len(uses) {
		return uses[i]
	}
	if len(uses) == 0 {
		return math.MaxInt
	}
	return uses[0] + len(r.prog.plan.steps)
}

// victim returns the resident block, other than those keep lists, that is
// needed farthest ahead, or -1 when every resident block is kept.
func (r *residency) victim(keep []int) int {
	victim := -1
	for _, b := range r.slots {
		if b >= 0 && !slices.Contains(keep, b) && (victim < 0 || r.nextUse(b) > r.nextUse(victim)) {
			victim = b
		}
	}
	return victim
}

// ensure makes the blocks a step (or an update, which is in the backward
// pass) needs resident, as the policy decides.
func (r *residency) ensure(needs []int, backward bool) error {
	missing := -1
	for _, b := range needs {
		if r.slotOf[b] < 0 {
			missing = b
			break
		}
	}
	if missing < 0 {
		return nil
	}
	if r.prog.place.Policy == PolicyWindow {
		return r.missWindow(needs, backward, missing)
	}
	for _, b := range needs {
		if r.slotOf[b] >= 0 {
			continue
		}
		slot, err := r.freeSlot(needs)
		if err != nil {
			return err
		}
		if err := r.load(b, slot); err != nil {
			return err
		}
	}
	return nil
}

// missWindow is DictCache's miss: write the whole window back, then load
// the needed blocks and the ones that follow the missed block in the pass's
// observed order, up to the window's size.
func (r *residency) missWindow(needs []int, backward bool, missed int) error {
	for _, b := range r.slots {
		if b >= 0 {
			if err := r.evict(b, true); err != nil {
				return err
			}
		}
	}
	pass := 0
	if backward {
		pass = 1
	}
	load := slices.Clone(needs)
	for _, b := range r.prog.plan.orderAfter(pass, missed) {
		if len(load) >= len(r.slots) {
			break
		}
		if !slices.Contains(load, b) {
			load = append(load, b)
		}
	}
	for i, b := range load {
		if err := r.load(b, i); err != nil {
			return err
		}
	}
	return nil
}

// freeSlot returns a free slot, evicting the block needed farthest ahead
// among those keep does not list when none is free.
func (r *residency) freeSlot(keep []int) (int, error) {
	if slot := slices.Index(r.slots, -1); slot >= 0 {
		return slot, nil
	}
	victim := r.victim(keep)
	if victim < 0 {
		return -1, fmt.Errorf("engine: a window of %d blocks cannot hold the %d blocks one step needs", len(r.slots), len(keep))
	}
	slot := r.slotOf[victim]
	return slot, r.evict(victim, r.dirty[victim])
}

// prefetch, under the auto policy, loads the next block that a coming step
// needs and is not resident, so that on a device with a copy stream the
// copy overlaps the steps before it. It evicts a block only when that block
// is needed later than the one it makes room for, and never one the next
// step needs.
func (r *residency) prefetch(after int) error {
	if r.prog.place.Policy != PolicyAuto {
		return nil
	}
	needs := r.prog.plan.needs
	r.now = after + 1
	for s := after + 1; s < len(needs); s++ {
		for _, b := range needs[s] {
			if r.slotOf[b] >= 0 {
				continue
			}
			slot := slices.Index(r.slots, -1)
			if slot < 0 {
				victim := r.victim(append(slices.Clone(needs[after+1]), needs[s]...))
				if victim < 0 || r.nextUse(victim) <= s {
					return nil // nothing resident is needed later than b
				}
				slot = r.slotOf[victim]
				if err := r.evict(victim, r.dirty[victim]); err != nil {
					return err
				}
			}
			return r.load(b, slot)
		}
	}
	return nil
}

// live reports whether saved value v holds data a later step reads.
func (r *residency) live(v int) bool {
	val := r.prog.plan.values[v]
	return val.produced >= 0 && val.produced <= r.done && val.lastUse > r.done
}

// load copies block b's master into a slot: parameters, moments, and the
// saved values that are computed and still needed.
func (r *residency) load(b, slot int) error {
	prog := r.prog
	prog.bind(b, prog.dev.View(r.areas[slot], 0, prog.layouts[b].elems))
	r.slots[slot], r.slotOf[b], r.dirty[b] = b, slot, false
	return r.copyArea(b, true, true)
}

// evict copies block b back to its master, the parameters and moments only
// when writeParams is set, the live saved values always, and frees its slot.
func (r *residency) evict(b int, writeParams bool) error {
	if err := r.copyArea(b, false, writeParams); err != nil {
		return err
	}
	r.prog.unbind(b)
	r.slots[r.slotOf[b]], r.slotOf[b], r.dirty[b] = -1, -1, false
	return nil
}

// copyArea moves block b's members between its master and its device
// views: toDevice uploads, otherwise it downloads. Parameters and moments
// move when params is set; saved values move when live.
func (r *residency) copyArea(b int, toDevice, params bool) error {
	prog, p, l := r.prog, r.prog.plan, r.prog.layouts[b]
	host := r.host[b]
	move := func(off, n int, buf device.Buffer) error {
		if toDevice {
			return prog.dev.Upload(buf, host[off:off+n])
		}
		return prog.dev.Download(host[off:off+n], buf)
	}
	if params {
		for j, i := range l.params {
			n := p.values[p.params[i]].elems
			if err := move(l.offsets[j], n, prog.buffers[p.params[i]]); err != nil {
				return fmt.Errorf("engine: moving block %s: %w", p.spec.Blocks[b].Name, err)
			}
			if l.moments != nil {
				for k := range 2 {
					if err := move(l.moments[j][k], n, prog.moments[i][k]); err != nil {
						return fmt.Errorf("engine: moving block %s's optimizer state: %w", p.spec.Blocks[b].Name, err)
					}
				}
			}
		}
	}
	for j, v := range p.saved[b] {
		if r.live(v) {
			if err := move(l.saved[j], p.values[v].elems, prog.buffers[v]); err != nil {
				return fmt.Errorf("engine: moving block %s's saved activations: %w", p.spec.Blocks[b].Name, err)
			}
		}
	}
	return nil
}

// updateOnHost clips and applies Adam to block b on the host: its gradients
// are copied from the device, the master parameters and the host moments
// updated, and a resident copy of the block dropped without write-back, as
// its parameters on the device are now stale.
func (r *residency) updateOnHost(b int) error {
	prog, p, l := r.prog, r.prog.plan, r.prog.layouts[b]
	total := 0
	for _, i := range l.params {
		total += p.values[p.grads[i]].elems
	}
	if cap(r.gradHost) < total {
		r.gradHost = make([]float32, total)
	}
	grads := make([][]float32, len(l.params))
	sumSquares, off := 0.0, 0
	for j, i := range l.params {
		n := p.values[p.grads[i]].elems
		grads[j] = r.gradHost[off : off+n]
		off += n
		if err := prog.dev.Download(grads[j], prog.buffers[p.grads[i]]); err != nil {
			return fmt.Errorf("engine: copying block %s's gradients: %w", p.spec.Blocks[b].Name, err)
		}
		sumSquares += hostmath.SumSquares(grads[j])
	}
	scale := hostmath.ClipScale(sumSquares, p.spec.ClipNorm)
	prog.adamSteps[b]++
	for j, i := range l.params {
		n := p.values[p.params[i]].elems
		params := r.host[b][l.offsets[j] : l.offsets[j]+n]
		hostmath.AdamStep(p.spec.Optimizer, params, grads[j], r.hostMoments[i][0], r.hostMoments[i][1], scale, prog.adamSteps[b])
	}
	if r.slotOf[b] >= 0 {
		return r.evict(b, false)
	}
	return nil
}

// stageOutput returns the buffer a step writes a saved value into when the
// value's block is paged out: a view of the staging buffer.
func (r *residency) stageOutput(v int) device.Buffer {
	return r.prog.dev.View(r.staging, 0, r.prog.plan.values[v].elems)
}

// unstage copies a staged saved value to its block's host master.
func (r *residency) unstage(v int, staged device.Buffer) error {
	p := r.prog.plan
	b := p.values[v].block
	j := slices.Index(p.saved[b], v)
	off := r.prog.layouts[b].saved[j]
	if err := r.prog.dev.Download(r.host[b][off:off+p.values[v].elems], staged); err != nil {
		return fmt.Errorf("engine: staging a saved activation of block %s: %w", p.spec.Blocks[b].Name, err)
	}
	return nil
}
