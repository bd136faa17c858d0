package engine

import (
	"fmt"
	"slices"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/hugemem"
)

// residency keeps a paged program's blocks: a master copy of every block's
// area in host memory and a window of device slots holding some blocks, as
// its pager's cache decides.
type residency struct {
	*pager
	prog  *Program
	areas []device.Buffer // each slot's device memory (blockPlan.slotAreas)
	// uniform says that every slot holds any block, so that a block goes
	// to the slot its cache puts it in; otherwise a block goes to a free
	// slot of its area's size. areaOf is each resident block's slot,
	// inUse whether a slot holds a block.
	uniform bool
	sizes   []int // each slot's elements
	areaOf  []int
	inUse   []bool
	host    [][]float32 // each block's master area
	// masters holds the host memory behind host and hostMoments, which
	// free hands back (large ones are mappings marked for huge pages:
	// package hugemem).
	masters []*hugemem.Floats
	// hostMoments holds Adam's moments per parameter when the optimizer
	// runs on the host.
	hostMoments [][2][]float32
	// hostMasters holds each 16-bit parameter's float32 master when the
	// optimizer runs on the host (its block's area holds the 16-bit copy).
	hostMasters [][]float32
	// hostAccums holds each trained parameter's gradient accumulator
	// when the optimizer runs on the host and the schedule accumulates
	// (Spec.Accumulate).
	hostAccums [][]float32
	gradHost   []float32
	wideHost   []float32 // a 16-bit gradient widened on the host
	// staging receives a saved value computed while its block is paged
	// out, on its way to the block's host master.
	staging device.Buffer
}

// pager is a paged placement's engine side: the policy's cache (package
// cache), which decides over block indices, and what the walk knows of the
// values in the blocks. The same pager, driven by the same walk, runs a
// Program (residency copies the blocks) and the dry run of
// Schedule.Copies (copyCounter counts them), so the counted copies are the
// ones a program makes. It is the walk's runHooks.
type pager struct {
	*cache.Cache
	plan    *blockPlan
	sched   *Schedule
	layouts []layout
	done    int // last step executed in this Run, -1 before the first
	// updateOnHost updates a paged block on the host, when the policy
	// keeps the optimizer there.
	updateOnHost func(b int) error
}

// newPager returns an empty window of the given slots over the blocks bp
// pages, with m carrying out the cache's decisions and onHost updating a
// block on the host.
func (bp *blockPlan) newPager(window int, m cache.Mover, onHost func(b int) error) (*pager, error) {
	c, err := cache.New(bp.cache, bp.cacheRun(), window, m)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return &pager{Cache: c, plan: bp, sched: bp.sc, layouts: bp.ls, done: -1, updateOnHost: onHost}, nil
}

func (c *pager) begin() { c.done = -1 }

// beforeStep makes step si's paged blocks resident; its output is staged
// when it is a saved value of a paged-out block.
func (c *pager) beforeStep(si int) (bool, error) {
	if err := c.Before(si); err != nil {
		return false, err
	}
	return c.pagedOut(c.sched.steps[si].out), nil
}

func (c *pager) executed(si int) { c.done = si }

// update runs update u of block b: a block the cache does not page on its
// side; a paged one on the host when the policy keeps the optimizer
// there, dropping the now stale device copy, otherwise on the device,
// with the block made resident first and marked changed.
func (c *pager) update(u update, st stepper) error {
	b := u.block
	if !c.plan.paged(b) {
		return st.update(b)
	}
	if c.plan.cache.OptimizerOnHost {
		if err := c.updateOnHost(b); err != nil {
			return err
		}
		return c.Drop(b)
	}
	if err := c.Update(b, u.after); err != nil {
		return err
	}
	return st.update(b)
}

func (c *pager) afterStep(si int) error { return c.After(si) }

