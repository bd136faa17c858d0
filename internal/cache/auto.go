package cache

import "slices"

// auto is the Auto policy's rule: on a miss, load each missing block into a
// free slot or in place of the resident block needed farthest ahead
// (Belady's rule), written back only if it changed; after each step, load
// the next block a coming step needs ahead of need.
type auto struct{}

func newAuto(Run) rule { return auto{} }

// miss loads the blocks of needs that are paged out, one slot each.
func (auto) miss(c *Cache, needs []int, _ bool, _ int) error {
	for _, b := range needs {
		if c.Resident(b) {
			continue
		}
		slot, err := c.freeSlot(needs)
		if err != nil {
			return err
		}
		if err := c.load(b, slot, false); err != nil {
			return err
		}
	}
	return nil
}

func (auto) observe([]int, bool) {}

// ahead loads the next block that a coming step needs and is not resident,
// so that on a device with a copy stream the copy overlaps the steps
// before it. It evicts a block only when that block is needed later than
// the one it makes room for, and never one the next step needs.
func (auto) ahead(c *Cache, after int) error {
	steps := c.run.Steps
	c.now = after + 1
	for s := after + 1; s < len(steps); s++ {
		for _, b := range steps[s].Needs {
			if c.Resident(b) {
				continue
			}
			slot := slices.Index(c.slots, -1)
			if slot < 0 {
				victim := c.victim(append(slices.Clone(steps[after+1].Needs), steps[s].Needs...))
				if victim < 0 || c.nextUse(victim) <= s {
					return nil // nothing resident is needed later than b
				}
				slot = c.slotOf[victim]
				if err := c.evict(victim, c.dirty[victim]); err != nil {
					return err
				}
			}
			return c.load(b, slot, true)
		}
	}
	return nil
}
