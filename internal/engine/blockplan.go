package engine

import (
	"fmt"
	"slices"

	"gpuz/internal/cache"
	"gpuz/internal/device"
)

// blockPlan is a placement that keeps each block in one place (Resident,
// Paged and Hybrid are its three shapes) bound to a schedule: each block
// resident on the device, resident in host memory and computed there, or
// paged through a window of device slots under a cache policy.
type blockPlan struct {
	sc    *Schedule
	where []Where      // each block's place
	cache cache.Config // the policy of the blocks placed InCache
	sd    sides
	ls    []layout
}

// placeBlocks binds blocks placed as where (nil: every block resident on
// the device) to the schedule, the InCache ones paged under c.
func (sc *Schedule) placeBlocks(where []Where, c cache.Config) (*blockPlan, error) {
	if where == nil {
		where = make([]Where, len(sc.spec.Blocks))
	}
	if len(where) != len(sc.spec.Blocks) {
		return nil, fmt.Errorf("the placement names %d blocks, the model has %d", len(where), len(sc.spec.Blocks))
	}
	bp := &blockPlan{sc: sc, where: where, cache: c}
	var err error
	if bp.sd, err = sc.sides(where); err != nil {
		return nil, err
	}
	bp.ls = sc.layouts(bp.momentsInArea)
	return bp, nil
}

// paged reports whether the cache pages block b.
func (bp *blockPlan) paged(b int) bool { return bp.where[b] == InCache }

// pagesAny reports whether the cache pages some block.
func (bp *blockPlan) pagesAny() bool { return slices.Contains(bp.where, InCache) }

// momentsInArea reports whether Adam's moments of block b sit in its area
// and travel with it: resident blocks and the paged ones under a policy
// that pages them (window-paged, auto with the optimizer on the device).
// Under the window policy a paged block's moments are resident on the
// device apart from the areas, and with the optimizer on the host they
// stay in host memory.
func (bp *blockPlan) momentsInArea(b int) bool {
	return !bp.paged(b) || bp.cache.Moments() == cache.MomentsWithBlock
}

// momentsResident reports whether block b's Adam moments stay on the
// device for the whole run outside the window (a paged block under the
// window policy).
func (bp *blockPlan) momentsResident(b int) bool {
	return bp.paged(b) && bp.cache.Moments() == cache.MomentsOnDevice
}

// pagedBlocks counts the blocks the cache pages.
func (bp *blockPlan) pagedBlocks() int {
	n := 0
	for b := range bp.where {
		if bp.paged(b) {
			n++
		}
	}
	return n
}

// cacheRun describes one Run to the cache: per step the paged blocks
// among those it needs (the others are resident), the paged blocks'
// updates and the passes' orders of the paged blocks.
func (bp *blockPlan) cacheRun() cache.Run {
	sc := bp.sc
	run := cache.Run{Blocks: len(sc.spec.Blocks), Steps: make([]cache.Step, len(sc.steps))}
	for si, need := range sc.needs {
		var paged []int
		for _, b := range need {
			if bp.paged(b) {
				paged = append(paged, b)
			}
		}
		run.Steps[si] = cache.Step{Needs: paged, Backward: sc.steps[si].backward}
		if v := sc.values[sc.steps[si].out]; v.state && bp.paged(v.block) {
			run.Steps[si].Writes = []int{v.block}
		}
	}
	for _, u := range sc.updates {
		if bp.paged(u.block) {
			run.Updates = append(run.Updates, cache.Update{Block: u.block, After: u.after})
		}
	}
	for b, blk := range sc.spec.Blocks {
		// Every parameter frozen, or a generation's (whose passes change no
		// weight), and no state: never written back.
		if (!blk.Trained() || len(sc.spec.Passes) > 0) && len(blk.State) == 0 {
			if run.ReadOnly == nil {
				run.ReadOnly = make([]bool, len(sc.spec.Blocks))
			}
			run.ReadOnly[b] = true
		}
	}
	for pass, order := range sc.order {
		for _, b := range order {
			if bp.paged(b) {
				run.Order[pass] = append(run.Order[pass], b)
			}
		}
	}
	return run
}

