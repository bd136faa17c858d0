package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gpuz/internal/cache"
	"gpuz/internal/device"
)

// Paged keeps every block's master copy in host memory and a window of
// blocks on the device (the cache mode), moving them in and out as
// Cache's policy decides (residency.go). The window is raised to the
// schedule's MinWindow and capped at the number of blocks.
type Paged struct {
	// Cache is the policy, the window and where the optimizer runs.
	Cache cache.Config
}

// Validate reports a cache configuration that cannot be used.
func (p Paged) Validate() error { return p.Cache.Validate() }

// Usable reports nothing: every device holds a paged placement (or runs
// out of memory trying).
func (Paged) Usable(device.Device) error { return nil }

// Describe is the policy and the window of the blocks: recorded "window
// 3/12", Long "window policy, 3/12 blocks, optimizer on host", Short
// "window 3/12, opt. on host", Named " window policy, 3 blocks, optimizer
// on host".
func (p Paged) Describe(fp Footprint, blocks int, form Form) string {
	switch {
	case form == Named:
		s := fmt.Sprintf(" %s policy, %d blocks", p.Cache.Policy, p.Cache.Window)
		if p.Cache.Window == 1 {
			s = fmt.Sprintf(" %s policy, 1 block", p.Cache.Policy)
		}
		if p.Cache.OptimizerOnHost {
			s += ", optimizer on host"
		}
		return s
	case form == Long:
		s := fmt.Sprintf("%s policy, %d/%d blocks", p.Cache.Policy, fp.Window, blocks)
		if p.Cache.OptimizerOnHost {
			s += ", optimizer on host"
		}
		return s
	case form == Short && p.Cache.OptimizerOnHost:
		return fmt.Sprintf("%s %d/%d, opt. on host", p.Cache.Policy, fp.Window, blocks)
	}
	return fmt.Sprintf("%s %d/%d", p.Cache.Policy, fp.Window, blocks)
}

// Flags is the policy, the window and, on the host, the optimizer's
// place: "--policy lru --win-size 3 --optimizer-on host".
func (p Paged) Flags() []string {
	words := []string{"--policy", string(p.Cache.Policy), "--win-size", strconv.Itoa(p.Cache.Window)}
	if p.Cache.OptimizerOnHost {
		words = append(words, "--optimizer-on", "host")
	}
	return words
}

// Settings is the policy, the window and the optimizer's place.
func (p Paged) Settings() Settings {
	return Settings{Policy: p.Cache.Policy, Window: p.Cache.Window, OptimizerOnHost: p.Cache.OptimizerOnHost}
}

// Keys is the policy and the window of the blocks in fp.
func (p Paged) Keys(fp Footprint) [][2]string {
	return [][2]string{{"policy", string(p.Cache.Policy)}, {"window", strconv.Itoa(fp.Window)}}
}

// keysOfRecord reads the policy and the window from the record "POLICY
// N/BLOCKS" (RecordedKeys).
func (Paged) keysOfRecord(recorded string) [][2]string {
	policy, window, ok := strings.Cut(recorded, " ")
	if !ok {
		return nil
	}
	window, _, _ = strings.Cut(window, "/")
	return [][2]string{{"policy", policy}, {"window", window}}
}

// Paging returns the cache configuration.
func (p Paged) Paging() (cache.Config, bool) { return p.Cache, true }

// PageBytes is 0: blocks are copied, not migrated.
func (Paged) PageBytes() int64 { return 0 }

func (p Paged) bind(sc *Schedule) (bound, error) {
	return sc.placeBlocks(slices.Repeat([]Where{InCache}, len(sc.spec.Blocks)), p.Cache)
}
