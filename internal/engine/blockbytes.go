package engine

// BlockBytes returns the bytes of each block's area as a placement that
// keeps the block resident lays it out: its parameters at their stored
// size, and when training their Adam moments (and a 16-bit parameter's
// float32 master), then the values the block saves for the backward pass.
// A placement that keeps block b resident on the device allocates its
// area there beside everything else (its arena, inputs and crossings), so
// the sum over the blocks it keeps there is a lower bound on its device
// need: what fit's search rules a split out with, unplanned.
func (sc *Schedule) BlockBytes() []int64 {
	ls := sc.layouts(func(int) bool { return true })
	out := make([]int64, len(ls))
	for b, l := range ls {
		out[b] = 4 * int64(l.elems)
	}
	return out
}