// givenWindow is the window of window blocks as Load makes it: raised to
// the most paged blocks one step needs and capped at the paged blocks; an
// error for a window of no block.
func (bp *blockPlan) givenWindow(window int) (int, error) {
	if window <= 0 {
		return 0, fmt.Errorf("engine: a window of %d blocks", window)
	}
	return min(max(window, bp.cacheRun().MinWindow()), bp.pagedBlocks()), nil
}

// windowFor returns the number of resident paged blocks: at least the most
// paged blocks one step needs, at most the paged blocks; a policy that
// sizes its window takes as many as deviceFree holds beyond fixed.
func (bp *blockPlan) windowFor(deviceFree, fixed int64) int {
	return bp.cache.Slots(deviceFree, fixed, bp.slotBytes, bp.cacheRun().MinWindow(), bp.pagedBlocks())
}

// slotAreas returns the elements of each device buffer that a window of
// window paged blocks keeps them in. A slot holds any block when every
// slot is the size of the largest paged area (DictCache's window of
// equal blocks); where the paged blocks differ in size and it takes
// less memory, each size of area gets its own slots, as many as blocks of
// that size can be resident at once (the window, or the blocks of that
// size when fewer), so that a window over one large block (a tied
// embedding) and many small ones holds one large slot, not a window of
// them. The list is sorted by size, largest first; uniform reports the
// first kind.
func (bp *blockPlan) slotAreas(window int) (areas []int, uniform bool) {
	count := map[int]int{} // paged blocks per area size
	largest := 0
	for b, l := range bp.ls {
		if bp.paged(b) {
			count[l.elems]++
			largest = max(largest, l.elems)
		}
	}
	var sized []int
	var sizedElems, uniformElems int64
	for elems, n := range count {
		for range min(n, window) {
			sized = append(sized, elems)
		}
		sizedElems += int64(min(n, window)) * int64(elems)
	}
	uniformElems = int64(window) * int64(largest)
	if sizedElems >= uniformElems {
		return slices.Repeat([]int{largest}, window), true
	}
	slices.SortFunc(sized, func(a, b int) int { return b - a })
	return sized, false
}

// slotBytes is the bytes of the slots of a window of window blocks.
func (bp *blockPlan) slotBytes(window int) int64 {
	areas, _ := bp.slotAreas(window)
	var n int64
	for _, a := range areas {
		n += 4 * int64(a)
	}
	return n
}

func (bp *blockPlan) sides() sides { return bp.sd }

// footprint is what the placement needs: the resident blocks' areas, the
// arenas, inputs and crossing copies, each on its side, and for the paged
// blocks a window of slots and the staging buffer on the device and their
// masters in host memory, with their optimizer state where the policy
// keeps it.
func (bp *blockPlan) footprint(deviceFree int64) Footprint {
	sc := bp.sc
	var largest int64
	for _, l := range bp.ls {
		largest = max(largest, 4*int64(l.elems))
	}
	resident := slices.Clone(bp.ls)
	var paged, slot, optimizer int64
	for blk, l := range bp.ls {
		if !bp.paged(blk) {
			continue
		}
		resident[blk].elems = 0
		paged += 4 * int64(l.elems)
		slot = max(slot, 4*int64(l.elems))
		for _, i := range l.params {
			optimizer += 4 * int64(sc.stateElems(i))
		}
	}
	dev, host := sc.sideBytes(bp.sd, resident)
	if !bp.pagesAny() {
		return Footprint{Window: len(bp.ls), Device: dev, Host: host, BlockBytes: largest}
	}
	fixed := dev + 4*int64(sc.largestStaged(bp.paged)) // the staging buffer
	if sc.spec.Train && bp.cache.Moments() == cache.MomentsOnDevice {
		fixed += optimizer // the paged blocks' moments, resident for the run
	}
	window := bp.windowFor(deviceFree, fixed)
	f := Footprint{Window: window, Device: bp.slotBytes(window) + fixed, Host: host + paged, BlockBytes: slot}
	if sc.spec.Train && bp.cache.Moments() == cache.MomentsOnHost {
		f.Host += optimizer
	}
	return f
}

