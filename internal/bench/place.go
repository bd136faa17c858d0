package bench

import (
	"errors"
	"fmt"
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
		w, ok := engine.ParseWhere(kind)
		if !ok {
			return nil, fmt.Errorf("%q: unknown place %q (want cuda, host or cache)", part, kind)
		}
		lo, hi, err := parseSpan(span)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%q: %w", part, err)
		case lo < 0 || hi < 0:
			return nil, fmt.Errorf("%q: block %d is negative (blocks count from 0)", part, min(lo, hi))
		case hi < lo:
			return nil, fmt.Errorf("%q: the range %d-%d is reversed (want %d-%d)", part, lo, hi, hi, lo)
		case hi >= blocks:
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

// parseSpan reads N or N-M, either possibly negative ("-1", "0--1"), so
// that the caller can say a block is negative rather than not a number.
func parseSpan(span string) (lo, hi int, err error) {
	from, to, isRange := span, "", false
	// The range's dash is the first one after the first character, which
	// may be a minus sign.
	if i := strings.Index(span[min(1, len(span)):], "-"); i >= 0 {
		i += min(1, len(span))
		from, to, isRange = span[:i], span[i+1:], true
	}
	if lo, err = parseBlock(from); err != nil {
		return 0, 0, err
	}
	if !isRange {
		return lo, lo, nil
	}
	if to == "" {
		return 0, 0, errors.New("the range has no last block")
	}
	if hi, err = parseBlock(to); err != nil {
		return 0, 0, err
	}
	return lo, hi, nil
}

// parseBlock reads one block number: "is not a number" for what is not
// one, "is out of range" for digits too large for an int.
func parseBlock(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("block %q is out of range", s)
	}
	if err != nil {
		return 0, fmt.Errorf("block %q is not a number", s)
	}
	return n, nil
}