// newResidency sizes the window, allocates its slots on the device and the
// master copies on the host. On error the host memory it took is freed;
// the device slots are the program's, which Close frees.
func (bp *blockPlan) newResidency(prog *Program) (res *residency, err error) {
	sc := bp.sc
	free, _, err := prog.dev.MemInfo()
	if err != nil {
		return nil, fmt.Errorf("engine: sizing the cache window: %w", err)
	}
	// The arena, the inputs and the resident blocks are already allocated:
	// free is what is left for the window.
	staging := sc.largestStaged(bp.paged)
	window := bp.windowFor(free-4*int64(staging), 0)
	r := &residency{prog: prog, host: make([][]float32, len(bp.ls)), areaOf: slices.Repeat([]int{-1}, len(bp.ls))}
	defer func() {
		if err != nil {
			r.free()
		}
	}()
	if r.pager, err = bp.newPager(window, r, r.updateOnHost); err != nil {
		return nil, err
	}
	sizes, uniform := bp.slotAreas(r.Window())
	r.uniform, r.sizes, r.inUse = uniform, sizes, make([]bool, len(sizes))
	for i, n := range sizes {
		area, err := prog.alloc(n)
		if err != nil {
			return nil, fmt.Errorf("engine: allocating cache slot %d of %d: %w", i+1, len(sizes), err)
		}
		r.areas = append(r.areas, area)
	}
	if staging > 0 {
		if r.staging, err = prog.alloc(staging); err != nil {
			return nil, fmt.Errorf("engine: allocating the staging buffer: %w", err)
		}
	}
	for blk, l := range bp.ls {
		if bp.paged(blk) {
			if r.host[blk], err = r.hostAlloc(l.elems); err != nil {
				return nil, fmt.Errorf("engine: allocating block %s's host master: %w", sc.spec.Blocks[blk].Name, err)
			}
		}
	}
	if sc.spec.Train && bp.cache.OptimizerOnHost {
		r.hostMoments = make([][2][]float32, len(sc.params))
		r.hostMasters = make([][]float32, len(sc.params))
		r.hostAccums = make([][]float32, len(sc.params))
		for i, pv := range sc.params {
			if n := sc.count(pv); bp.paged(sc.values[pv].block) && !sc.values[pv].frozen {
				state, err := r.hostAlloc(sc.stateElems(i))
				if err != nil {
					return nil, fmt.Errorf("engine: allocating the host optimizer state of %s: %w", sc.values[pv].node.Name(), err)
				}
				r.hostMoments[i] = [2][]float32{state[:n:n], state[n : 2*n : 2*n]}
				if sc.values[pv].store.narrow() {
					r.hostMasters[i] = state[2*n : 3*n : 3*n]
				}
				if off := sc.accumOffset(i); off >= 0 {
					r.hostAccums[i] = state[off : off+n : off+n]
				}
			}
		}
	}
	return r, nil
}

// window is the blocks the window holds.
func (r *residency) window() int { return r.Window() }

// hostAlloc returns n zeroed floats of host memory that free releases.
func (r *residency) hostAlloc(n int) ([]float32, error) {
	if err := r.prog.stopped(); err != nil {
		return nil, err
	}
	f, err := hugemem.Alloc(n)
	if err != nil {
		return nil, err
	}
	r.masters = append(r.masters, f)
	return f.Data, nil
}

// free releases the host masters and moments; nothing may read them
// after.
func (r *residency) free() {
	for _, f := range r.masters {
		f.Free()
	}
	r.masters, r.host, r.hostMoments = nil, nil, nil
}

// paramPlace returns a parameter's block and offset in the block's area.
func (r *residency) paramPlace(valueIndex int) (block, offset int) {
	sc := r.prog.sched
	return sc.values[valueIndex].block, sc.offsetInArea(r.prog.layouts, valueIndex)
}

// setParam writes a paged parameter's master copy, and its device copy
// when the block is resident; it reports false for the other values.
func (r *residency) setParam(valueIndex int, data []float32) (bool, error) {
	sc := r.prog.sched
	if v := sc.values[valueIndex]; v.kind != kindParam || !r.plan.paged(v.block) {
		return false, nil
	}
	return true, r.setMaster(valueIndex, data)
}

// setMaster writes parameter valueIndex's master copy, and its device copy
// when the block is resident.
func (r *residency) setMaster(valueIndex int, data []float32) error {
	sc := r.prog.sched
	b, off := r.paramPlace(valueIndex)
	switch v := sc.values[valueIndex]; {
	case v.store == quantized: // its words, as stored; frozen: no master
		if len(data) != v.elems {
			return fmt.Errorf("%d words for a quantized parameter of %d", len(data), v.elems)
		}
	case len(data) != sc.count(valueIndex):
		return fmt.Errorf("%d values for a parameter of %d", len(data), sc.count(valueIndex))
	}
	if i := sc.paramIndex(valueIndex); sc.values[valueIndex].store.narrow() {
		if m := r.prog.masters[i]; m != nil { // resident on the device with the moments
			if err := r.prog.dev.Upload(m, data); err != nil {
				return err
			}
		}
		if r.hostMasters != nil && r.hostMasters[i] != nil {
			copy(r.hostMasters[i], data)
		}
		if off := r.masterInArea(i); off >= 0 { // paged with the block
			copy(r.host[b][off:off+len(data)], data)
		}
		data = packedHalf(sc.formatOf(valueIndex), data)
	}
	copy(r.host[b][off:off+len(data)], data)
	if r.Resident(b) {
		return r.prog.dev.Upload(r.prog.buffers[valueIndex], data)
	}
	return nil
}

