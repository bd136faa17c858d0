package engine

import (
	"fmt"
	"math"
	"slices"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
)

// residency keeps a paged program's blocks: a master copy of every block's
// area in host memory and a window of device slots holding some blocks, as
// its cache decides.
type residency struct {
	*cache
	prog  *Program
	areas []device.Buffer // each slot's device memory
	host  [][]float32     // each block's master area
	// hostMoments holds Adam's moments per parameter when the optimizer
	// runs on the host.
	hostMoments [][2][]float32
	gradHost    []float32
	// staging receives a saved value computed while its block is paged
	// out, on its way to the block's host master.
	staging device.Buffer
}

// cache is a paged placement's policy: which block each window slot holds,
// and what to load and evict before, during and after each step. It
// decides; its mover carries the decisions out. The same cache, driven by
// the same walk, runs a Program (residency copies the blocks) and the dry
// run of Schedule.Copies (copyCounter counts them), so the counted copies
// are the ones a program makes.
type cache struct {
	plan    *Schedule
	place   Placement
	layouts []layout
	// needs lists, per step, the blocks the cache pages among those the
	// step needs (Schedule.needs): the others are resident.
	needs  [][]int
	slots  []int  // block held by each slot, -1 when free
	slotOf []int  // slot holding each block, -1 when paged out
	dirty  []bool // block changed on the device since it was loaded
	// uses lists, per block, the steps that need it in increasing order
	// (an update counts as a use at the step it follows): the whole future
	// of a Run is known, so the auto policy evicts the block needed
	// farthest ahead (Belady's rule).
	uses [][]int
	now  int // the step about to run
	done int // last step executed in this Run, -1 before the first
	// prefetching is set while prefetch loads a block ahead of need.
	prefetching bool
	// nears is the window policy's learned order, DictCache's nears: per
	// pass (0 forward, 1 backward), the block a step needed after each
	// block the last time the walk left it, -1 while unknown. A miss loads
	// the successors it names, so the first pass loads only what it misses.
	nears [2][]int
	// curr is the block the last step needed (-1 at the start of a
	// backward pass, as DictCache's do_backward resets it; a forward pass
	// does not, so in eval the last block learns the first as its
	// successor), and backward whether that step was in the backward pass.
	curr     int
	backward bool
	mover    mover
}

// mover carries out a cache's decisions on one block; the cache keeps the
// bookkeeping.
type mover interface {
	// copyIn copies block b's master into slot: parameters, moments, and
	// the saved values that are live (cache.moves).
	copyIn(b, slot int) error
	// copyOut copies block b back to its master, the parameters and
	// moments only when writeParams is set, the live saved values always,
	// and lets go of its device copy.
	copyOut(b int, writeParams bool) error
}

