package engine

import (
	"errors"
	"fmt"
	"slices"

	"gpuz/internal/cache"
	"gpuz/internal/device"
)

// Placement says where a program keeps its blocks' parameters, optimizer
// state and saved activations, and what a Run does to keep them there.
// Each way of running implements it in its own file: Resident (every
// block resident on the device: the cuda and cpu modes), Paged (a window
// of blocks on the device, the rest in host memory: the cache mode),
// Hybrid (each block on the device, on the host or paged) and Managed
// (one region of managed memory that the driver pages). A Program and
// the dry runs (Schedule.Footprint, Copies, Timeline) ask the placement
// alone, so a new way of running is one more implementation.
type Placement interface {
	// Validate reports a placement that cannot be used.
	Validate() error
	// Usable reports why dev cannot hold the placement, nil when it can.
	Usable(dev device.Device) error
	// Describe says in a few words where the placement keeps the blocks
	// of a schedule of blocks blocks whose footprint is fp, in the form
	// asked for.
	Describe(fp Footprint, blocks int, form Form) string
	// Paging returns the cache configuration of a placement that pages
	// blocks through a window of device slots; false when it pages none.
	Paging() (cache.Config, bool)
	// PageBytes is the unit of migration of a placement whose pages the
	// driver migrates (managed memory); 0 for the others.
	PageBytes() int64
	// Flags is the command line's words that give the placement after
	// its mode's name ("--policy", "lru", "--win-size", "3"), its options
	// at their defaults left out.
	Flags() []string
	// Settings is the placement's options as a fit's tables list them.
	Settings() Settings
	// Keys is the benchmark-format keys that tell a run under the
	// placement apart, in order, from its options and its footprint fp:
	// policy and window for a paged placement, the resident pages and the
	// advice for a managed one; none for the others. A run records them
	// (results.Mode.PlacementKeys).
	Keys(fp Footprint) [][2]string

	// bind lays the placement out over a schedule; an error for a
	// placement that does not fit the schedule (a hybrid placement
	// naming another number of blocks, a step reading both sides).
	bind(sc *Schedule) (bound, error)
}

// recordReader is a placement whose record (Describe's Recorded form)
// gave its keys before a run recorded them apart: the result files
// written before then are still read by it (RecordedKeys).
type recordReader interface {
	keysOfRecord(recorded string) [][2]string
}

// RecordedKeys returns the keys of a run under pl that recorded its
// placement as text alone (recorded, Describe's Recorded form), as
// result files written before results.Mode.PlacementKeys did: the paged
// and managed placements read them back from the text; the others,
// which had none, give none. A new placement records its keys and needs
// nothing here.
func RecordedKeys(pl Placement, recorded string) [][2]string {
	if r, ok := pl.(recordReader); ok {
		return r.keysOfRecord(recorded)
	}
	return nil
}

// Form is the length of a placement's description.
type Form int

// The forms of Placement.Describe.
const (
	// Recorded is a run's record of its placement: "" for a resident
	// one, "window 3/12" (the policy and the window of the blocks) for a
	// paged one, the blocks' places for a hybrid one, "40/76 pages of
	// 2 MiB" for a managed one.
	Recorded Form = iota
	// Long is the plan's wide table's: "all blocks resident", "window
	// policy, 3/12 blocks, optimizer on host".
	Long
	// Short is the plan's narrow table's: "resident", "window 3/12".
	Short
	// Named is what follows the mode's name in a fit's candidate, from
	// the placement's options alone (the footprint is not read), with
	// its own separator: "" for a resident placement, " lru policy, 3
	// blocks" for a paged one, " host:0-1,cuda:2-13" for a hybrid one,
	// ", advise host" for a managed one.
	Named
)

// Settings is a placement's options as a fit's tables list them, each
// placement filling its own: the zero value for a resident placement.
type Settings struct {
	// Policy, Window and OptimizerOnHost are a paged placement's (and a
	// hybrid placement's paged blocks').
	Policy          cache.Policy
	Window          int
	OptimizerOnHost bool
	// Blocks is a hybrid placement's blocks' places as --place reads
	// them ("host:0-1,cuda:2-13").
	Blocks string
	// AdviseHost is a managed placement's --managed-advise host.
	AdviseHost bool
}