// load allocates the inputs, each side's arena and 16-bit scratch, the
// crossing values' mirrors, the moments kept apart from the areas and
// the resident blocks' areas, each on its side, then the paged blocks'
// residency.
func (bp *blockPlan) load(prog *Program) (placed, error) {
	sc, sd := bp.sc, bp.sd
	var err error
	for i, v := range sc.values {
		if v.kind != kindInput && v.kind != kindSeed {
			continue
		}
		if prog.buffers[i], err = prog.allocOn(sd.valueHost[i], v.elems); err != nil {
			return nil, fmt.Errorf("engine: allocating %s: %w", v.node.Name(), err)
		}
		if v.kind == kindSeed {
			if err := prog.on(sd.valueHost[i]).Upload(prog.buffers[i], []float32{1}); err != nil {
				return nil, fmt.Errorf("engine: setting the gradient seed: %w", err)
			}
		}
	}
	var arena [2]device.Buffer // each side's arena
	for side, n := range sd.arena {
		if n == 0 {
			continue
		}
		if arena[side], err = prog.allocOn(side == 1, n); err != nil {
			return nil, fmt.Errorf("engine: allocating activations: %w", err)
		}
	}
	for side := range prog.scratch16 {
		n := sc.scratchFor(func(si int) bool { return sd.stepHost[si] == (side == 1) })
		if n == 0 {
			continue
		}
		if prog.scratch16[side], err = prog.allocOn(side == 1, n); err != nil {
			return nil, fmt.Errorf("engine: allocating the 16-bit conversions' scratch: %w", err)
		}
	}
	for i, v := range sc.values {
		if v.kind == kindTemporary {
			side := 0
			if sd.valueHost[i] {
				side = 1
			}
			prog.buffers[i] = prog.on(side == 1).View(arena[side], sd.offset[i], v.elems)
		}
	}
	for i, v := range sc.values {
		if sd.mirrored[i] {
			if prog.mirrors[i], err = prog.allocOn(!sd.valueHost[i], v.elems); err != nil {
				return nil, fmt.Errorf("engine: allocating the copy of %s: %w", v.node.Name(), err)
			}
		}
	}
	prog.layouts = bp.ls
	if sc.spec.Train {
		if err := bp.allocMoments(prog); err != nil {
			return nil, err
		}
	}
	for b, l := range bp.ls {
		if bp.paged(b) {
			continue
		}
		area, err := prog.allocOn(sd.blockHost[b], l.elems)
		if err != nil {
			return nil, fmt.Errorf("engine: allocating block %s: %w", sc.spec.Blocks[b].Name, err)
		}
		prog.bind(b, area)
	}
	if !bp.pagesAny() {
		return stays{blocks: len(bp.ls)}, nil
	}
	return bp.newResidency(prog)
}

// allocMoments allocates the Adam moments of every parameter of a block
// that the placement keeps resident on the device apart from its area, for
// the whole run (a paged block under the window policy: DictCache's
// optimizers create their state on the GPU and it never moves). Alloc
// zeroes them, as Adam starts.
func (bp *blockPlan) allocMoments(prog *Program) error {
	sc := bp.sc
	for i, pv := range sc.params {
		if !bp.momentsResident(sc.values[pv].block) || sc.values[pv].frozen {
			continue
		}
		n := sc.count(pv)
		buf, err := prog.alloc(sc.stateElems(i))
		if err != nil {
			return fmt.Errorf("engine: allocating the optimizer state of %s: %w", sc.values[pv].node.Name(), err)
		}
		prog.moments[i] = [2]device.Buffer{prog.dev.View(buf, 0, n), prog.dev.View(buf, n, n)}
		if sc.values[pv].store.narrow() {
			prog.masters[i] = prog.dev.View(buf, 2*n, n)
		}
		if off := sc.accumOffset(i); off >= 0 {
			prog.accums[i] = prog.dev.View(buf, off, n)
		}
	}
	return nil
}

// moves counts the paged blocks' copies: the cache that drives a Program,
// walked over the same steps with a mover that counts instead of
// copying, in a window of window blocks. Nothing when no block is paged.
func (bp *blockPlan) moves(window int, epoch func(runHooks, stepper) error) (Copies, error) {
	if !bp.pagesAny() {
		return Copies{}, nil
	}
	window, err := bp.givenWindow(window)
	if err != nil {
		return Copies{}, err
	}
	k := &copyCounter{}
	if k.pager, err = bp.newPager(window, k, k.hostUpdate); err != nil {
		return Copies{}, err
	}
	for range 2 { // the second epoch is counted
		k.n = Copies{}
		if err := epoch(k.pager, k); err != nil {
			return Copies{}, err
		}
	}
	return k.n, nil
}
