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
	areas []device.Buffer // each slot's device memory
	host  [][]float32     // each block's master area
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
	gradHost    []float32
	wideHost    []float32 // a 16-bit gradient widened on the host
	// staging receives a saved value computed while its block is paged
	// out, on its way to the block's host master.
	staging device.Buffer
}

// pager is a paged placement's engine side: the policy's cache (package
// cache), which decides over block indices, and what the walk knows of the
// values in the blocks. The same pager, driven by the same walk, runs a
// Program (residency copies the blocks) and the dry run of
// Schedule.Copies (copyCounter counts them), so the counted copies are the
// ones a program makes.
type pager struct {
	*cache.Cache
	sched   *Schedule
	place   Placement
	layouts []layout
	done    int // last step executed in this Run, -1 before the first
}

// newPager returns an empty window of the given slots over the blocks pl
// pages, laid out as layouts, with m carrying out the cache's decisions.
func newPager(sc *Schedule, pl Placement, layouts []layout, window int, m cache.Mover) (*pager, error) {
	c, err := cache.New(pl.Cache, sc.cacheRun(pl), window, m)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return &pager{Cache: c, sched: sc, place: pl, layouts: layouts, done: -1}, nil
}

// cacheRun describes one Run to the cache of pl: per step the blocks it
// pages among those the step needs (the others are resident), the paged
// blocks' updates and the passes' orders of the paged blocks.
func (sc *Schedule) cacheRun(pl Placement) cache.Run {
	run := cache.Run{Blocks: len(sc.spec.Blocks), Steps: make([]cache.Step, len(sc.steps))}
	for si, need := range sc.pagedNeeds(pl) {
		run.Steps[si] = cache.Step{Needs: need, Backward: sc.steps[si].backward}
	}
	for _, u := range sc.updates {
		if pl.pagedBlock(u.block) {
			run.Updates = append(run.Updates, cache.Update{Block: u.block, After: u.after})
		}
	}
	for b, blk := range sc.spec.Blocks {
		if !blk.Trained() { // every parameter frozen: never written back
			if run.ReadOnly == nil {
				run.ReadOnly = make([]bool, len(sc.spec.Blocks))
			}
			run.ReadOnly[b] = true
		}
	}
	for pass, order := range sc.order {
		for _, b := range order {
			if pl.pagedBlock(b) {
				run.Order[pass] = append(run.Order[pass], b)
			}
		}
	}
	return run
}

// newResidency sizes the window, allocates its slots on the device and the
// master copies on the host. On error the host memory it took is freed;
// the device slots are the program's, which Close frees.
func (prog *Program) newResidency() (res *residency, err error) {
	sc := prog.sched
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
	staging := sc.largestSaved()
	window := sc.window(prog.place, free-4*int64(staging), 0, 4*int64(largest))
	r := &residency{prog: prog, host: make([][]float32, len(prog.layouts))}
	defer func() {
		if err != nil {
			r.free()
		}
	}()
	if r.pager, err = newPager(sc, prog.place, prog.layouts, window, r); err != nil {
		return nil, err
	}
	for i := range r.Window() {
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
			if r.host[blk], err = r.hostAlloc(l.elems); err != nil {
				return nil, fmt.Errorf("engine: allocating block %s's host master: %w", sc.spec.Blocks[blk].Name, err)
			}
		}
	}
	if sc.spec.Train && prog.place.Cache.OptimizerOnHost {
		r.hostMoments = make([][2][]float32, len(sc.params))
		r.hostMasters = make([][]float32, len(sc.params))
		for i, pv := range sc.params {
			if n := sc.count(pv); prog.place.pagedBlock(sc.values[pv].block) && !sc.values[pv].frozen {
				state, err := r.hostAlloc(sc.stateElems(i))
				if err != nil {
					return nil, fmt.Errorf("engine: allocating the host optimizer state of %s: %w", sc.values[pv].node.Name(), err)
				}
				r.hostMoments[i] = [2][]float32{state[:n:n], state[n : 2*n : 2*n]}
				if sc.values[pv].half {
					r.hostMasters[i] = state[2*n:]
				}
			}
		}
	}
	return r, nil
}

