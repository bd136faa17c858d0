package engine

import "slices"

// SavedValue is one value a training schedule keeps from the forward pass
// for the backward pass: one item of Bytes' Saved.
type SavedValue struct {
	// Block is the name of the block the value travels with.
	Block string
	// Op is the op that computes it, without its parameters (e.g.
	// "RMSNorm").
	Op string
	// Shape is its shape.
	Shape []int
	// Half says it is stored in 16 bits.
	Half bool
	// Bytes is its storage.
	Bytes int64
	// ReadBy lists the ops of the backward pass (re-runs included) that
	// read it, each once, in the order they first do.
	ReadBy []string
}

// SavedValues returns the values the schedule saves for the backward pass,
// in the order the forward pass computes them. Their Bytes add up to
// Bytes().Saved; a schedule compiled without training saves none.
func (sc *Schedule) SavedValues() []SavedValue {
	readBy := map[int][]string{}
	for _, s := range sc.steps {
		if !s.backward && !s.rerun {
			continue
		}
		for _, a := range s.args {
			if n := opName(s.op); sc.values[a].kind == kindSaved && !slices.Contains(readBy[a], n) {
				readBy[a] = append(readBy[a], n)
			}
		}
	}
	var out []SavedValue
	for _, s := range sc.steps {
		v := sc.values[s.out]
		if v.kind != kindSaved {
			continue
		}
		out = append(out, SavedValue{
			Block: sc.spec.Blocks[v.block].Name, Op: opName(s.op), Shape: slices.Clone([]int(v.shape)),
			Half: v.store.narrow(), Bytes: 4 * int64(v.elems), ReadBy: readBy[s.out],
		})
	}
	return out
}
