package bench

import (
	"gpuz/internal/engine"
	"gpuz/internal/hostmath"
)

// The cache policies cache mode can page blocks by.
const (
	// PolicyWindow is DictCache's: at most Cache.Window blocks resident,
	// Adam's moments resident on the device for the whole run.
	PolicyWindow = string(engine.PolicyWindow)
	// PolicyWindowPaged is the window with Adam's moments paged with their
	// block.
	PolicyWindowPaged = string(engine.PolicyWindowPaged)
	// PolicyAuto sizes the window from free memory, prefetches, and can
	// run the optimizer on the host.
	PolicyAuto = string(engine.PolicyAuto)
)

// DefaultLR is the reference experiment's Adam learning rate.
var DefaultLR = hostmath.DefaultAdam.LR

// Cache describes how cache mode places the blocks.
type Cache struct {
	Policy string // PolicyWindow, PolicyWindowPaged or PolicyAuto
	// Window is the most blocks resident at once; with PolicyAuto, 0 sizes
	// it from free memory.
	Window int
	// OptimizerOnHost runs each block's update on the host (PolicyAuto
	// only).
	OptimizerOnHost bool
}

// Validate reports a description that cannot place the blocks.
func (c Cache) Validate() error { return c.placement().Validate() }

// placement is the engine's paged placement that c describes.
func (c Cache) placement() engine.Placement {
	return engine.Placement{Paged: true, Policy: engine.Policy(c.Policy), Window: c.Window, OptimizerOnHost: c.OptimizerOnHost}
}

// BLASName names the host BLAS the kernels use.
func BLASName() string { return hostmath.BLASName() }

// BLASEnv returns the environment settings, NAME=VALUE, that the BLAS reads
// only when it loads: a program sets them before it starts.
func BLASEnv() []string { return hostmath.LoadEnv() }
