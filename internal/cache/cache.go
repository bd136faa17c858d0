// Package cache holds the paging policies of gpuz's cache mode as pure
// decisions over block indices: given the blocks each step of a run needs,
// the slots of a window and a policy's Config, which block to load, which
// to evict and whether to write it back, before, during and after each
// step. It knows no tensors and no device: a Mover carries the decisions
// out (package engine's residency copies the blocks, its dry run counts
// the copies), so a run and its dry run make the same decisions.
//
// A policy is a rule (one type per policy file) and a line in the policies
// table: Window (DictCache's), WindowPaged and Auto.
package cache

import (
	"fmt"
	"math"
	"slices"
)

// Step is one compute step of a run as a cache sees it.
type Step struct {
	// Needs lists the paged blocks the step needs resident, in the order
	// it reads them.
	Needs []int
	// Backward is set for the steps of the backward pass.
	Backward bool
	// Writes lists the paged blocks among Needs whose state the step
	// changes (a key-value cache written in place): changed, as an
	// update changes its block, so written back when evicted.
	Writes []int
}

// Update is a paged block's optimizer update, run after a compute step.
type Update struct {
	Block int
	After int // the step it follows
}

// Run is one run of the schedule (one batch) as a cache sees it.
type Run struct {
	// Blocks is the number of blocks of the model, paged or not: blocks
	// are numbered from 0 to Blocks-1.
	Blocks int
	Steps  []Step
	// Updates lists the paged blocks' optimizer updates in the order they
	// run (training only).
	Updates []Update
	// Order lists, for the forward (0) and the backward (1) pass, the
	// paged blocks in the order the pass first needs them, an update
	// counting as a need of the backward pass.
	Order [2][]int
	// ReadOnly marks the blocks whose parameters nothing changes (every
	// one frozen, as LoRA freezes a block without adapters, and no state
	// written): they have no update and no step writes them, and no
	// policy writes their parameters back; nil when none.
	ReadOnly []bool
}

// readOnly reports whether block b's parameters never change.
func (r Run) readOnly(b int) bool { return b < len(r.ReadOnly) && r.ReadOnly[b] }

// MinWindow returns the most blocks one step needs, at least 1: the
// smallest window that can run.
func (r Run) MinWindow() int {
	n := 1
	for _, s := range r.Steps {
		n = max(n, len(s.Needs))
	}
	return n
}

// Mover carries out a cache's decisions on one block; the cache keeps the
// bookkeeping.
type Mover interface {
	// Load copies block b's master into slot. ahead is set when the
	// policy loads it ahead of need (a prefetch, which may overlap
	// compute on a device with a copy stream).
	Load(b, slot int, ahead bool) error
	// Evict copies block b back to its master (its parameters and what
	// travels with them only when writeBack is set) and lets go of its
	// device copy.
	Evict(b int, writeBack bool) error
}

// rule is a policy's own part: what it does on a miss, what it learns from
// the steps it sees and what it does between steps. The Cache keeps the
// slots and does the loads and evictions the rule asks for.
type rule interface {
	// miss makes every block of needs resident; missed, one of them, is
	// paged out.
	miss(c *Cache, needs []int, backward bool, missed int) error
	// observe is told the blocks a step needed once they are resident.
	observe(needs []int, backward bool)
	// ahead runs after step si and the updates that follow it.
	ahead(c *Cache, si int) error
}

// Cache is a window of slots over the paged blocks of a run, kept by a
// policy. It is driven step by step (Before, After, Update, Drop) through
// one Run after another; the mover copies.
type Cache struct {
	cfg    Config
	run    Run
	rule   rule
	mover  Mover
	slots  []int  // block held by each slot, -1 when free
	slotOf []int  // slot holding each block, -1 when paged out
	dirty  []bool // block changed on the device since it was loaded
	// uses lists, per block, the steps that need it in increasing order
	// (an update counts as a use at the step it follows): the whole future
	// of a Run is known, so a policy can evict the block needed farthest
	// ahead.
	uses [][]int
	now  int // the step about to run, or the step an update follows
}