// bound is a placement laid out over a schedule: what the engine asks of
// it, in Footprint, Load, Copies and Timeline.
type bound interface {
	// sides is where every step runs and every value lives.
	sides() sides
	// footprint is what the placement needs (Schedule.Footprint).
	footprint(deviceFree int64) Footprint
	// load allocates what a Program keeps under the placement and binds
	// its values; it returns the hooks the Program's Runs call.
	load(prog *Program) (placed, error)
	// moves counts the copies the placement makes beyond the inputs and
	// the crossings (the blocks paged, the pages migrated) in one
	// steady-state epoch, which runs walks with the dry run's hooks and
	// stepper (batches Runs, or one pass), on a window of window blocks or
	// pages.
	moves(window int, epoch func(runHooks, stepper) error) (Copies, error)
	// timeline is Schedule.Timeline's.
	timeline(window int) ([]StepMemory, error)
}

// placed is a placement loaded in a Program: the hooks a Run calls
// around its steps and updates (runHooks, which the dry runs walk too),
// and what reading, setting and closing the Program ask of it.
type placed interface {
	runHooks
	// stage returns the buffer a step writes saved value v into when v's
	// block is paged out; unstage copies it from there to the block's
	// master.
	stage(v int) device.Buffer
	unstage(v int, staged device.Buffer) error
	// setParam sets parameter value v where the placement keeps it
	// apart from its device buffer, reporting whether it did; readParam
	// reads a parameter that has no device buffer now.
	setParam(v int, data []float32) (bool, error)
	readParam(v int) ([]float32, error)
	// window is the blocks (or pages) resident at most.
	window() int
	// free releases what the placement holds apart from the Program's
	// buffers.
	free()
}

// runHooks is what a placement does around one Run's compute steps and
// updates: a paged placement's pager makes each step's blocks resident,
// a managed placement touches the pages a kernel reads and writes, a
// resident placement does nothing. Schedule.walk calls them.
type runHooks interface {
	// begin starts a Run.
	begin()
	// beforeStep prepares compute step si; staged says that its output
	// is a saved value of a paged-out block, written through staging.
	beforeStep(si int) (staged bool, err error)
	// executed marks step si done.
	executed(si int)
	// update runs update u through st.
	update(u update, st stepper) error
	// afterStep follows step si and its updates.
	afterStep(si int) error
}

// stepper does the work of a Run that walk goes through.
type stepper interface {
	// execute runs compute step si; staged says that its output is a
	// saved value of a paged-out block, written through the staging
	// buffer.
	execute(si int, staged bool) error
	// update clips and updates block b where it lives.
	update(b int) error
}

// walk goes through one Run of the schedule: every compute step, with the
// updates that follow it, under a placement's hooks (under Spec.Passes,
// each pass once, in order). A Program and the dry runs both walk, so
// that they make the same decisions.
func (sc *Schedule) walk(h runHooks, st stepper) error {
	for p := range sc.passes {
		if err := sc.walkPass(h, st, p); err != nil {
			return err
		}
	}
	return nil
}

// walkPass goes through one Run of pass p (Spec.Passes; pass 0 is every
// step of a schedule without passes), as walk does.
func (sc *Schedule) walkPass(h runHooks, st stepper, p int) error {
	next := 0 // next update to run
	h.begin()
	for si := sc.passes[p][0]; si < sc.passes[p][1]; si++ {
		staged, err := h.beforeStep(si)
		if err != nil {
			return err
		}
		if err := st.execute(si, staged); err != nil {
			return err
		}
		h.executed(si)
		for ; next < len(sc.updates) && sc.updates[next].after == si; next++ {
			if err := h.update(sc.updates[next], st); err != nil {
				return err
			}
		}
		if err := h.afterStep(si); err != nil {
			return err
		}
	}
	return nil
}

