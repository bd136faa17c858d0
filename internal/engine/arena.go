package engine

import (
	"cmp"
	"slices"
)

// arenaAlign is the alignment of every value's place in an arena, in
// float32 elements: 256 bytes, what cudaMalloc gives a buffer of its own
// (managedAlign), so a kernel reads a temporary in the arena as aligned
// as it would read it in a buffer of its own.
const arenaAlign = managedAlign / 4

// alignUp rounds elems up to a multiple of arenaAlign.
func alignUp(elems int) int { return (elems + arenaAlign - 1) / arenaAlign * arenaAlign }

// lifetime is one temporary's claim on the arena: its elements, rounded
// up to arenaAlign, from the step that produces it to the step after
// which it is released, both included. Two lifetimes whose steps meet
// may not share elements: a step's output never lies over an argument
// it reads, even one it is the last to read.
type lifetime struct {
	value    int // the value's index
	from, to int // steps
	elems    int
}

// meets reports whether the steps of a and b meet.
func (a lifetime) meets(b lifetime) bool { return a.from <= b.to && b.from <= a.to }

// lifetimes returns the lifetimes of the temporaries that in selects: each
// from the step that produces it to the last step that reads it, or to
// the step that produces it when nothing reads it later; a value that
// must outlive the steps (the output, a gradient kept on request) to the
// last step.
func (sc *Schedule) lifetimes(in func(v int) bool) []lifetime {
	var ls []lifetime
	for si, s := range sc.steps {
		v := s.out
		if sc.values[v].kind != kindTemporary || !in(v) {
			continue
		}
		to := min(max(si, sc.values[v].lastUse), len(sc.steps)-1)
		ls = append(ls, lifetime{value: v, from: si, to: to, elems: alignUp(sc.values[v].elems)})
	}
	return ls
}

// packArena places every temporary that in selects at an offset of one
// arena by its lifetime (placeOffsets), and returns each value's offset
// in elements (-1 for the others) and the arena's elements: up to the
// end of the value that ends last, whose rounding up to arenaAlign no
// buffer needs.
func (sc *Schedule) packArena(in func(v int) bool) (offset []int, elems int) {
	offset = make([]int, len(sc.values))
	for i := range offset {
		offset[i] = -1
	}
	ls := sc.lifetimes(in)
	at, _ := placeOffsets(ls)
	for i, l := range ls {
		offset[l.value] = at[i]
		elems = max(elems, at[i]+sc.values[l.value].elems)
	}
	return offset, elems
}

// placeOffsets gives each lifetime an offset, in elements, such that two
// lifetimes whose steps meet never share an element, and returns the
// offsets and the arena's elements: the largest end of a placed value.
// It places the largest first (ties by the earlier step, then the value),
// each in the smallest gap between the values already placed that meet
// it which holds it, else above the highest of them: greedy by size,
// which puts a large value that lives alone (the head's logits) at the
// bottom, where the smaller ones of the other steps then go too.
// Every offset and the arena are multiples of arenaAlign when the
// lifetimes' elements are. No arena is smaller than the largest sum of
// elements alive at one step; for the decoder models' schedules, eval and
// training, this one is that sum (TestArenaIsTheLargestLiveSet), for
// ResNet's 1.1 to 1.2 times it. It looks at the values alive at each
// step of a lifetime, not at every value placed, so that its time grows
// with the steps, not with their square.
func placeOffsets(ls []lifetime) (offsets []int, elems int) {
	order := make([]int, len(ls))
	steps := 0
	for i, l := range ls {
		order[i] = i
		steps = max(steps, l.to+1)
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(ls[b].elems, ls[a].elems), cmp.Compare(ls[a].from, ls[b].from), cmp.Compare(ls[a].value, ls[b].value))
	})
	offsets = make([]int, len(ls))
	alive := make([][]int, steps) // the lifetimes placed, by the steps they meet
	seen := make([]int, len(ls))  // the last placing (1-based) that met each
	var meet []int                // the lifetimes placed that meet the one placed, by offset
	for k, i := range order {
		l := ls[i]
		meet = meet[:0]
		for s := l.from; s <= l.to; s++ {
			for _, p := range alive[s] {
				if seen[p] != k+1 {
					seen[p] = k + 1
					meet = append(meet, p)
				}
			}
		}
		slices.SortFunc(meet, func(a, b int) int { return cmp.Or(cmp.Compare(offsets[a], offsets[b]), cmp.Compare(a, b)) })
		top, at, gap := 0, -1, 0
		for _, p := range meet {
			if g := offsets[p] - top; g >= l.elems && (at < 0 || g < gap) {
				at, gap = top, g
			}
			top = max(top, offsets[p]+ls[p].elems)
		}
		if at < 0 {
			at = top
		}
		offsets[i] = at
		elems = max(elems, at+l.elems)
		for s := l.from; s <= l.to; s++ {
			alive[s] = append(alive[s], i)
		}
	}
	return offsets, elems
}