// hostAlloc returns n zeroed floats of host memory that free releases.
func (r *residency) hostAlloc(n int) ([]float32, error) {
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

// setParam writes a parameter's master copy, and its device copy when the
// block is resident.
func (r *residency) setParam(valueIndex int, data []float32) error {
	sc := r.prog.sched
	b, off := r.paramPlace(valueIndex)
	if n := sc.count(valueIndex); len(data) != n {
		return fmt.Errorf("%d values for a parameter of %d", len(data), n)
	}
	if i := sc.paramIndex(valueIndex); sc.values[valueIndex].half {
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
		data = packedHalf(sc.format(), data)
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
	if !v.half {
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
		unpackHalf(sc.format(), out, r.host[b][off:off+v.elems])
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
	return val.kind == kindSaved && c.place.pagedBlock(val.block) && !c.Resident(val.block)
}

// member is one piece of a block's area that a copy moves: parameter
// param of Schedule.params itself (moment -1) or its Adam moment m (0) or
// v (1) or, for a 16-bit parameter, its float32 master (2), or, when
// saved ≥ 0, that saved value.
type member struct{ param, moment, saved int }

// moves calls move for each member of block b that a copy moves, with its
// offset and elements in the block's area: the parameters and their
// moments when params is set (the frozen parameters only when frozen is
// set too: a load copies them, a write-back never does, as nothing changes
// them), and the saved values that are live.
func (c *pager) moves(b int, params, frozen bool, move func(off, n int, m member) error) error {
	sc, l := c.sched, c.layouts[b]
	if params {
		for j, i := range l.params {
			if sc.values[sc.params[i]].frozen && !frozen {
				continue
			}
			if err := move(l.offsets[j], sc.values[sc.params[i]].elems, member{param: i, moment: -1, saved: -1}); err != nil {
				return err
			}
			if l.moments != nil {
				n := sc.count(sc.params[i])
				offs := []int{l.moments[j][0], l.moments[j][1], l.masters[j]}
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

// Load binds block b to slot's device memory and uploads its master.
func (r *residency) Load(b, slot int, _ bool) error {
	r.prog.bind(b, r.prog.dev.View(r.areas[slot], 0, r.prog.layouts[b].elems))
	return r.copyArea(b, true, true)
}

// Evict downloads block b to its master (the parameters and moments only
// when writeParams is set, the live saved values always) and unbinds it.
func (r *residency) Evict(b int, writeParams bool) error {
	if err := r.copyArea(b, false, writeParams); err != nil {
		return err
	}
	r.prog.unbind(b)
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
		if sc.values[g].half { // copied as stored, widened here
			if cap(r.wideHost) < sc.values[g].elems {
				r.wideHost = make([]float32, sc.values[g].elems)
			}
			into = r.wideHost[:sc.values[g].elems]
		}
		if err := prog.dev.Download(into, prog.buffers[g]); err != nil {
			return fmt.Errorf("engine: copying block %s's gradients: %w", sc.spec.Blocks[b].Name, err)
		}
		if sc.values[g].half {
			unpackHalf(sc.format(), grads[j], into)
		}
		sumSquares += hostmath.SumSquares(grads[j])
	}
	scale, ok := prog.gradScale(sumSquares)
	if !ok {
		return nil
	}
	prog.adamSteps[b]++
	for j, i := range trained {
		pv := sc.params[i]
		params := r.host[b][l.offsets[at[j]] : l.offsets[at[j]]+sc.values[pv].elems]
		if sc.values[pv].half {
			hostmath.AdamStep(sc.spec.Optimizer, r.hostMasters[i], grads[j], r.hostMoments[i][0], r.hostMoments[i][1], scale, prog.adamSteps[b])
			packHalf(sc.format(), params, r.hostMasters[i])
			continue
		}
		hostmath.AdamStep(sc.spec.Optimizer, params, grads[j], r.hostMoments[i][0], r.hostMoments[i][1], scale, prog.adamSteps[b])
	}
	return nil
}

// stageOutput returns the buffer a step writes a saved value into when the
// value's block is paged out: a view of the staging buffer.
func (r *residency) stageOutput(v int) device.Buffer {
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
