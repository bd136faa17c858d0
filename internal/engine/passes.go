package engine

import (
	"fmt"

	"gorgonia.org/gorgonia"
)

// Passes returns the number of passes a Program of the schedule runs one
// at a time (Spec.Passes), 1 for a schedule without passes.
func (sc *Schedule) Passes() int { return len(sc.passes) }

// PassWork returns the work of one run of pass p (Spec.Passes; pass 0 is
// every step of a schedule without passes) under placement pl, split by
// where each step runs: with the device's kernels (device) or with the
// host's (host: a hybrid placement's host blocks). On the host device
// (the cpu mode) every step is the device's.
func (sc *Schedule) PassWork(pl Placement, p int) (device, host Work, err error) {
	if p < 0 || p >= len(sc.passes) {
		return Work{}, Work{}, fmt.Errorf("engine: pass %d of a schedule of %d passes", p, len(sc.passes))
	}
	bd, err := sc.bindValid(pl)
	if err != nil {
		return Work{}, Work{}, err
	}
	sd := bd.sides()
	for si := sc.passes[p][0]; si < sc.passes[p][1]; si++ {
		w := &device
		if sd.stepHost[si] {
			w = &host
		}
		sc.addStepWork(w, si)
	}
	return device, host, nil
}

// PassCopies returns the copies of one run of pass p under placement pl
// in steady state, counted as Copies counts an epoch's: the fed inputs
// uploaded before it (nil fed: none), its output downloaded after it, the
// crossings of its steps, and the blocks it pages (or the pages it
// migrates) on a window of window blocks (or pages), counted on the
// second of two runs of the pass in a row: a generation's decode pass
// after the one before it, which is every token's but the first. A nil
// fed is the pass's own inputs: those only its steps read (a generation
// pass's token ids and positions), not the constants the passes share.
func (sc *Schedule) PassCopies(pl Placement, window, p int, fed []*gorgonia.Node) (Copies, error) {
	if p < 0 || p >= len(sc.passes) {
		return Copies{}, fmt.Errorf("engine: pass %d of a schedule of %d passes", p, len(sc.passes))
	}
	bd, err := sc.bindValid(pl)
	if err != nil {
		return Copies{}, err
	}
	sd := bd.sides()
	if fed == nil {
		fed = sc.passInputs(p)
	}
	c, err := sc.runCopies(sd, sc.outputs()[p:p+1], fed)
	if err != nil {
		return Copies{}, err
	}
	c = c.plus(sc.crossingsIn(sd, sc.passes[p][0], sc.passes[p][1]), 1)
	moved, err := bd.moves(window, func(h runHooks, st stepper) error { return sc.walkPass(h, st, p) })
	if err != nil {
		return Copies{}, err
	}
	return c.plus(moved, 1), nil
}

// passInputs returns the inputs that steps of pass p read and steps of
// no other pass do.
func (sc *Schedule) passInputs(p int) []*gorgonia.Node {
	pass := make([]int, len(sc.values)) // 0: unread; p+1: by pass p only; -1: by several
	for q, r := range sc.passes {
		for si := r[0]; si < r[1]; si++ {
			for _, a := range sc.steps[si].args {
				switch pass[a] {
				case 0:
					pass[a] = q + 1
				case q + 1:
				default:
					pass[a] = -1
				}
			}
		}
	}
	var in []*gorgonia.Node
	for i, v := range sc.values {
		if v.kind == kindInput && pass[i] == p+1 {
			in = append(in, v.node)
		}
	}
	return in
}
