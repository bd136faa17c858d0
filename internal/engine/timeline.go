package engine

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"gpuz/internal/cache"
)

// Category is what a piece of a placement's device memory holds at a point
// of a Run.
type Category int

// The categories, in the order a picture stacks them.
const (
	// Weights are the resident blocks' parameters.
	Weights Category = iota
	// Gradients are the parameters' gradients, in the arena from their
	// computation to their block's update.
	Gradients
	// OptimizerState is Adam's two moments: with the resident blocks, and
	// the paged blocks' under the window policy.
	OptimizerState
	// SavedActivations are the resident blocks' saved values, from the
	// forward step that computes them to the backward step that last
	// reads them.
	SavedActivations
	// Temporaries are the other computed values in the arena (and the
	// mirrors of a hybrid placement's crossing values) while they live.
	Temporaries
	// Inputs are one batch and its target (and the backward pass's seed).
	Inputs
	// PagingSlots is a paged placement's window of block slots and its
	// staging buffer: the paged blocks' weights, moments and saved values
	// move through them.
	PagingSlots
	// Idle is memory the placement holds that no live value occupies at
	// the point: the arena's elements no live value fills, or a saved
	// value's place before it is computed and after its last reader.
	Idle
	numCategories
)

// Categories returns every category, in the order of their constants.
func Categories() []Category {
	out := make([]Category, numCategories)
	for i := range out {
		out[i] = Category(i)
	}
	return out
}

// categoryNames name the categories, indexed by Category.
var categoryNames = [numCategories]string{"weights", "gradients", "optimizer state", "saved activations",
	"temporaries", "inputs", "paging slots", "allocated, idle"}

// String names a category as a picture's legend does.
func (c Category) String() string {
	if c < 0 || c >= numCategories {
		return fmt.Sprintf("category(%d)", int(c))
	}
	return categoryNames[c]
}

// Phase says which part of a Run a point of a timeline belongs to.
type Phase int

// The phases.
const (
	Forward  Phase = iota // a step of the forward pass
	Backward              // a step of the backward pass (recompute's re-run forward steps included)
	Update                // a block's optimizer update
)

// String names the phase.
func (ph Phase) String() string {
	switch ph {
	case Forward:
		return "forward"
	case Backward:
		return "backward"
	case Update:
		return "update"
	}
	return fmt.Sprintf("phase(%d)", int(ph))
}

// ErrNoTimeline is Timeline's error for a placement whose memory has no
// timeline: a managed placement's pages migrate as kernels touch them.
var ErrNoTimeline = errors.New("engine: a managed placement's pages migrate as kernels touch them: it has no timeline")

// StepMemory is the device memory of a placement at one point of a Run,
// by what holds it: during a compute step (its arguments and output live)
// or during a block's update (what lived during the step it follows).
type StepMemory struct {
	Step  int    // the compute step, or for an update the step it follows
	Phase Phase  // forward, backward or update
	Block string // the block the step computes for or updates; "" for none
	// Bytes are the bytes of each category, indexed by Category.
	Bytes [numCategories]int64
	// Slots are the paging slots' bytes, one per slot of the window
	// (largest first), then the staging buffer's when it has any: the
	// parts of Bytes[PagingSlots], which is their sum. Nil without paged
	// blocks. Every point of a timeline shares one slice.
	Slots []int64
}

// Total is the device memory the placement holds at the point: every
// category's bytes, Idle included.
func (m StepMemory) Total() int64 {
	var n int64
	for _, b := range m.Bytes {
		n += b
	}
	return n
}

// InUse is the bytes that live values occupy at the point: Total less Idle.
func (m StepMemory) InUse() int64 { return m.Total() - m.Bytes[Idle] }

// Timeline returns, for one Run of the schedule under placement pl, the
// device memory at each compute step and each update, in the order they
// run, by category. It is derived from the same figures as Footprint (the
// blocks' layouts, the arena's offsets, the sides of a hybrid placement, the
// window of paged slots, window blocks as Copies takes it), so every
// point's Total is the footprint's Device bytes; what varies is which
// values occupy them: each value lives from the step that computes it to
// the last that reads it (parameters, moments and inputs always), and the
// rest is Idle. Steps that recompute a forward pass in the backward pass
// are steps like any other. A managed placement has no timeline: its
// pages migrate as kernels touch them.
func (sc *Schedule) Timeline(pl Placement, window int) ([]StepMemory, error) {
	bd, err := sc.bindValid(pl)
	if err != nil {
		return nil, err
	}
	return bd.timeline(window)
}

