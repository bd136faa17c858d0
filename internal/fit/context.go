package fit

import (
	"fmt"

	"gpuz/internal/bench"
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
	fits := func(context int) (bool, error) {
		o := opts.Bench
		o.Generate.Context = context
		p, err := bench.NewPlanner(o)
		if err != nil {
			return false, err
		}
		defer p.Close()
		mp, err := p.Plan(c.Mode, c.Config, budget, false)
		if err != nil {
			return false, fmt.Errorf("planning %s at a context of %d: %w", c, context, err)
		}
		return mp.Status.Kind == bench.StatusOK && mp.FitsHost && (c.Mode.OnHost() || mp.FitsDevice), nil
	}
	ok, err := fits(from)
	if err != nil || !ok {
		return 0, err
	}
	lo, hi := from, limit+1 // lo fits, hi does not (or is past the limit)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := fits(mid)
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
