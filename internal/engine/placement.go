package engine

import (
	"errors"
	"fmt"
	"slices"

	"gpuz/internal/cache"
)

// Placement says where a program keeps its blocks' parameters, optimizer
// state and saved activations.
type Placement struct {
	// Paged keeps every block's master copy in host memory and only a
	// window of blocks on the device (cache mode), as Cache says.
	// Otherwise every block stays resident (cuda and cpu modes).
	Paged bool
	// Cache is the paged blocks' policy, window and optimizer place. Its
	// window is raised to the schedule's MinWindow and capped at the number
	// of paged blocks.
	Cache cache.Config
	// Blocks, when set, says per block (as Spec.Blocks) where the placement
	// keeps and computes it: a hybrid placement when some block is OnHost.
	// A Paged placement with Blocks pages only the blocks placed InCache,
	// the others staying resident on their side. Nil keeps every block on
	// the device, resident or (Paged) paged.
	Blocks []Where
	// Managed keeps every block resident in managed (unified) memory, run
	// as the resident placement runs, the pages migrating between host
	// and device as a kernel touches them (cache.Pages: the least
	// recently touched page out first) when the device's free memory
	// cannot hold them all. PageSize is the unit of migration, a power
	// of two of at least cache.MinPageSize.
	Managed  bool
	PageSize int64
	// AdviseHost, with Managed, keeps the pages that do not fit the
	// device's free memory in host memory (their preferred location), the
	// kernels reading and writing them there across the bus instead of
	// migrating them: the Windows driver's fallback. The pages that fit
	// migrate once and stay.
	AdviseHost bool
}

// Validate reports a placement that cannot be used.
func (pl Placement) Validate() error {
	if pl.AdviseHost && !pl.Managed {
		return errors.New("advising the host is a managed placement's option")
	}
	if pl.Managed {
		switch {
		case pl.Paged || pl.Blocks != nil:
			return errors.New("a managed placement keeps every block resident in managed memory: no cache policy, no per-block placement")
		}
		return cache.CheckPageSize(pl.PageSize)
	}
	cached := slices.Contains(pl.Blocks, InCache)
	if cached && !pl.Paged {
		return fmt.Errorf("placement %s pages blocks but names no cache policy", PlaceText(pl.Blocks))
	}
	if pl.Paged && pl.Blocks != nil && !cached {
		return fmt.Errorf("%s policy: placement %s pages no block (want some cache: blocks)", pl.Cache.Policy, PlaceText(pl.Blocks))
	}
	if !pl.Paged {
		return nil
	}
	return pl.Cache.Validate()
}

// momentsInArea reports whether Adam's moments of block b sit in its area
// and travel with it: resident blocks and the paged ones under a policy
// that pages them (window-paged, auto with the optimizer on the device).
// Under the window policy a paged block's moments are resident on the
// device apart from the areas, and with the optimizer on the host they
// stay in host memory.
func (pl Placement) momentsInArea(b int) bool {
	return !pl.pagedBlock(b) || pl.Cache.Moments() == cache.MomentsWithBlock
}

// momentsResident reports whether a paged placement keeps block b's Adam
// moments on the device for the whole run, outside the window (the window
// policy).
func (pl Placement) momentsResident(b int) bool {
	return pl.pagedBlock(b) && pl.Cache.Moments() == cache.MomentsOnDevice
}

// pagedBlocks counts the blocks the cache of pl pages.
func (sc *Schedule) pagedBlocks(pl Placement) int {
	n := 0
	for b := range sc.spec.Blocks {
		if pl.pagedBlock(b) {
			n++
		}
	}
	return n
}

// pagedNeeds returns, per step, the blocks of sc.needs that pl pages: what
// the cache makes resident.
func (sc *Schedule) pagedNeeds(pl Placement) [][]int {
	out := make([][]int, len(sc.needs))
	for si, need := range sc.needs {
		for _, b := range need {
			if pl.pagedBlock(b) {
				out[si] = append(out[si], b)
			}
		}
	}
	return out
}

// layout is where each member of a block sits in the block's area, in
// elements from the area's start.
type layout struct {
	params  []int    // indices into Schedule.params
	offsets []int    // of each parameter
	moments [][2]int // of each parameter's m and v, when they travel with the block
	// masters holds the offset of each 16-bit parameter's float32 master,
	// after its moments; -1 for a float32 parameter.
	masters []int
	saved   []int // offsets of the block's saved values, as Schedule.saved[b]
	elems   int   // the area's size
}

// offsetInArea returns where parameter or saved value v sits in its
// block's area laid out as ls, in elements from the area's start.
func (sc *Schedule) offsetInArea(ls []layout, v int) int {
	val := sc.values[v]
	l := ls[val.block]
	switch val.kind {
	case kindParam:
		for j, i := range l.params {
			if sc.params[i] == v {
				return l.offsets[j]
			}
		}
	case kindSaved:
		if j := slices.Index(sc.saved[val.block], v); j >= 0 {
			return l.saved[j]
		}
	}
	panic(fmt.Sprintf("engine: value %d has no place in its block's area", v))
}