// readParam returns a copy of a paged-out parameter's master: a 16-bit
// parameter's float32 master where it has one.
func (r *residency) readParam(valueIndex int) ([]float32, error) {
	sc := r.prog.sched
	b, off := r.paramPlace(valueIndex)
	v := sc.values[valueIndex]
	if v.store == quantized {
		return sc.dequantizedWords(valueIndex, r.host[b][off:off+v.elems])
	}
	if !v.store.narrow() {
		return append([]float32(nil), r.host[b][off:off+v.elems]...), nil
	}
	i, n := sc.paramIndex(valueIndex), sc.count(valueIndex)
	out := make([]float32, n)
	switch moff := r.masterInArea(i); {
	case r.hostMasters != nil && r.hostMasters[i] != nil:
		copy(out, r.hostMasters[i])
	case moff >= 0:
		copy(out, r.host[b][moff:moff+n])
	case r.prog.masters[i] != nil: // resident on the device with the moments
		if err := r.prog.dev.Download(out, r.prog.masters[i]); err != nil {
			return nil, err
		}
	default:
		unpackHalf(sc.formatOf(valueIndex), out, r.host[b][off:off+v.elems])
	}
	return out, nil
}

// masterInArea returns the offset in its block's area of parameter i's
// float32 master, which a policy paging the moments with the block moves
// with it; -1 when it has none there.
func (r *residency) masterInArea(i int) int {
	sc := r.prog.sched
	l := r.prog.layouts[sc.values[sc.params[i]].block]
	if l.masters == nil {
		return -1
	}
	return l.masters[slices.Index(l.params, i)]
}

// live reports whether saved value v holds data a later step reads.
func (c *pager) live(v int) bool {
	val := c.sched.values[v]
	return val.produced >= 0 && val.produced <= c.done && val.lastUse > c.done
}

// pagedOut reports whether value v is a saved value of a paged block that
// is paged out: a step that computes it writes it through the staging
// buffer.
func (c *pager) pagedOut(v int) bool {
	val := c.sched.values[v]
	return val.kind == kindSaved && c.plan.paged(val.block) && !c.Resident(val.block)
}

// member is one piece of a block's area that a copy moves: parameter
// param of Schedule.params itself (moment -1) or its Adam moment m (0) or
// v (1) or, for a 16-bit parameter, its float32 master (2), or its
// gradient accumulator (3, Spec.Accumulate), or, when saved ≥ 0, that
// saved value.
type member struct{ param, moment, saved int }