// timeline is Timeline's for a placement of blocks.
func (bp *blockPlan) timeline(window int) ([]StepMemory, error) {
	sc, s := bp.sc, bp.sd
	var fixed [numCategories]int64 // held at every point whatever lives
	var slots []int64              // the paging slots' parts (StepMemory.Slots)
	onDevice := func(b int) bool { return !s.blockHost[b] && !bp.paged(b) }
	for b, l := range bp.ls {
		if !onDevice(b) {
			continue
		}
		for _, i := range l.params {
			fixed[Weights] += 4 * int64(sc.values[sc.params[i]].elems)
		}
		if l.moments != nil {
			for _, i := range l.params {
				fixed[OptimizerState] += 4 * int64(sc.stateElems(i))
			}
		}
	}
	if bp.pagesAny() {
		var err error
		if window, err = bp.givenWindow(window); err != nil {
			return nil, err
		}
		areas, _ := bp.slotAreas(window)
		for _, a := range areas {
			slots = append(slots, 4*int64(a))
		}
		if staged := 4 * int64(sc.largestStaged(bp.paged)); staged > 0 {
			slots = append(slots, staged)
		}
		for _, n := range slots {
			fixed[PagingSlots] += n
		}
		if sc.spec.Train && bp.cache.Moments() == cache.MomentsOnDevice {
			for i, pv := range sc.params {
				if bp.paged(sc.values[pv].block) {
					fixed[OptimizerState] += 4 * int64(sc.stateElems(i))
				}
			}
		}
	}
	// What each value holds on the device: its own buffer (a resident
	// block's saved value, an input, a temporary in the device's arena),
	// and the mirror of a host value that a device step reads or writes.
	fixed[Idle] += 4*int64(s.arena[0]) + 4*int64(sc.scratchFor(func(si int) bool { return !s.stepHost[si] }))
	var timed []int // values whose device bytes live and die
	for i, v := range sc.values {
		own := !s.valueHost[i] && (v.kind == kindTemporary || (v.kind == kindSaved && onDevice(v.block)))
		mirror := s.mirrored[i] && s.valueHost[i]
		switch {
		case (v.kind == kindInput || v.kind == kindSeed) && !s.valueHost[i]:
			fixed[Inputs] += 4 * int64(v.elems)
		case own:
			timed = append(timed, i)
			if v.kind == kindSaved {
				fixed[Idle] += 4 * int64(v.elems)
			}
		}
		if mirror {
			timed = append(timed, i)
			fixed[Idle] += 4 * int64(v.elems)
		}
	}

	var out []StepMemory
	next := 0 // next update
	for si, st := range sc.steps {
		point := StepMemory{Step: si, Phase: Forward, Block: sc.stepBlock(si), Bytes: fixed, Slots: slots}
		if st.backward {
			point.Phase = Backward
		}
		var inArena []int // the device arena's temporaries alive
		for _, i := range timed {
			v := sc.values[i]
			if v.produced > si || max(v.produced, v.lastUse) < si {
				continue
			}
			n := 4 * int64(v.elems)
			if v.kind == kindTemporary && !s.valueHost[i] {
				inArena = append(inArena, i)
			}
			point.Bytes[sc.category(i)] += n
			point.Bytes[Idle] -= n
		}
		if err := s.checkArena(sc, si, inArena); err != nil {
			return nil, err
		}
		out = append(out, point)
		for ; next < len(sc.updates) && sc.updates[next].after == si; next++ {
			u := point
			u.Phase, u.Block = Update, sc.spec.Blocks[sc.updates[next].block].Name
			out = append(out, u)
		}
	}
	return out, nil
}

// category is what value i holds while it lives.
func (sc *Schedule) category(i int) Category {
	switch v := sc.values[i]; {
	case v.kind == kindSaved:
		return SavedActivations
	case v.kind == kindInput || v.kind == kindSeed:
		return Inputs
	case sc.gradBlock(i) >= 0:
		return Gradients
	}
	return Temporaries
}

// stepBlock names the block step si computes for: the first it needs
// resident, else the block of the gradient it computes; "" for none.
func (sc *Schedule) stepBlock(si int) string {
	b := -1
	switch {
	case len(sc.needs[si]) > 0:
		b = sc.needs[si][0]
	case sc.gradBlock(sc.steps[si].out) >= 0:
		b = sc.gradBlock(sc.steps[si].out)
	}
	if b < 0 {
		return ""
	}
	return sc.spec.Blocks[b].Name
}

// checkArena returns an error if two of the device arena's temporaries
// alive at step si share an element, or one lies past the arena's end.
func (s sides) checkArena(sc *Schedule, si int, alive []int) error {
	slices.SortFunc(alive, func(a, b int) int { return cmp.Compare(s.offset[a], s.offset[b]) })
	end, last := 0, -1
	for _, i := range alive {
		if s.offset[i] < end {
			return fmt.Errorf("engine: at step %d, %s at elements [%d, %d) of the arena lies over %s", si,
				sc.values[i].node.Name(), s.offset[i], s.offset[i]+sc.values[i].elems, sc.values[last].node.Name())
		}
		end, last = s.offset[i]+sc.values[i].elems, i
	}
	if end > s.arena[0] {
		return fmt.Errorf("engine: at step %d, %s ends at element %d, past the arena's %d", si, sc.values[last].node.Name(), end, s.arena[0])
	}
	return nil
}
