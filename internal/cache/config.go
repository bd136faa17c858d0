package cache

import (
	"fmt"
	"slices"
	"strings"
)

// Policy names a paging policy: how a cache chooses the blocks it keeps
// resident, what it loads on a miss and what it writes back.
type Policy string

// The paging policies.
const (
	// Window is DictCache's rule (docs/dictcache.md): at most Config.Window
	// blocks resident; Adam's moments stay on the device for the whole run
	// and never page; on a miss the whole window is written back and the
	// missed block is loaded with up to Window-1 successors in the order
	// learned during the previous pass (none on the first pass).
	Window Policy = "window"
	// WindowPaged is gpuz's earlier variant of the window: Adam's moments
	// page with their block, and the successors loaded on a miss follow the
	// pass's order known from the schedule, from the first pass on.
	WindowPaged Policy = "window-paged"
	// Auto sizes the window from the device's free memory, evicts the block
	// needed farthest ahead (Belady's rule: the whole schedule is known),
	// loads the next needed block before the step that needs it, writes
	// back only what changed, and can keep the optimizer on the host.
	Auto Policy = "auto"
)

// traits is what the rest of the program needs to know of a policy
// besides its rule.
type traits struct {
	name Policy
	// newRule returns the policy's rule for a run of blocks blocks.
	newRule func(run Run) rule
	// sizesWindow: a window of 0 blocks means as many as free memory holds.
	sizesWindow bool
	// hostOptimizer: the optimizer may run on the host.
	hostOptimizer bool
	// residentMoments: Adam's moments of the paged blocks stay resident on
	// the device apart from the window, instead of paging with their block.
	residentMoments bool
	// pageable: the policy copies synchronously from pageable host memory,
	// as DictCache's .to() calls do, rather than from pinned staging.
	pageable bool
}

// policies lists every policy. Adding one is a file holding its rule, a
// line here, and a few words on it in --policy's help (cmd/gpuz): the
// values the flag accepts (Validate) and the plan's rows (Choices) come
// from this table.
var policies = []traits{
	{name: Window, newRule: newWindow, residentMoments: true, pageable: true},
	{name: WindowPaged, newRule: newWindowPaged, pageable: true},
	{name: Auto, newRule: newAuto, sizesWindow: true, hostOptimizer: true},
}

// Policies returns the names of every policy, in the table's order.
func Policies() []Policy {
	out := make([]Policy, len(policies))
	for i, t := range policies {
		out[i] = t.name
	}
	return out
}

// lookup returns the traits of policy p.
func lookup(p Policy) (traits, bool) {
	i := slices.IndexFunc(policies, func(t traits) bool { return t.name == p })
	if i < 0 {
		return traits{}, false
	}
	return policies[i], true
}

// Config describes a paged placement: the policy, its window and where the
// optimizer runs. The flags fill it, and it travels unchanged through the
// run configuration and the engine to the cache that applies it.
type Config struct {
	Policy Policy
	// Window is the most blocks resident at once. Under a policy that sizes
	// its window (Auto), 0 means as many as the device's free memory holds.
	// A cache raises it to the most blocks one step needs and caps it at
	// the blocks it pages.
	Window int
	// OptimizerOnHost keeps Adam's moments in host memory and runs each
	// paged block's update there (Auto only).
	OptimizerOnHost bool
}

// Validate reports a configuration no policy can apply.
func (c Config) Validate() error {
	t, ok := lookup(c.Policy)
	if !ok {
		var names []string
		for _, p := range Policies() {
			names = append(names, string(p))
		}
		return fmt.Errorf("unknown cache policy %q (want %s)", c.Policy, strings.Join(names, ", "))
	}
	switch {
	case c.Window < 0:
		return fmt.Errorf("%s policy: negative window %d", c.Policy, c.Window)
	case c.Window == 0 && !t.sizesWindow:
		return fmt.Errorf("%s policy: the window must hold at least one block, got 0", c.Policy)
	case c.OptimizerOnHost && !t.hostOptimizer:
		return fmt.Errorf("%s policy: the optimizer runs on the device; the host optimizer is an auto-policy option", c.Policy)
	}
	return nil
}

// Moments says where a paged block's Adam moments live.
type Moments int

// Where the moments of a paged block live.
const (
	// MomentsWithBlock: in the block's area, paged with it.
	MomentsWithBlock Moments = iota
	// MomentsOnDevice: resident on the device for the whole run, apart
	// from the window (DictCache's).
	MomentsOnDevice
	// MomentsOnHost: in host memory, where the update runs.
	MomentsOnHost
)

// Moments returns where the configuration keeps a paged block's Adam
// moments.
func (c Config) Moments() Moments {
	t, _ := lookup(c.Policy)
	switch {
	case t.residentMoments:
		return MomentsOnDevice
	case c.OptimizerOnHost:
		return MomentsOnHost
	}
	return MomentsWithBlock
}

// Pageable reports whether the policy copies synchronously from pageable
// host memory (the window policies, as DictCache) rather than through
// pinned staging that a copy stream can overlap with compute.
func (c Config) Pageable() bool {
	t, _ := lookup(c.Policy)
	return t.pageable
}

// Slots returns the blocks a cache keeps resident at once: the
// configuration's window or, when the policy sizes it (window 0), the most
// blocks, up to most, whose slots free bytes hold beyond fixed (at least
// one), a window of w blocks taking bytes(w) bytes (growing with w: slots
// need not be of one size); raised to least (the most blocks one step
// needs) and capped at most (the blocks paged).
func (c Config) Slots(free, fixed int64, bytes func(w int) int64, least, most int) int {
	w := c.Window
	if t, _ := lookup(c.Policy); t.sizesWindow && w == 0 {
		w = 1
		for w < most && free > fixed && bytes(1) > 0 && bytes(w+1) <= free-fixed {
			w++
		}
	}
	return min(max(w, least), most)
}

// Choices returns the configurations a plan compares, one per policy in
// the order Policies lists them: each with window, or with a window sized
// from free memory (0) where the policy sizes its own; a policy that does
// not size its window is left out when window is 0 (it has no window to
// plan); then, when hostOptimizer is set (training), each policy that can
// run the optimizer on the host once more with it there.
func Choices(window int, hostOptimizer bool) []Config {
	var out []Config
	for _, t := range policies {
		c := Config{Policy: t.name, Window: window}
		switch {
		case t.sizesWindow:
			c.Window = 0
		case window < 1:
			continue
		}
		out = append(out, c)
	}
	if hostOptimizer {
		for _, t := range policies {
			if t.hostOptimizer {
				out = append(out, Config{Policy: t.name, OptimizerOnHost: true})
			}
		}
	}
	return out
}