// newCache returns an empty window of the given slots over the blocks
// laid out as layouts.
func newCache(p *Schedule, pl Placement, layouts []layout, window int, m mover) *cache {
	needs := p.pagedNeeds(pl)
	c := &cache{plan: p, place: pl, layouts: layouts, needs: needs, slots: make([]int, window), slotOf: make([]int, len(layouts)),
		dirty: make([]bool, len(layouts)), uses: p.blockUses(pl, needs), done: -1, curr: -1, mover: m}
	for pass := range c.nears {
		c.nears[pass] = slices.Repeat([]int{-1}, len(layouts))
	}
	for i := range c.slots {
		c.slots[i] = -1
	}
	for b := range c.slotOf {
		c.slotOf[b] = -1
	}
	return c
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
	for b, l := range prog.layouts {
		if prog.place.pagedBlock(b) {
			largest = max(largest, l.elems)
		}
	}
	// The arena, the inputs and the resident blocks are already allocated:
	// free is what is left for the window.
	staging := p.largestSaved()
	window := p.window(prog.place, free-4*int64(staging), 0, 4*int64(largest))
	r := &residency{prog: prog, host: make([][]float32, len(prog.layouts))}
	r.cache = newCache(p, prog.place, prog.layouts, window, r)
	for i := range r.slots {
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
		if prog.place.pagedBlock(blk) {
			r.host[blk] = make([]float32, l.elems)
		}
	}
	if p.spec.Train && prog.place.OptimizerOnHost {
		r.hostMoments = make([][2][]float32, len(p.params))
		for i, pv := range p.params {
			if n := p.values[pv].elems; prog.place.pagedBlock(p.values[pv].block) {
				r.hostMoments[i] = [2][]float32{make([]float32, n), make([]float32, n)}
			}
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

// nextUse returns the first step at or after c.now that needs block b;
// a block not needed again in this Run is needed in the next one, after
// every step of this one.
func (c *cache) nextUse(b int) int {
	uses := c.uses[b]
	i, _ := slices.BinarySearch(uses, c.now)
	if i < len(uses) {
		return uses[i]
	}
	if len(uses) == 0 {
		return math.MaxInt
	}
	return uses[0] + len(c.plan.steps)
}

// victim returns the resident block, other than those keep lists, that is
// needed farthest ahead, or -1 when every resident block is kept.
func (c *cache) victim(keep []int) int {
	victim := -1
	for _, b := range c.slots {
		if b >= 0 && !slices.Contains(keep, b) && (victim < 0 || c.nextUse(b) > c.nextUse(victim)) {
			victim = b
		}
	}
	return victim
}

// ensure makes the blocks a step (or an update, which is in the backward
// pass) needs resident, as the policy decides.
func (c *cache) ensure(needs []int, backward bool) error {
	missing := -1
	for _, b := range needs {
		if c.slotOf[b] < 0 {
			missing = b
			break
		}
	}
	if missing < 0 {
		return nil
	}
	if c.place.Policy == PolicyWindow || c.place.Policy == PolicyWindowPaged {
		return c.missWindow(needs, backward, missing)
	}
	for _, b := range needs {
		if c.slotOf[b] >= 0 {
			continue
		}
		slot, err := c.freeSlot(needs)
		if err != nil {
			return err
		}
		if err := c.load(b, slot); err != nil {
			return err
		}
	}
	return nil
}

// missWindow is DictCache's miss: write the whole window back (every
// block's parameters, as its .to(cpu) copies them changed or not; in the
// backward pass an evicted block's saved activations are dead and so
// dropped, and a live one, which DictCache would lose, is written back),
// then load the needed blocks and the successors of the missed block, up
// to the window's size. Under the window policy the successors are those
// the previous pass taught (c.nears: none on the first pass); under
// window-paged, the pass's order known from the schedule.
func (c *cache) missWindow(needs []int, backward bool, missed int) error {
	for _, b := range c.slots {
		if b >= 0 {
			if err := c.evict(b, true); err != nil {
				return err
			}
		}
	}
	pass := 0
	if backward {
		pass = 1
	}
	load := slices.Clone(needs)
	var successors []int
	if c.place.Policy == PolicyWindowPaged {
		successors = c.plan.orderAfter(pass, missed)
	} else {
		// DictCache follows the chain win_size-1 times from the missed block.
		for b, i := missed, 1; i < len(c.slots); i++ {
			if b = c.nears[pass][b]; b < 0 {
				break
			}
			successors = append(successors, b)
		}
	}
	for _, b := range successors {
		if len(load) >= len(c.slots) {
			break
		}
		if c.place.pagedBlock(b) && !slices.Contains(load, b) {
			load = append(load, b)
		}
	}
	for i, b := range load {
		if err := c.load(b, i); err != nil {
			return err
		}
	}
	return nil
}

// observe learns, under the window policy, the order in which a step of
// the given pass needs blocks after the step has them: each block it
// needs becomes the successor of the block needed before it (DictCache's
// nears, set in its forward pre-hook and saved-tensor unpack hook).
func (c *cache) observe(needs []int, backward bool) {
	if c.place.Policy != PolicyWindow {
		return
	}
	if backward && !c.backward {
		c.curr = -1
	}
	c.backward = backward
	pass := 0
	if backward {
		pass = 1
	}
	for _, b := range needs {
		if c.curr >= 0 && c.curr != b {
			c.nears[pass][c.curr] = b
		}
		c.curr = b
	}
}

// freeSlot returns a free slot, evicting the block needed farthest ahead
// among those keep does not list when none is free.
func (c *cache) freeSlot(keep []int) (int, error) {
	if slot := slices.Index(c.slots, -1); slot >= 0 {
		return slot, nil
	}
	victim := c.victim(keep)
	if victim < 0 {
		return -1, fmt.Errorf("engine: a window of %d blocks cannot hold the %d blocks one step needs", len(c.slots), len(keep))
	}
	slot := c.slotOf[victim]
	return slot, c.evict(victim, c.dirty[victim])
}

// prefetch, under the auto policy, loads the next block that a coming step
// needs and is not resident, so that on a device with a copy stream the
// copy overlaps the steps before it. It evicts a block only when that block
// is needed later than the one it makes room for, and never one the next
// step needs.
func (c *cache) prefetch(after int) error {
	if c.place.Policy != PolicyAuto {
		return nil
	}
	needs := c.needs
	c.now = after + 1
	for s := after + 1; s < len(needs); s++ {
		for _, b := range needs[s] {
			if c.slotOf[b] >= 0 {
				continue
			}
			slot := slices.Index(c.slots, -1)
			if slot < 0 {
				victim := c.victim(append(slices.Clone(needs[after+1]), needs[s]...))
				if victim < 0 || c.nextUse(victim) <= s {
					return nil // nothing resident is needed later than b
				}
				slot = c.slotOf[victim]
				if err := c.evict(victim, c.dirty[victim]); err != nil {
					return err
				}
			}
			c.prefetching = true
			defer func() { c.prefetching = false }()
			return c.load(b, slot)
		}
	}
	return nil
}

// live reports whether saved value v holds data a later step reads.
func (c *cache) live(v int) bool {
	val := c.plan.values[v]
	return val.produced >= 0 && val.produced <= c.done && val.lastUse > c.done
}

// pagedOut reports whether value v is a saved value of a paged block that
// is paged out: a step that computes it writes it through the staging
// buffer.
func (c *cache) pagedOut(v int) bool {
	val := c.plan.values[v]
	return val.kind == kindSaved && c.place.pagedBlock(val.block) && c.slotOf[val.block] < 0
}

// load puts block b in slot and has the mover copy it in.
func (c *cache) load(b, slot int) error {
	c.slots[slot], c.slotOf[b], c.dirty[b] = b, slot, false
	return c.mover.copyIn(b, slot)
}

// evict has the mover copy block b out (its parameters and moments only
// when writeParams is set) and frees its slot.
func (c *cache) evict(b int, writeParams bool) error {
	if err := c.mover.copyOut(b, writeParams); err != nil {
		return err
	}
	c.slots[c.slotOf[b]], c.slotOf[b], c.dirty[b] = -1, -1, false
	return nil
}

// member is one piece of a block's area that a copy moves: parameter
// param of Schedule.params itself (moment -1) or its Adam moment m (0) or
// v (1), or, when saved ≥ 0, that saved value.
type member struct{ param, moment, saved int }

// moves calls move for each member of block b that a copy moves, with its
// offset and elements in the block's area: the parameters and their
// moments when params is set, and the saved values that are live.
func (c *cache) moves(b int, params bool, move func(off, n int, m member) error) error {
	p, l := c.plan, c.layouts[b]
	if params {
		for j, i := range l.params {
			n := p.values[p.params[i]].elems
			if err := move(l.offsets[j], n, member{param: i, moment: -1, saved: -1}); err != nil {
				return err
			}
			if l.moments != nil {
				for k := range 2 {
					if err := move(l.moments[j][k], n, member{param: i, moment: k, saved: -1}); err != nil {
						return err
					}
				}
			}
		}
	}
	for j, v := range p.saved[b] {
		if c.live(v) {
			if err := move(l.saved[j], p.values[v].elems, member{saved: v}); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyIn binds block b to slot's device memory and uploads its master.
func (r *residency) copyIn(b, slot int) error {
	r.prog.bind(b, r.prog.dev.View(r.areas[slot], 0, r.prog.layouts[b].elems))
	return r.copyArea(b, true, true)
}

// copyOut downloads block b to its master and unbinds it.
func (r *residency) copyOut(b int, writeParams bool) error {
	if err := r.copyArea(b, false, writeParams); err != nil {
		return err
	}
	r.prog.unbind(b)
	return nil
}

// copyArea moves block b's members between its master and its device
// views: toDevice uploads, otherwise it downloads (see cache.moves).
func (r *residency) copyArea(b int, toDevice, params bool) error {
	prog, p := r.prog, r.prog.plan
	host := r.host[b]
	err := r.moves(b, params, func(off, n int, m member) error {
		var buf device.Buffer
		switch {
		case m.saved >= 0:
			buf = prog.buffers[m.saved]
		case m.moment >= 0:
			buf = prog.moments[m.param][m.moment]
		default:
			buf = prog.buffers[p.params[m.param]]
		}
		if toDevice {
			return prog.dev.Upload(buf, host[off:off+n])
		}
		return prog.dev.Download(host[off:off+n], buf)
	})
	if err != nil {
		return fmt.Errorf("engine: moving block %s: %w", p.spec.Blocks[b].Name, err)
	}
	return nil
}

// updateOnHost clips and applies Adam to block b on the host: its gradients
// are copied from the device, the master parameters and the host moments
// updated. The walk then drops a resident copy of the block without
// write-back, as its parameters on the device are now stale.
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
