package engine

import (
	"maps"
	"slices"
)

// recompute rewrites a training schedule so that the backward pass computes
// each block's saved activations again instead of keeping them from the
// forward pass (levers.RecomputeBlocks, torch.utils.checkpoint per block).
// It runs on a schedule whose steps are final but whose owners, updates,
// lifetimes and arena offsets are not yet assigned: it derives the owners it
// needs, rewrites the steps, and leaves the rest to Compile's usual passes,
// which then find only the block inputs saved and the re-run values in the
// arena.
//
// For each block b, the values it recomputes are the saved values it owns
// that its own parameters reach through forward steps (its input, produced
// by an earlier block or the data, does not depend on them and stays
// saved). Just before the first backward step that reads one of them, the
// block's re-run runs again every forward step that produces one, or a
// value they are computed from that b's parameters reach, each into a new
// value; every later backward step reads the new values. The re-run steps
// are the forward steps themselves, with the same arguments, in the same
// order: their results are bit-identical to the forward pass's, and so
// are the losses and weights. The block's update, placed afresh after the
// last step that reads its parameters, follows its re-run.
func (sc *Schedule) recompute() {
	sc.scheduleUpdates()
	sc.computeLastUse()
	sc.assignOwners()

	inserts := make(map[int][]step) // by the original step they precede
	copies := make(map[int]map[int]int)
	for b := range sc.spec.Blocks {
		at, run, copied := sc.rerun(b)
		if run == nil {
			continue
		}
		inserts[at] = append(inserts[at], run...)
		if copies[at] == nil {
			copies[at] = map[int]int{}
		}
		maps.Copy(copies[at], copied)
	}

	current := map[int]int{} // a recomputed value's newest copy
	var steps []step
	for si, s := range sc.steps {
		if run, ok := inserts[si]; ok {
			steps = append(steps, run...)
			for from, to := range copies[si] {
				current[from] = to
			}
		}
		if s.backward {
			s.args = slices.Clone(s.args)
			for j, a := range s.args {
				if c, ok := current[a]; ok {
					s.args[j] = c
				}
			}
		}
		steps = append(steps, s)
	}
	sc.steps = steps
	sc.resetAssignments()
}

// rerun returns block b's re-run: the steps to insert before original step
// at, and the copy of each value they compute again. It returns nil steps
// when b has nothing to recompute or must keep its values.
func (sc *Schedule) rerun(b int) (at int, run []step, copied map[int]int) {
	reach := sc.reachedFrom(b)
	var redo []int // values of b computed again
	for _, v := range sc.saved[b] {
		if reach[v] {
			redo = append(redo, v)
		}
	}
	if len(redo) == 0 {
		return 0, nil, nil
	}
	redone := func(a int) bool { return reach[a] && sc.values[a].kind == kindSaved && sc.values[a].block == b }
	at = -1
	for si, s := range sc.steps {
		if s.backward && slices.ContainsFunc(s.args, redone) {
			at = si
			break
		}
	}
	if at < 0 {
		return 0, nil, nil
	}
	// Walk back from the recomputed values through the steps that
	// produce them, as far as values b's parameters do not reach: those
	// (b's input, the data, other blocks' values) are read as kept. A
	// value b's parameters reach is produced by a forward step
	// (computeLastUse recorded which).
	again := map[int]bool{}
	stack := slices.Clone(redo)
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		si := sc.values[v].produced
		if si < 0 || again[si] {
			continue
		}
		again[si] = true
		for _, a := range sc.steps[si].args {
			if reach[a] {
				stack = append(stack, a)
			}
		}
	}
	copied = map[int]int{}
	for si, s := range sc.steps { // in the forward pass's order
		if !again[si] {
			continue
		}
		r := step{op: s.op, node: s.node, args: slices.Clone(s.args), reads: s.reads, backward: true, rerun: true}
		for j, a := range r.args {
			if c, ok := copied[a]; ok {
				r.args[j] = c
			}
		}
		orig := sc.values[s.out]
		sc.values = append(sc.values, value{node: orig.node, kind: kindTemporary, shape: orig.shape, elems: orig.elems,
			offset: -1, block: -1, produced: -1, lastUse: -1})
		r.out = len(sc.values) - 1
		copied[s.out] = r.out
		run = append(run, r)
	}
	return at, run, copied
}

// reachedFrom marks the values that block b's parameters reach through
// forward steps without passing a value saved for another block: b's own
// activations and what is computed from them up to the next block's
// input. A value saved for another block is that block's to keep (its
// input), so b's re-run never runs that block's steps: a weight read by
// two blocks (a tied embedding, which the head reads too) reaches the
// whole model, yet each block re-runs only its own steps.
func (sc *Schedule) reachedFrom(b int) []bool {
	reach := make([]bool, len(sc.values))
	for _, pv := range sc.params {
		if sc.values[pv].block == b {
			reach[pv] = true
		}
	}
	other := func(a int) bool { v := sc.values[a]; return v.kind == kindSaved && v.block != b }
	for _, s := range sc.steps {
		if !s.backward && !other(s.out) && slices.ContainsFunc(s.args, func(a int) bool { return reach[a] && !other(a) }) {
			reach[s.out] = true
		}
	}
	return reach
}

// resetAssignments undoes what scheduleUpdates, computeLastUse and
// assignOwners set, so that Compile's passes assign them afresh over the
// rewritten steps.
func (sc *Schedule) resetAssignments() {
	for i := range sc.values {
		v := &sc.values[i]
		v.produced, v.lastUse = -1, -1
		if v.kind == kindSaved {
			v.kind, v.block = kindTemporary, -1
		}
	}
	sc.updates, sc.saved, sc.needs, sc.order = nil, nil, nil, [2][]int{}
}