// layouts lays out every block's area: parameters, then their moments when
// they travel with the block, then saved activations.
func (sc *Schedule) layouts(pl Placement) []layout {
	out := make([]layout, len(sc.spec.Blocks))
	for i, pv := range sc.params {
		b := sc.values[pv].block
		out[b].params = append(out[b].params, i)
	}
	for b := range out {
		l := &out[b]
		for _, i := range l.params {
			l.offsets = append(l.offsets, l.elems)
			l.elems += sc.values[sc.params[i]].elems
		}
		if sc.spec.Train && pl.momentsInArea(b) {
			for _, i := range l.params {
				if sc.values[sc.params[i]].frozen { // no state: -1 offsets
					l.moments = append(l.moments, [2]int{-1, -1})
					l.masters = append(l.masters, -1)
					continue
				}
				n := sc.count(sc.params[i])
				l.moments = append(l.moments, [2]int{l.elems, l.elems + n})
				l.masters = append(l.masters, -1)
				if sc.values[sc.params[i]].half {
					l.masters[len(l.masters)-1] = l.elems + 2*n
				}
				l.elems += sc.stateElems(i)
			}
		}
		for _, v := range sc.saved[b] {
			l.saved = append(l.saved, l.elems)
			l.elems += sc.values[v].elems
		}
	}
	return out
}

// Footprint is the memory a placement of a schedule needs, in bytes.
type Footprint struct {
	Window int   // blocks resident at most
	Device int64 // on the device: resident areas, arena and inputs, and the window policy's optimizer state
	// Host is in host memory: master copies of paged blocks and host
	// optimizer state; under a hybrid placement, the host blocks' areas
	// and the arena, inputs and copies of crossing activations on the host.
	Host       int64
	BlockBytes int64 // the largest block area: what one window slot holds
	// Pages is a managed placement's region in pages of BlockBytes, of
	// which Window are resident at most; 0 for the others.
	Pages int
}

// Footprint computes what pl needs, before anything is allocated. For an
// auto policy with no fixed window, deviceFree sizes the window.
func (sc *Schedule) Footprint(pl Placement, deviceFree int64) Footprint {
	if pl.Managed {
		return sc.managedFootprint(pl, deviceFree)
	}
	b := sc.Bytes()
	ls := sc.layouts(pl)
	var all, largest int64
	for _, l := range ls {
		all += 4 * int64(l.elems)
		largest = max(largest, 4*int64(l.elems))
	}
	s, err := sc.sides(pl)
	if err != nil { // Load reports it; with no sides, all on the device
		return Footprint{Window: len(ls), Device: all + b.Inputs + b.Arena, BlockBytes: largest}
	}
	// The resident blocks' areas, the arenas, inputs and crossing copies,
	// each on its side; the paged blocks' areas count below.
	resident := slices.Clone(ls)
	var paged, slot, optimizer int64
	for blk, l := range ls {
		if !pl.pagedBlock(blk) {
			continue
		}
		resident[blk].elems = 0
		paged += 4 * int64(l.elems)
		slot = max(slot, 4*int64(l.elems))
		for _, i := range l.params {
			optimizer += 4 * int64(sc.stateElems(i))
		}
	}
	dev, host := sc.sideBytes(s, resident)
	if !pl.Paged {
		return Footprint{Window: len(ls), Device: dev, Host: host, BlockBytes: largest}
	}
	fixed := dev + 4*int64(sc.largestSaved()) // the staging buffer
	if sc.spec.Train && pl.Cache.Moments() == cache.MomentsOnDevice {
		fixed += optimizer // the paged blocks' moments, resident for the run
	}
	window := sc.window(pl, deviceFree, fixed, slot)
	f := Footprint{Window: window, Device: int64(window)*slot + fixed, Host: host + paged, BlockBytes: slot}
	if sc.spec.Train && pl.Cache.Moments() == cache.MomentsOnHost {
		f.Host += optimizer
	}
	return f
}

// givenWindow is a paged placement's window of window blocks as Load
// makes it: raised to the most paged blocks one step needs and capped at
// the paged blocks; an error for a window of no block.
func (sc *Schedule) givenWindow(pl Placement, window int) (int, error) {
	if window <= 0 {
		return 0, fmt.Errorf("engine: a window of %d blocks", window)
	}
	return min(max(window, sc.cacheRun(pl).MinWindow()), sc.pagedBlocks(pl)), nil
}

// window returns the number of resident blocks of a paged placement: at
// least the most paged blocks one step needs, at most the paged blocks.
func (sc *Schedule) window(pl Placement, deviceFree, fixed, slotBytes int64) int {
	return pl.Cache.Slots(deviceFree, fixed, slotBytes, sc.cacheRun(pl).MinWindow(), sc.pagedBlocks(pl))
}
