package cache

import "slices"

// window is DictCache's rule (the Window policy): on a miss, write the
// whole window back and load the needed blocks with the successors of the
// missed block that the previous pass taught, up to the window's size.
type window struct {
	// nears is DictCache's learned order: per pass (0 forward, 1
	// backward), the block a step needed after each block the last time
	// the walk left it, -1 while unknown. The first pass knows none, so it
	// loads only what it misses.
	nears [2][]int
	// curr is the block the last step needed (-1 at the start of a
	// backward pass, as DictCache's do_backward resets it; a forward pass
	// does not, so in eval the last block learns the first as its
	// successor), and backward whether that step was in the backward pass.
	curr     int
	backward bool
}

func newWindow(run Run) rule {
	w := &window{curr: -1}
	for pass := range w.nears {
		w.nears[pass] = slices.Repeat([]int{-1}, run.Blocks)
	}
	return w
}

// miss follows the learned chain Window-1 times from the missed block, as
// DictCache does.
func (w *window) miss(c *Cache, needs []int, backward bool, missed int) error {
	var successors []int
	for b, i := missed, 1; i < len(c.slots); i++ {
		if b = w.nears[pass(backward)][b]; b < 0 {
			break
		}
		successors = append(successors, b)
	}
	return c.replaceWindow(needs, successors)
}

// observe learns the order in which a step of the given pass needs
// blocks: each block it needs becomes the successor of the block needed
// before it (DictCache's nears, set in its forward pre-hook and
// saved-tensor unpack hook).
func (w *window) observe(needs []int, backward bool) {
	if backward && !w.backward {
		w.curr = -1
	}
	w.backward = backward
	for _, b := range needs {
		if w.curr >= 0 && w.curr != b {
			w.nears[pass(backward)][w.curr] = b
		}
		w.curr = b
	}
}

func (*window) ahead(*Cache, int) error { return nil }

// windowPaged is the WindowPaged policy's rule: DictCache's miss with the
// successors in the pass's order known from the schedule, from the first
// pass on.
type windowPaged struct{ order [2][]int }

func newWindowPaged(run Run) rule { return windowPaged{order: run.Order} }

// miss loads the blocks that follow the missed one in its pass's order.
func (w windowPaged) miss(c *Cache, needs []int, backward bool, missed int) error {
	order := w.order[pass(backward)]
	successors := []int{missed}
	if i := slices.Index(order, missed); i >= 0 {
		successors = order[i:]
	}
	return c.replaceWindow(needs, successors)
}

func (windowPaged) observe([]int, bool)     {}
func (windowPaged) ahead(*Cache, int) error { return nil }

// pass numbers the forward pass 0 and the backward pass 1.
func pass(backward bool) int {
	if backward {
		return 1
	}
	return 0
}

// replaceWindow is DictCache's miss: write the whole window back (every
// block's parameters, as its .to(cpu) copies them changed or not, but a
// read-only block's, which cannot have changed), then load the needed
// blocks and then the successors, in order, up to the window's size.
func (c *Cache) replaceWindow(needs, successors []int) error {
	for _, b := range c.slots {
		if b >= 0 {
			if err := c.evict(b, !c.run.readOnly(b)); err != nil {
				return err
			}
		}
	}
	load := slices.Clone(needs)
	for _, b := range successors {
		if len(load) >= len(c.slots) {
			break
		}
		if !slices.Contains(load, b) {
			load = append(load, b)
		}
	}
	for i, b := range load {
		if err := c.load(b, i, false); err != nil {
			return err
		}
	}
	return nil
}
