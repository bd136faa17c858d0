package bench

import (
	"fmt"
	"strconv"
	"strings"

	"gpuz/internal/engine"
)

// ParsePlace reads a hybrid placement for a model of blocks blocks (as the
// model's Blocks, counted from 0): a comma list of PLACE:N or PLACE:N-M,
// PLACE being cuda (resident on the device and computed there) or host
// (resident in host memory and computed with the host's kernels), e.g.
// "host:0,cuda:1-11,host:12". Every block must be placed exactly once; the
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
			return nil, fmt.Errorf("%q: paging blocks in a hybrid placement is not supported yet (want cuda or host)", part)
		default:
			return nil, fmt.Errorf("%q: unknown place %q (want cuda or host)", part, kind)
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
