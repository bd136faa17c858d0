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
func (p *Schedule) assignOwners() {
	producerBlock := make([]int, len(p.values))
	consumerBlock := make([]int, len(p.values))
	for i := range p.values {
		producerBlock[i], consumerBlock[i] = -1, -1
	}
	backwardReader := make([]bool, len(p.values))
	for _, s := range p.steps {
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
	p.saved = make([][]int, len(p.spec.Blocks))
	for _, s := range p.steps {
		v := &p.values[s.out]
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
		p.saved[owner] = append(p.saved[owner], s.out)
	}

	p.needs = make([][]int, len(p.steps))
	seen := [2]map[int]bool{{}, {}}
	for si, s := range p.steps {
		// A step needs the blocks whose parameters or saved values it reads.
		// A saved value it writes for a block that is paged out is staged
		// and copied to the block's host master instead (see residency).
		need := slices.Clone(s.reads)
		for _, a := range s.args {
			if v := p.values[a]; v.kind == kindSaved && !slices.Contains(need, v.block) {
				need = append(need, v.block)
			}
		}
		p.needs[si] = need
		pass := 0
		if s.backward {
			pass = 1
		}
		for _, b := range need {
			if !seen[pass][b] {
				seen[pass][b] = true
				p.order[pass] = append(p.order[pass], b)
			}
		}
		for _, u := range p.updates {
			if u.after == si && !seen[1][u.block] {
				seen[1][u.block] = true
				p.order[1] = append(p.order[1], u.block)
			}
		}
	}
}

// largestSaved returns the elements of the largest saved value.
func (p *Schedule) largestSaved() int {
	n := 0
	for _, v := range p.values {
		if v.kind == kindSaved {
			n = max(n, v.elems)
		}
	}
	return n
}

// MinWindow is the fewest blocks that must be resident at once: the most
// blocks any one step needs.
func (p *Schedule) MinWindow() int { return minWindow(p.needs) }

// minWindow is the most blocks any one step of needs needs, at least 1.
func minWindow(needs [][]int) int {
	n := 1
	for _, need := range needs {
		n = max(n, len(need))
	}
	return n
}

// Blocks returns the number of blocks.
func (p *Schedule) Blocks() int { return len(p.spec.Blocks) }