// New returns an empty cache of window slots (at least run.MinWindow())
// applying cfg over run, with m carrying out its decisions.
func New(cfg Config, run Run, window int, m Mover) (*Cache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if window < run.MinWindow() {
		return nil, fmt.Errorf("cache: a window of %d blocks cannot hold the %d blocks one step needs", window, run.MinWindow())
	}
	for _, u := range run.Updates {
		if run.readOnly(u.Block) {
			return nil, fmt.Errorf("cache: block %d is read-only but updated", u.Block)
		}
	}
	for si, s := range run.Steps {
		for _, b := range s.Writes {
			if run.readOnly(b) || !slices.Contains(s.Needs, b) {
				return nil, fmt.Errorf("cache: step %d writes block %d, which it does not need or which is read-only", si, b)
			}
		}
	}
	t, _ := lookup(cfg.Policy)
	c := &Cache{cfg: cfg, run: run, rule: t.newRule(run), mover: m,
		slots: slices.Repeat([]int{-1}, window), slotOf: slices.Repeat([]int{-1}, run.Blocks),
		dirty: make([]bool, run.Blocks), uses: make([][]int, run.Blocks)}
	for si, s := range run.Steps {
		for _, b := range s.Needs {
			c.uses[b] = append(c.uses[b], si)
		}
	}
	for _, u := range run.Updates {
		if !slices.Contains(run.Steps[u.After].Needs, u.Block) {
			c.uses[u.Block] = append(c.uses[u.Block], u.After)
		}
	}
	for _, uses := range c.uses {
		slices.Sort(uses)
	}
	return c, nil
}

// Window returns the number of slots.
func (c *Cache) Window() int { return len(c.slots) }

// Resident reports whether block b is in a slot.
func (c *Cache) Resident(b int) bool { return c.slotOf[b] >= 0 }

// Before makes the blocks step si needs resident, as the policy decides,
// and lets the policy observe them.
func (c *Cache) Before(si int) error {
	c.now = si
	s := c.run.Steps[si]
	if err := c.ensure(s.Needs, s.Backward); err != nil {
		return err
	}
	for _, b := range s.Writes {
		c.dirty[b] = true
	}
	c.rule.observe(s.Needs, s.Backward)
	return nil
}

// After lets the policy act once step si and the updates that follow it
// have run (the auto policy loads ahead).
func (c *Cache) After(si int) error { return c.rule.ahead(c, si) }

// Update makes block b resident for its optimizer update on the device,
// which follows step after, and marks it changed.
func (c *Cache) Update(b, after int) error {
	c.now = after
	if err := c.ensure([]int{b}, true); err != nil {
		return err
	}
	c.dirty[b] = true
	return nil
}

// Drop lets go of block b's device copy without writing its parameters
// back, when it is resident: its update ran on the host, so the master is
// newer.
func (c *Cache) Drop(b int) error {
	if c.Resident(b) {
		return c.evict(b, false)
	}
	return nil
}

// ensure makes the blocks of needs resident, calling the rule on a miss.
func (c *Cache) ensure(needs []int, backward bool) error {
	for _, b := range needs {
		if !c.Resident(b) {
			return c.rule.miss(c, needs, backward, b)
		}
	}
	return nil
}

// nextUse returns the first step at or after c.now that needs block b; a
// block not needed again in this Run is needed in the next one, after
// every step of this one.
func (c *Cache) nextUse(b int) int {
	uses := c.uses[b]
	i, _ := slices.BinarySearch(uses, c.now)
	if i < len(uses) {
		return uses[i]
	}
	if len(uses) == 0 {
		return math.MaxInt
	}
	return uses[0] + len(c.run.Steps)
}

// victim returns the resident block, other than those keep lists, that is
// needed farthest ahead, or -1 when every resident block is kept.
func (c *Cache) victim(keep []int) int {
	victim := -1
	for _, b := range c.slots {
		if b >= 0 && !slices.Contains(keep, b) && (victim < 0 || c.nextUse(b) > c.nextUse(victim)) {
			victim = b
		}
	}
	return victim
}

// freeSlot returns a free slot, evicting the block needed farthest ahead
// among those keep does not list (written back only if changed) when none
// is free.
func (c *Cache) freeSlot(keep []int) (int, error) {
	if slot := slices.Index(c.slots, -1); slot >= 0 {
		return slot, nil
	}
	victim := c.victim(keep)
	if victim < 0 {
		return -1, fmt.Errorf("cache: a window of %d blocks cannot hold the %d blocks one step needs", len(c.slots), len(keep))
	}
	slot := c.slotOf[victim]
	return slot, c.evict(victim, c.dirty[victim])
}

// load puts block b in slot and has the mover copy it in.
func (c *Cache) load(b, slot int, ahead bool) error {
	c.slots[slot], c.slotOf[b], c.dirty[b] = b, slot, false
	return c.mover.Load(b, slot, ahead)
}

// evict has the mover copy block b out (writing it back when writeBack is
// set) and frees its slot.
func (c *Cache) evict(b int, writeBack bool) error {
	if err := c.mover.Evict(b, writeBack); err != nil {
		return err
	}
	c.slots[c.slotOf[b]], c.slotOf[b], c.dirty[b] = -1, -1, false
	return nil
}