// moves calls move for each member of block b that a copy moves, with its
// offset and elements in the block's area: the parameters and their
// moments when params is set (those nothing changes only when frozen is
// set too: a load copies them, a write-back never does: the frozen
// parameters, and in a schedule of passes, a generation, every parameter
// but the blocks' state — it streams its weights and writes back its
// caches), and the saved values that are live. (An evaluation without
// passes writes back its weights as the reference's DictCache moves a
// module back to the host.)
func (c *pager) moves(b int, params, frozen bool, move func(off, n int, m member) error) error {
	sc, l := c.sched, c.layouts[b]
	streams := len(sc.spec.Passes) > 0
	if params {
		for j, i := range l.params {
			v := sc.values[sc.params[i]]
			if unchanged := v.frozen || (streams && !v.state); unchanged && !frozen {
				continue
			}
			if err := move(l.offsets[j], sc.values[sc.params[i]].elems, member{param: i, moment: -1, saved: -1}); err != nil {
				return err
			}
			if l.moments != nil {
				n := sc.count(sc.params[i])
				offs := []int{l.moments[j][0], l.moments[j][1], l.masters[j], l.accums[j]}
				for k, off := range offs {
					if off < 0 {
						continue
					}
					if err := move(off, n, member{param: i, moment: k, saved: -1}); err != nil {
						return err
					}
				}
			}
		}
	}
	for j, v := range sc.saved[b] {
		if c.live(v) {
			if err := move(l.saved[j], sc.values[v].elems, member{saved: v}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Load binds block b to a slot's device memory (the cache's slot, or a
// free one of its size) and uploads its master.
func (r *residency) Load(b, slot int, _ bool) error {
	elems := r.prog.layouts[b].elems
	if !r.uniform {
		slot = -1
		for i, n := range r.sizes {
			if !r.inUse[i] && n == elems {
				slot = i
				break
			}
		}
		if slot < 0 { // slotAreas keeps a slot of each size for every block of it the window holds
			return fmt.Errorf("engine: no free cache slot of %d elements for block %s", elems, r.prog.sched.spec.Blocks[b].Name)
		}
	}
	r.areaOf[b], r.inUse[slot] = slot, true
	r.prog.bind(b, r.prog.dev.View(r.areas[slot], 0, elems))
	return r.copyArea(b, true, true)
}

// Evict downloads block b to its master (the parameters and moments only
// when writeParams is set, the live saved values always) and unbinds it.
func (r *residency) Evict(b int, writeParams bool) error {
	if err := r.copyArea(b, false, writeParams); err != nil {
		return err
	}
	r.prog.unbind(b)
	r.inUse[r.areaOf[b]], r.areaOf[b] = false, -1
	return nil
}

// copyArea moves block b's members between its master and its device
// views: toDevice uploads, otherwise it downloads (see cache.moves).
func (r *residency) copyArea(b int, toDevice, params bool) error {
	prog, sc := r.prog, r.prog.sched
	host := r.host[b]
	err := r.moves(b, params, toDevice, func(off, n int, m member) error {
		var buf device.Buffer
		switch {
		case m.saved >= 0:
			buf = prog.buffers[m.saved]
		case m.moment == 2:
			buf = prog.masters[m.param]
		case m.moment == 3:
			buf = prog.accums[m.param]
		case m.moment >= 0:
			buf = prog.moments[m.param][m.moment]
		default:
			buf = prog.buffers[sc.params[m.param]]
		}
		if toDevice {
			return prog.dev.Upload(buf, host[off:off+n])
		}
		return prog.dev.Download(host[off:off+n], buf)
	})
	if err != nil {
		return fmt.Errorf("engine: moving block %s: %w", sc.spec.Blocks[b].Name, err)
	}
	return nil
}

// updateOnHost clips and applies Adam to block b on the host: its gradients
// are copied from the device, the master parameters and the host moments
// updated. The walk then drops a resident copy of the block without
// write-back, as its parameters on the device are now stale.
func (r *residency) updateOnHost(b int) error {
	prog, sc, l := r.prog, r.prog.sched, r.prog.layouts[b]
	total := 0
	var trained []int // the block's trained parameters, and their places in l.params
	var at []int
	for j, i := range l.params {
		if sc.grads[i] >= 0 {
			trained, at = append(trained, i), append(at, j)
			total += sc.count(sc.grads[i])
		}
	}
	if cap(r.gradHost) < total {
		r.gradHost = make([]float32, total)
	}
	grads := make([][]float32, len(trained))
	sumSquares, off := 0.0, 0
	for j, i := range trained {
		g := sc.grads[i]
		n := sc.count(g)
		grads[j] = r.gradHost[off : off+n]
		off += n
		into := grads[j]
		if sc.values[g].store.narrow() { // copied as stored, widened here
			if cap(r.wideHost) < sc.values[g].elems {
				r.wideHost = make([]float32, sc.values[g].elems)
			}
			into = r.wideHost[:sc.values[g].elems]
		}
		if err := prog.dev.Download(into, prog.buffers[g]); err != nil {
			return fmt.Errorf("engine: copying block %s's gradients: %w", sc.spec.Blocks[b].Name, err)
		}
		if sc.values[g].store.narrow() {
			unpackHalf(sc.format(), grads[j], into)
		}
		sumSquares += hostmath.SumSquares(grads[j])
	}
	if sc.accumulates() && !r.accumulateOnHost(trained, grads, &sumSquares) {
		return nil
	}
	scale, ok := prog.stepScale(sumSquares)
	if !ok {
		return nil
	}
	prog.adamSteps[b]++
	for j, i := range trained {
		pv := sc.params[i]
		params := r.host[b][l.offsets[at[j]] : l.offsets[at[j]]+sc.values[pv].elems]
		if sc.values[pv].store.narrow() {
			hostmath.AdamStep(sc.spec.Optimizer, r.hostMasters[i], grads[j], r.hostMoments[i][0], r.hostMoments[i][1], scale, prog.adamSteps[b])
			packHalf(sc.format(), params, r.hostMasters[i])
			continue
		}
		hostmath.AdamStep(sc.spec.Optimizer, params, grads[j], r.hostMoments[i][0], r.hostMoments[i][1], scale, prog.adamSteps[b])
	}
	return nil
}

// stage returns the buffer a step writes a saved value into when the
// value's block is paged out: a view of the staging buffer.
func (r *residency) stage(v int) device.Buffer {
	return r.prog.dev.View(r.staging, 0, r.prog.sched.values[v].elems)
}

// unstage copies a staged saved value to its block's host master.
func (r *residency) unstage(v int, staged device.Buffer) error {
	sc := r.prog.sched
	b, off := sc.values[v].block, sc.offsetInArea(r.prog.layouts, v)
	if err := r.prog.dev.Download(r.host[b][off:off+sc.values[v].elems], staged); err != nil {
		return fmt.Errorf("engine: staging a saved activation of block %s: %w", sc.spec.Blocks[b].Name, err)
	}
	return nil
}
