package engine

// ArenaLiveBound returns the largest sum of the arena's elements alive at
// one step of the schedule (liveBound over its temporaries' lifetimes): no
// arena that holds them is smaller.
func (sc *Schedule) ArenaLiveBound() int {
	return liveBound(sc.lifetimes(func(int) bool { return true }))
}

// ArenaElems returns the elements of the schedule's arena.
func (sc *Schedule) ArenaElems() int { return sc.arena }
