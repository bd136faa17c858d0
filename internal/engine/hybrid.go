package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"gpuz/internal/cache"
	"gpuz/internal/device"
)

// Hybrid keeps each block where Blocks says (in Spec.Blocks' order):
// resident on the device, resident in host memory and computed with the
// host's kernels (DictCache's dvs_nets on the CPU), or paged through a
// window of device slots under Cache's policy, the others staying
// resident on their side. Activations that cross between host and device
// blocks are copied at the crossing.
type Hybrid struct {
	Blocks []Where
	// Cache is the policy, window and optimizer place of the blocks
	// placed InCache; unused when there are none.
	Cache cache.Config
}

// Validate reports a hybrid placement that names no block, or whose
// cache blocks' policy cannot be used.
func (h Hybrid) Validate() error {
	if len(h.Blocks) == 0 {
		return errors.New("a hybrid placement names no block")
	}
	if !h.pages() {
		return nil
	}
	return h.Cache.Validate()
}

// pages reports whether some block is placed InCache.
func (h Hybrid) pages() bool { return slices.Contains(h.Blocks, InCache) }

// Usable reports nothing: every device holds a hybrid placement.
func (Hybrid) Usable(device.Device) error { return nil }

// Describe is the blocks' places as the command line gives them, and in
// a plan's tables the cache blocks' policy and window:
// "host:0-1,cache:2-13, window policy, window 3".
func (h Hybrid) Describe(fp Footprint, _ int, form Form) string {
	s := PlaceText(h.Blocks)
	if form == Named {
		return " " + s
	}
	if form == Recorded || !h.pages() {
		return s
	}
	s += fmt.Sprintf(", %s policy, window %d", h.Cache.Policy, fp.Window)
	if h.Cache.OptimizerOnHost {
		s += ", opt. on host"
	}
	return s
}

// Flags is --place and, when some block is paged, the cache blocks'
// policy, window and optimizer place (Paged.Flags).
func (h Hybrid) Flags() []string {
	words := []string{"--place", PlaceText(h.Blocks)}
	if h.pages() {
		words = append(words, Paged{Cache: h.Cache}.Flags()...)
	}
	return words
}

// Settings is the blocks' places and, when some block is paged, the
// cache blocks' policy, window and optimizer place.
func (h Hybrid) Settings() Settings {
	var s Settings
	if h.pages() {
		s = Paged{Cache: h.Cache}.Settings()
	}
	s.Blocks = PlaceText(h.Blocks)
	return s
}

// Keys is none: the blocks' places are no key.
func (Hybrid) Keys(Footprint) [][2]string { return nil }

// Paging returns the cache blocks' configuration, false when there are
// none.
func (h Hybrid) Paging() (cache.Config, bool) {
	if !h.pages() {
		return cache.Config{}, false
	}
	return h.Cache, true
}

// PageBytes is 0: nothing migrates.
func (Hybrid) PageBytes() int64 { return 0 }

func (h Hybrid) bind(sc *Schedule) (bound, error) { return sc.placeBlocks(h.Blocks, h.Cache) }

// Where says where a block of a hybrid placement lives and is computed.
type Where uint8

// The places of a block.
const (
	// OnDevice keeps the block resident on the device and computes its
	// steps with the device's kernels.
	OnDevice Where = iota
	// OnHost keeps the block resident in host memory and computes its
	// steps with the host's kernels (DictCache's dvs_nets on the CPU).
	OnHost
	// InCache pages the block through the device under the placement's
	// cache policy: its master in host memory, computed on the device
	// while it holds a window slot.
	InCache
)

// ParseWhere reads the word the command line uses for a place (String),
// false for a word that names none.
func ParseWhere(word string) (Where, bool) {
	for _, w := range []Where{OnDevice, OnHost, InCache} {
		if w.String() == word {
			return w, true
		}
	}
	return 0, false
}

// String is the word the command line uses: "cuda", "host" or "cache".
func (w Where) String() string {
	switch w {
	case OnHost:
		return "host"
	case InCache:
		return "cache"
	}
	return "cuda"
}

