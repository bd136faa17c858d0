package fit

import (
	"cmp"
	"fmt"
	"slices"

	"gpuz/internal/bench"
	"gpuz/internal/device"
	"gpuz/internal/models"
)

// LongestContext returns the longest context, from from up to limit
// positions, at which candidate c of opts' generation still fits the
// budget on the device and the host's available memory: a binary search
// over the context, each step planning c as Search does (a key-value
// cache's bytes grow with the context, and nothing else of a plan falls
// as it grows). It returns 0 when c does not fit at from.
func LongestContext(opts Options, c Candidate, budget int64, from, limit int) (int, error) {
	if opts.Bench.Task != bench.TaskGenerate {
		return 0, fmt.Errorf("the longest context is a generation's, not %s's", opts.Bench.Task)
	}
	at := func(context int) (bench.Options, error) {
		o := opts.Bench
		o.Generate.Context = context
		return o, nil
	}
	return longest(at, c, budget, from, limit)
}

// Longest is the longest sequence a mode fits: Tokens, and the
// configuration of the mode that fits it.
type Longest struct {
	Mode      bench.Mode
	Tokens    int
	Candidate Candidate
	// Command is the command line that runs it at Tokens, set by the
	// caller (whose sizes the command lines print).
	Command string
}

// LongestSequences returns, for each mode on the device that fits in
// res (cuda, cache, managed: the hybrid splits and the cpu are left
// out), the longest sequence one of its
// configurations fits, from the tokens a sequence of opts' workload has
// (its --seq-len) up to limit, longest first; res is opts' search. A
// configuration that does not fit a sequence fits no longer one (every
// need grows with the tokens), so each mode's search keeps, with one
// planner, those of its configurations that fit one token past the
// longest found so far, and searches the longest of the first of them
// (the least device need first), until none is left. Every length is
// planned against the host memory res was (AtSeqLen).
func LongestSequences(opts Options, res Result, limit int) ([]Longest, error) {
	if opts.Bench.Task == bench.TaskGenerate {
		return nil, fmt.Errorf("a generation's length is its context (--context max), not --seq-len")
	}
	from := models.SeqLenOf(opts.Bench.Workload)
	if from == 0 {
		return nil, fmt.Errorf("the %s workload has no sequences", opts.Bench.ModelName)
	}
	at := func(n int) (bench.Options, error) {
		o, err := opts.AtSeqLen(res, n)
		return o.Bench, err
	}
	onDevice := slices.DeleteFunc(slices.Concat(res.Ranked, res.Unranked), func(e Entry) bool { return e.Mode.OnHost() || e.Mode.PlacesBlocks() })
	slices.SortStableFunc(onDevice, func(a, b Entry) int {
		return cmp.Compare(a.Plan.Footprint.Device, b.Plan.Footprint.Device)
	})
	var out []Longest
	for _, e := range onDevice {
		if slices.ContainsFunc(out, func(l Longest) bool { return l.Mode == e.Mode }) {
			continue
		}
		var left []Candidate
		for _, f := range onDevice {
			if f.Mode == e.Mode {
				left = append(left, f.Candidate)
			}
		}
		opts.progress(fmt.Sprintf("the longest sequence %s fits", e.Mode), 0, 0)
		l, err := longestOf(at, left, res.Budget, from, limit)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	slices.SortStableFunc(out, func(a, b Longest) int { return cmp.Compare(b.Tokens, a.Tokens) })
	return out, nil
}

// longestOf returns the longest length, from from up to limit, that one
// of left, which all fit from, fits, and which.
func longestOf(at func(int) (bench.Options, error), left []Candidate, budget int64, from, limit int) (Longest, error) {
	// Every one of left fits from: the search ranked it there.
	best := Longest{Mode: left[0].Mode, Tokens: from, Candidate: left[0]}
	for len(left) > 0 && best.Tokens < limit {
		var err error
		if left, err = fitting(at, left, budget, best.Tokens+1); err != nil {
			return Longest{}, err
		}
		if len(left) == 0 {
			break
		}
		n, err := longest(at, left[0], budget, best.Tokens+1, limit)
		if err != nil {
			return Longest{}, err
		}
		best, left = Longest{Mode: left[0].Mode, Tokens: n, Candidate: left[0]}, left[1:]
	}
	return best, nil
}

// AtSeqLen returns opts with the workload's sequences of n tokens,
// planned against the host memory res, a search of opts, was
// (res.HostAvailable) rather than what the host has when the planner
// opens: the options of each step of LongestSequences, and of the search
// at the length it finds.
func (opts Options) AtSeqLen(res Result, n int) (Options, error) {
	w, err := models.WithSize(opts.Bench.Workload, "seq-len", n)
	if err != nil {
		return opts, err
	}
	opts.Bench.Workload = w
	opts.Bench.HostLimit = device.HostLimit{Bytes: res.HostAvailable, Binding: res.Header.HostMemorySource}
	return opts, nil
}

// fitting returns those of cs that fit budget at the length n, planned
// with one planner, in cs's order.
func fitting(at func(int) (bench.Options, error), cs []Candidate, budget int64, n int) ([]Candidate, error) {
	o, err := at(n)
	if err != nil {
		return nil, fmt.Errorf("planning a length of %d: %w", n, err)
	}
	p, err := bench.NewPlanner(o)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	var kept []Candidate
	for _, c := range cs {
		mp, err := p.Plan(c.Mode, c.Config, budget, false)
		if err != nil {
			return nil, fmt.Errorf("planning %s at a length of %d: %w", c, n, err)
		}
		if fits(c, mp) {
			kept = append(kept, c)
		}
	}
	return kept, nil
}

// longest returns the longest length, from from up to limit, at which
// candidate c fits budget on the device and the host's available memory
// when at sizes the options: a binary search over the length, each step
// planning c as Search does. It returns 0 when c does not fit at from.
func longest(at func(int) (bench.Options, error), c Candidate, budget int64, from, limit int) (int, error) {
	fitsAt := func(n int) (bool, error) {
		kept, err := fitting(at, []Candidate{c}, budget, n)
		return len(kept) == 1, err
	}
	if from > limit {
		return 0, nil
	}
	ok, err := fitsAt(from)
	if err != nil || !ok {
		return 0, err
	}
	lo, hi := from, limit+1 // lo fits, hi does not (or is past the limit)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := fitsAt(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}
