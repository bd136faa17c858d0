package bench

import (
	"slices"

	"gpuz/internal/cache"
	"gpuz/internal/engine"
	"gpuz/internal/levers"
)

// Config is how a run places and runs the model beyond its mode and
// sizes: the one run configuration that the flags fill, a sweep varies, the
// plan and the JSON describe. Each lever (package levers) is one more
// field.
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
	// ManagedAdviseHost keeps the managed pages that do not fit the
	// device in host memory, read in place across the bus
	// (--managed-advise host), instead of migrating them.
	ManagedAdviseHost bool
	// Recompute is the recompute lever (--recompute): with
	// levers.RecomputeBlocks a training run keeps only each block's input
	// and runs the block's forward again before its gradients; "" is none.
	// It applies to every mode; evaluation saves nothing and is unchanged.
	Recompute levers.Recompute
	// Precision is the storage precision on the compute device
	// (--precision): fp32, or bf16 or fp16 under automatic mixed
	// precision's rules, with float32 masters in training and fp16's loss
	// scaled dynamically; "" is fp32. It applies to every mode.
	Precision levers.Precision
	// Attention is how the model computes attention (--attention): eager
	// or fused; "" keeps the workload's own setting (its default, or what
	// its config says). A workload without attention layers ignores it.
	Attention levers.Attention
	// LoRA is low-rank adaptation (--lora, --lora-alpha, --lora-targets):
	// the adapters trained, every other weight frozen; the zero value
	// keeps the workload's own setting. A workload without linear layers
	// to adapt takes only the zero value (models.Workload.WithLoRA).
	LoRA levers.LoRA
}

// modeRow is what a mode needs and how it places the model.
type modeRow struct {
	mode Mode
	// gpu says that the mode runs on the GPU device (Options.NewGPU);
	// otherwise it runs on the host.
	gpu bool
	// place is the mode's placement under a configuration.
	place func(Config) engine.Placement
}

// modes is every mode's row, in the order the command line lists them: a
// new mode is one more row here and its placement in package engine.
var modes = []modeRow{
	{mode: ModeCUDA, gpu: true, place: func(Config) engine.Placement { return engine.Resident{} }},
	{mode: ModeCache, gpu: true, place: func(c Config) engine.Placement { return engine.Paged{Cache: c.Cache} }},
	{mode: ModeCPU, gpu: false, place: func(Config) engine.Placement { return engine.Resident{} }},
	{mode: ModeHybrid, gpu: true, place: func(c Config) engine.Placement { return engine.Hybrid{Blocks: c.Place, Cache: c.Cache} }},
	{mode: ModeManaged, gpu: true, place: Config.managedPlacement},
}

// rowOf returns mode's row, false for a mode the table does not have.
func rowOf(mode Mode) (modeRow, bool) {
	i := slices.IndexFunc(modes, func(r modeRow) bool { return r.mode == mode })
	if i < 0 {
		return modeRow{}, false
	}
	return modes[i], true
}

// Modes returns every mode, in the table's order.
func Modes() []Mode {
	out := make([]Mode, len(modes))
	for i, r := range modes {
		out[i] = r.mode
	}
	return out
}

// ParseMode reads a mode's name, or gpu for cuda; false for a word that
// names no mode.
func ParseMode(word string) (Mode, bool) {
	if word == "gpu" {
		return ModeCUDA, true
	}
	_, ok := rowOf(Mode(word))
	return Mode(word), ok
}

// managedPlacement is the managed mode's placement: every block resident
// in managed memory, migrating in pages of c.ManagedPage.
func (c Config) managedPlacement() engine.Placement {
	page := c.ManagedPage
	if page == 0 {
		page = cache.DefaultPageSize
	}
	return engine.Managed{PageSize: page, AdviseHost: c.ManagedAdviseHost}
}