// PlaceText writes a placement's blocks as the command line gives them,
// ranges of consecutive blocks in the same place: "host:0-1,cuda:2-13".
func PlaceText(blocks []Where) string {
	var parts []string
	for i := 0; i < len(blocks); {
		j := i
		for j+1 < len(blocks) && blocks[j+1] == blocks[i] {
			j++
		}
		if i == j {
			parts = append(parts, fmt.Sprintf("%s:%d", blocks[i], i))
		} else {
			parts = append(parts, fmt.Sprintf("%s:%d-%d", blocks[i], i, j))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// sides is where every step runs and every value lives under a placement,
// and the copies that cross between host and device.
type sides struct {
	blockHost []bool // the block lives on the host
	stepHost  []bool // the step runs with the host's kernels
	valueHost []bool // the value's own buffer is in host memory
	// mirrored marks the values that some step on the other side reads
	// or writes: they have a buffer on each side.
	mirrored []bool
	// before lists, per step, the values copied from their own side into
	// their mirror before the step runs (once per Run, for the first step
	// on the mirror's side that reads them).
	before [][]int
	// after marks the steps whose output is computed into its mirror and
	// copied to its own side right after.
	after []bool
	// offset is each temporary's place in its side's arena, in elements,
	// and arena the elements of the device's ([0]) and the host's ([1])
	// arena: each side packs its own temporaries by liveness (packArena).
	offset []int
	arena  [2]int
}

// sides places the steps and values of the schedule with its blocks
// placed as where: a step runs
// where the block whose parameters it reads lives, else where the block of
// the gradient it computes or of the saved values it reads lives, else
// where the latest step that produced one of its arguments ran, else on
// the device. Parameters and saved values live with their block, other
// computed values where their step runs, inputs where their first reader
// runs (on the host when nothing reads them). A step that reads blocks on both sides is an error.
func (sc *Schedule) sides(where []Where) (sides, error) {
	s := sides{blockHost: make([]bool, len(sc.spec.Blocks)), stepHost: make([]bool, len(sc.steps)), valueHost: make([]bool, len(sc.values)),
		mirrored: make([]bool, len(sc.values)), before: make([][]int, len(sc.steps)), after: make([]bool, len(sc.steps))}
	if !slices.Contains(where, OnHost) {
		s.offset, s.arena[0] = make([]int, len(sc.values)), sc.arena
		for i, v := range sc.values {
			s.offset[i] = v.offset
		}
		return s, nil
	}
	host := func(b int) bool { return where[b] == OnHost }
	for b := range s.blockHost {
		s.blockHost[b] = host(b)
	}
	for si, st := range sc.steps {
		b := -1
		switch {
		case len(st.reads) > 0:
			b = st.reads[0]
			for _, r := range st.reads[1:] {
				if host(r) != host(b) {
					return sides{}, fmt.Errorf("step %v reads block %s on the %s and block %s on the %s",
						st.op, sc.spec.Blocks[b].Name, where[b], sc.spec.Blocks[r].Name, where[r])
				}
			}
		case sc.gradBlock(st.out) >= 0:
			b = sc.gradBlock(st.out)
		case len(sc.needs[si]) > 0:
			b = sc.needs[si][0]
		}
		if b >= 0 {
			s.stepHost[si] = host(b)
			continue
		}
		latest := -1
		for _, a := range st.args {
			if pr := sc.values[a].produced; pr < si {
				latest = max(latest, pr)
			}
		}
		if latest >= 0 {
			s.stepHost[si] = s.stepHost[latest]
		}
	}
	firstReader := make([]int, len(sc.values))
	for i := range firstReader {
		firstReader[i] = -1
	}
	for si, st := range sc.steps {
		for _, a := range st.args {
			if firstReader[a] < 0 {
				firstReader[a] = si
			}
		}
	}
	for i, v := range sc.values {
		switch {
		case v.kind == kindParam || v.kind == kindSaved:
			s.valueHost[i] = host(v.block)
		case v.produced >= 0:
			s.valueHost[i] = s.stepHost[v.produced]
		case firstReader[i] >= 0:
			s.valueHost[i] = s.stepHost[firstReader[i]]
		default: // read by no step: kept on the host, where it is set
			s.valueHost[i] = true
		}
	}
	s.offset, s.arena[0] = sc.packArena(func(v int) bool { return !s.valueHost[v] })
	hostOffset, hostElems := sc.packArena(func(v int) bool { return s.valueHost[v] })
	s.arena[1] = hostElems
	for i, at := range hostOffset {
		if at >= 0 {
			s.offset[i] = at
		}
	}
	// A value's mirror is fresh from the step that wrote it (its output
	// computed there) or the first copy on its mirror's side; inputs and
	// the seed are set before a Run, so their mirror is copied at the
	// first reader on the other side in every Run.
	fresh := make([]bool, len(sc.values))
	for si, st := range sc.steps {
		for _, a := range st.args {
			if s.valueHost[a] == s.stepHost[si] || fresh[a] {
				continue
			}
			if sc.values[a].kind == kindParam {
				return sides{}, fmt.Errorf("step %v on the %s reads a parameter of block %s on the other side",
					st.op, sideOf(s.stepHost[si]), sc.spec.Blocks[sc.values[a].block].Name)
			}
			s.mirrored[a], fresh[a] = true, true
			s.before[si] = append(s.before[si], a)
		}
		if s.valueHost[st.out] != s.stepHost[si] {
			s.mirrored[st.out], fresh[st.out] = true, true
			s.after[si] = true
		}
	}
	return s, nil
}

// sideOf names a side.
func sideOf(host bool) Where {
	if host {
		return OnHost
	}
	return OnDevice
}

// gradBlock returns the block of the parameter whose gradient value v
// is, or -1.
func (sc *Schedule) gradBlock(v int) int {
	if i, ok := sc.gradOf[v]; ok && sc.spec.Train {
		return sc.values[sc.params[i]].block
	}
	return -1
}

// crossCopy copies value v between its own buffer and its mirror:
// toMirror copies from its own side to the other.
func (prog *Program) crossCopy(v int, toMirror bool) error {
	own, mirror := prog.buffers[v], prog.mirrors[v]
	hostBuf, devBuf := own, mirror
	if !prog.sides.valueHost[v] {
		hostBuf, devBuf = mirror, own
	}
	var err error
	if toMirror == prog.sides.valueHost[v] { // host → device
		err = prog.dev.Upload(devBuf, device.Floats(hostBuf))
	} else {
		err = prog.dev.Download(device.Floats(hostBuf), devBuf)
	}
	if err != nil {
		return fmt.Errorf("engine: copying %s between host and device: %w", prog.sched.values[v].node.Name(), err)
	}
	return nil
}

// sideBytes returns the bytes a resident placement allocates on the device
// and on the host: each block's area, each side's arena, each input and
// each mirror, on its side.
func (sc *Schedule) sideBytes(s sides, ls []layout) (dev, host int64) {
	add := func(onHost bool, elems int) {
		if onHost {
			host += 4 * int64(elems)
		} else {
			dev += 4 * int64(elems)
		}
	}
	for b, l := range ls {
		add(s.blockHost[b], l.elems)
	}
	add(false, sc.scratchFor(func(si int) bool { return !s.stepHost[si] }))
	add(true, sc.scratchFor(func(si int) bool { return s.stepHost[si] }))
	for side, n := range s.arena {
		add(side == 1, n)
	}
	for i, v := range sc.values {
		if v.kind == kindInput || v.kind == kindSeed {
			add(s.valueHost[i], v.elems)
		}
		if s.mirrored[i] {
			add(!s.valueHost[i], v.elems)
		}
	}
	return dev, host
}

// crossings counts the copies of activations between host and device
// blocks in one Run of a hybrid placement: each value copied into its
// mirror before a step, and each output copied from its mirror after one.
func (sc *Schedule) crossings(s sides) Copies {
	return sc.crossingsIn(s, 0, len(sc.steps))
}

// crossingsIn counts crossings' copies as crossings does, of steps
// [from, to) only.
func (sc *Schedule) crossingsIn(s sides, from, to int) Copies {
	var c Copies
	count := func(v int, upload bool) {
		n := 4 * int64(sc.values[v].elems)
		if upload {
			c.UploadBytes += n
		} else {
			c.DownloadBytes += n
		}
		c.Count++
	}
	for si := from; si < to; si++ {
		st := sc.steps[si]
		for _, a := range s.before[si] {
			count(a, s.valueHost[a]) // from its own side into its mirror: up when it lives on the host
		}
		if s.after[si] {
			count(st.out, !s.valueHost[st.out]) // from its mirror to its own side: up when it lives on the device
		}
	}
	return c
}
