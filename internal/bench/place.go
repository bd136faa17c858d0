package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gpuz/internal/engine"
)

// ParsePlace reads a hybrid placement for a model of blocks blocks (as the
// model's Blocks, counted from 0): a comma list of PLACE:N or PLACE:N-M,
// PLACE being cuda (resident on the device and computed there), host
// (resident in host memory and computed with the host's kernels) or cache
// (paged through the device under the cache policy, Options.Cache), e.g.
// "host:0,cuda:1-3,cache:4-11,host:12". Every block must be placed exactly once; the
// error names a gap or an overlap. A sweep over placements would separate
// several by ";", which no placement contains.
func ParsePlace(s string, blocks int) ([]engine.Where, error) {
	out := make([]engine.Where, blocks)
	placed := make([]bool, blocks)
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		kind, span, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("%q: want PLACE:N or PLACE:N-M", part)
		}
		var w engine.Where
		switch kind {
		case "cuda":
			w = engine.OnDevice
		case "host":
			w = engine.OnHost
		case "cache":
			w = engine.InCache
		default:
			return nil, fmt.Errorf("%q: unknown place %q (want cuda, host or cache)", part, kind)
		}
		from, to, isRange := strings.Cut(span, "-")
		lo, err := strconv.Atoi(from)
		if err != nil {
			return nil, fmt.Errorf("%q: block %q is not a number", part, from)
		}
		hi := lo
		if isRange {
			if hi, err = strconv.Atoi(to); err != nil {
				return nil, fmt.Errorf("%q: block %q is not a number", part, to)
			}
		}
		if lo < 0 || hi < lo || hi >= blocks {
			return nil, fmt.Errorf("%q: blocks %d-%d outside 0-%d", part, lo, hi, blocks-1)
		}
		for b := lo; b <= hi; b++ {
			if placed[b] {
				return nil, fmt.Errorf("block %d placed twice (again in %q)", b, part)
			}
			placed[b], out[b] = true, w
		}
	}
	for b, ok := range placed {
		if !ok {
			return nil, fmt.Errorf("block %d is not placed (blocks 0-%d each need a place)", b, blocks-1)
		}
	}
	return out, nil
}

// hybridPlacement is the hybrid mode's placement: opts.Place, its cache
// blocks, if any, paged under opts.Cache's policy.
func (opts Options) hybridPlacement() engine.Placement {
	if !slices.Contains(opts.Place, engine.InCache) {
		return engine.Placement{Blocks: opts.Place}
	}
	pl := cachePlacement(opts.Cache)
	pl.Blocks = opts.Place
	return pl
}
