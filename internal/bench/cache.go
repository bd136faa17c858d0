package bench

import (
	"fmt"
	"gpuz/internal/cache"
	"gpuz/internal/engine"
	"gpuz/internal/hostmath"
	"gpuz/internal/units"
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
	// ManagedPage is the managed mode's page, its unit of migration, in
	// bytes: a power of two of at least cache.MinPageSize; 0 is
	// cache.DefaultPageSize.
	ManagedPage int64
}

// managedPlacement is the managed mode's placement: every block resident
// in managed memory, migrating in pages of c.ManagedPage.
func (c Config) managedPlacement() engine.Placement {
	page := c.ManagedPage
	if page == 0 {
		page = cache.DefaultPageSize
	}
	return engine.Placement{Managed: true, PageSize: page}
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

// ManagedText describes a managed placement in a table: the pages the
// device holds resident of the region's, and the page size, as
// "40/76 pages of 2 MiB".
func ManagedText(resident, pages int, pageSize int64) string {
	return fmt.Sprintf("%d/%d pages of %s", resident, pages, units.Bytes(pageSize))
}