// stays is the hooks of a placement that keeps every block where it was
// loaded: a Run runs each step and update as they come.
type stays struct{ blocks int }

func (stays) begin()                                {}
func (stays) beforeStep(int) (bool, error)          { return false, nil }
func (stays) executed(int)                          {}
func (stays) update(u update, st stepper) error     { return st.update(u.block) }
func (stays) afterStep(int) error                   { return nil }
func (stays) stage(int) device.Buffer               { return nil }
func (stays) setParam(int, []float32) (bool, error) { return false, nil }
func (s stays) window() int                         { return s.blocks }
func (stays) free()                                 {}
func (stays) unstage(v int, _ device.Buffer) error  { return errNotPaged }
func (stays) readParam(v int) ([]float32, error)    { return nil, errNotPaged }

// errNotPaged is what a placement that pages nothing says when asked for
// a paged-out value: a bug in the engine.
var errNotPaged = errors.New("engine: the placement pages no block")

// layout is where each member of a block sits in the block's area, in
// elements from the area's start.
type layout struct {
	params  []int    // indices into Schedule.params
	offsets []int    // of each parameter
	moments [][2]int // of each parameter's m and v, when they travel with the block
	// masters holds the offset of each 16-bit parameter's float32 master,
	// after its moments; -1 for a float32 parameter.
	masters []int
	// accums holds the offset of each trained parameter's gradient
	// accumulator (Spec.Accumulate), after its moments and master; -1
	// when the schedule does not accumulate, or for a frozen parameter.
	accums []int
	saved  []int // offsets of the block's saved values, as Schedule.saved[b]
	elems  int   // the area's size
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
// they travel with the block (momentsInArea), then saved activations.
func (sc *Schedule) layouts(momentsInArea func(b int) bool) []layout {
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
		if sc.spec.Train && momentsInArea(b) {
			for _, i := range l.params {
				if sc.values[sc.params[i]].frozen { // no state: -1 offsets
					l.moments = append(l.moments, [2]int{-1, -1})
					l.masters = append(l.masters, -1)
					l.accums = append(l.accums, -1)
					continue
				}
				n := sc.count(sc.params[i])
				l.moments = append(l.moments, [2]int{l.elems, l.elems + n})
				l.masters = append(l.masters, -1)
				if sc.values[sc.params[i]].store.narrow() {
					l.masters[len(l.masters)-1] = l.elems + 2*n
				}
				l.accums = append(l.accums, -1)
				if off := sc.accumOffset(i); off >= 0 {
					l.accums[len(l.accums)-1] = l.elems + off
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

// everyBlock is a layout's momentsInArea where every block's moments
// travel with it.
func everyBlock(int) bool { return true }

// Footprint is the memory a placement of a schedule needs, in bytes.
type Footprint struct {
	Window int   // blocks resident at most
	Device int64 // on the device: resident areas, arena and inputs, and the window policy's optimizer state
	// Host is in host memory: master copies of paged blocks and host
	// optimizer state; under a hybrid placement, the host blocks' areas
	// and the arena, inputs and copies of crossing activations on the host.
	Host       int64
	BlockBytes int64 // the largest block area: what the largest window slot holds
	// Pages is a managed placement's region in pages of BlockBytes, of
	// which Window are resident at most; 0 for the others.
	Pages int
}

// Footprint computes what pl needs, before anything is allocated. For an
// auto policy with no fixed window, deviceFree sizes the window. A
// placement that does not fit the schedule (Load reports why) is counted
// as if every block were resident.
func (sc *Schedule) Footprint(pl Placement, deviceFree int64) Footprint {
	b, err := pl.bind(sc)
	if err != nil {
		b, _ = Resident{}.bind(sc) // binds every schedule
	}
	return b.footprint(deviceFree)
}

// bindValid validates pl and binds it to the schedule, the errors
// wrapped as the engine's.
func (sc *Schedule) bindValid(pl Placement) (bound, error) {
	if err := pl.Validate(); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	b, err := pl.bind(sc)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return b, nil
}
