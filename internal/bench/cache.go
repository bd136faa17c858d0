package bench

import (
	"gpuz/internal/cache"
	"gpuz/internal/engine"
	"gpuz/internal/hostmath"
)

// DefaultLR is the reference experiment's Adam learning rate.
const DefaultLR = hostmath.DefaultLR

// Config is how a run places and runs the model beyond its mode and
// sizes: the one run configuration that the flags fill, a sweep varies, the
// plan and the JSON describe. The levers still to come (recompute,
// precision, managed memory) are more fields.
type Config struct {
	// Cache is how cache mode pages the blocks, and the hybrid mode its
	// cache blocks: the policy, its window and where the optimizer runs.
	// It reaches the engine's cache unchanged.
	Cache cache.Config
	// Place is the hybrid mode's placement, a block's place per block
	// (ParsePlace).
	Place []engine.Where
}

// cachePlacement is cache mode's placement: every block paged under c.
func cachePlacement(c cache.Config) engine.Placement {
	return engine.Placement{Paged: true, Cache: c}
}

// BLASName names the host BLAS the kernels use.
func BLASName() string { return hostmath.BLASName() }

// BLASEnv returns the environment settings, NAME=VALUE, that the BLAS reads
// only when it loads: a program sets them before it starts.
func BLASEnv() []string { return hostmath.LoadEnv() }
