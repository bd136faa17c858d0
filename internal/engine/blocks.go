package engine

import "slices"

// assignOwners finds the values saved for the backward pass and the block
// each travels with, the blocks every step needs resident, and the order in
// which each pass first needs the blocks.
//
// A saved value travels with the first block whose parameters a forward
// step reads it with (the input of a block belongs to that block, as
// PyTorch's autograd saves it with the layer that uses it); a value no such
// step reads travels with the block that produced it, found through
// parameter-free steps back to a step that reads parameters.
func (sc *Schedule) assignOwners() {
	producerBlock := make([]int, len(sc.values))
	consumerBlock := make([]int, len(sc.values))
	for i := range sc.values {
		producerBlock[i], consumerBlock[i] = -1, -1
	}
	backwardReader := make([]bool, len(sc.values))
	for _, s := range sc.steps {
		if s.backward {
			for _, a := range s.args {
				backwardReader[a] = true
			}
			continue
		}
		if len(s.reads) > 0 {
			producerBlock[s.out] = s.reads[0]
			for _, a := range s.args {
				if consumerBlock[a] < 0 {
					consumerBlock[a] = s.reads[0]
				}
			}
		} else {
			for _, a := range s.args {
				if producerBlock[a] >= 0 {
					producerBlock[s.out] = producerBlock[a]
					break
				}
			}
		}
	}
	sc.saved = make([][]int, len(sc.spec.Blocks))
	for _, s := range sc.steps {
		v := &sc.values[s.out]
		if s.backward || !backwardReader[s.out] {
			continue
		}
		owner := consumerBlock[s.out]
		if owner < 0 {
			owner = producerBlock[s.out]
		}
		if owner < 0 {
			continue // depends on no parameter: stays in the arena
		}
		v.kind, v.block = kindSaved, owner
		sc.saved[owner] = append(sc.saved[owner], s.out)
	}

	sc.needs = make([][]int, len(sc.steps))
	seen := [2]map[int]bool{{}, {}}
	for si, s := range sc.steps {
		// A step needs the blocks whose parameters or saved values it reads.
		// A saved value it writes for a block that is paged out is staged
		// and copied to the block's host master instead (see residency).
		need := slices.Clone(s.reads)
		for _, a := range s.args {
			if v := sc.values[a]; v.kind == kindSaved && !slices.Contains(need, v.block) {
				need = append(need, v.block)
			}
		}
		sc.needs[si] = need
		pass := 0
		if s.backward {
			pass = 1
		}
		for _, b := range need {
			if !seen[pass][b] {
				seen[pass][b] = true
				sc.order[pass] = append(sc.order[pass], b)
			}
		}
		for _, u := range sc.updates {
			if u.after == si && !seen[1][u.block] {
				seen[1][u.block] = true
				sc.order[1] = append(sc.order[1], u.block)
			}
		}
	}
}

// largestStaged returns the elements of the largest saved value of a block
// that paged(block) says is paged and that its step may write while the
// block is paged out: one whose step does not need its block (a block's
// input, computed by the block before it). A step that needs the value's
// block runs with the block resident, so its outputs never pass through
// the staging buffer.
func (sc *Schedule) largestStaged(paged func(b int) bool) int {
	n := 0
	for _, v := range sc.values {
		if v.kind == kindSaved && paged(v.block) && !slices.Contains(sc.needs[v.produced], v.block) {
			n = max(n, v.elems)
		}
	}
	return n
}

// MinWindow is the fewest blocks that must be resident at once: the most
// blocks any one step needs.
func (sc *Schedule) MinWindow() int { return minWindow(sc.needs) }

// minWindow is the most blocks any one step of needs needs, at least 1.
func minWindow(needs [][]int) int {
	n := 1
	for _, need := range needs {
		n = max(n, len(need))
	}
	return n
}

// Blocks returns the number of blocks.
func (sc *Schedule) Blocks() int { return len(sc.spec.Blocks) }
