package bench

import (
	"slices"

	"gpuz/internal/cache"
	"gpuz/internal/engine"
	"gpuz/internal/levers"
)

// Mode names a placement of the model: every block on the GPU ("cuda"),
// blocks paged through a window on the GPU ("cache"), the host ("cpu"), or
// each block on the GPU, on the host or paged through the GPU as
// Options.Place says ("hybrid").
type Mode string

// The modes gpuz measures.
const (
	ModeCUDA  Mode = "cuda"
	ModeCache Mode = "cache"
	ModeCPU   Mode = "cpu"
	// ModeHybrid keeps each block resident on the GPU or on the host, where
	// it is computed (DictCache's dvs_nets), or pages it through the GPU
	// under Options.Cache's policy, as Options.Place says.
	ModeHybrid Mode = "hybrid"
	// ModeManaged keeps every block resident in managed (unified) memory
	// and runs as cuda does; when the device's free memory cannot hold it
	// all, pages migrate between host and device as kernels touch them
	// (the driver's paging, which the reference's Windows driver did by
	// itself), instead of the run failing.
	ModeManaged Mode = "managed"
)

// Config is how a run places and runs the model beyond its mode and
// sizes: the one run configuration that the flags fill, a sweep varies, the
// plan and the JSON describe. Its levers are one value, levers.Set.
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
	// Set is the levers (--recompute, --precision, --attention, --lora):
	// the run applies them where it builds the workload (Options.compile),
	// the model's through models.Apply, the schedule's through
	// engine.Spec. The zero value is every lever's default.
	levers.Set
}

// modeRow is what a mode needs, how it places the model and how a plan
// and fit's search enumerate its placements.
type modeRow struct {
	mode Mode
	// gpu says that the mode runs on the GPU device (Options.NewGPU);
	// otherwise it runs on the host.
	gpu bool
	// resident says that the mode keeps every block resident on its
	// processor: the baseline fit measures the others against (cuda on
	// the GPU, cpu on the host).
	resident bool
	// migrates says that the driver migrates the mode's pages: its need
	// is the device memory it is given, not a least need, and a budget
	// under one page holds nothing.
	migrates bool
	// unpredicted says that the performance model does not predict the
	// mode: it predicts all work on one processor.
	unpredicted bool
	// placesBlocks says that the mode places each block as Config.Place
	// says (--place).
	placesBlocks bool
	// simplicity ranks the modes from the simplest to run: between two
	// configurations whose predictions tie, fit recommends the simpler.
	simplicity int
	// place is the mode's placement under a configuration.
	place func(Config) engine.Placement
	// plan is the placements a memory plan shows side by side under a
	// configuration, in training or not; nil: place's alone.
	plan func(c Config, train bool) []engine.Placement
	// search is the configurations fit's search plans (Search); nil:
	// the zero Config alone.
	search func(Space) []Config
}

// modes is every mode's row, in the order the command line lists them
// (and, the host's first, fit's search): a new mode is one more row here
// and its placement in package engine.
var modes = []modeRow{
	{mode: ModeCUDA, gpu: true, resident: true, simplicity: 0,
		place: func(Config) engine.Placement { return engine.Resident{} }},
	{mode: ModeCache, gpu: true, simplicity: 2,
		place: func(c Config) engine.Placement { return engine.Paged{Cache: c.Cache} },
		plan:  pagedChoices, search: pagedSearch},
	{mode: ModeCPU, gpu: false, resident: true, simplicity: 1,
		place: func(Config) engine.Placement { return engine.Resident{} }},
	{mode: ModeHybrid, gpu: true, unpredicted: true, placesBlocks: true, simplicity: 4,
		place:  func(c Config) engine.Placement { return engine.Hybrid{Blocks: c.Place, Cache: c.Cache} },
		search: hybridSearch},
	{mode: ModeManaged, gpu: true, migrates: true, simplicity: 3,
		place: Config.managedPlacement, search: managedSearch},
}

// rowOf returns mode's row, false for a mode the table does not have.
func rowOf(mode Mode) (modeRow, bool) {
	i := slices.IndexFunc(modes, func(r modeRow) bool { return r.mode == mode })
	if i < 0 {
		return modeRow{}, false
	}
	return modes[i], true
}

// Placement is mode's placement under c; Resident for a mode the table
// does not have (ParseMode refuses one).
func (m Mode) Placement(c Config) engine.Placement {
	row, ok := rowOf(m)
	if !ok {
		return engine.Resident{}
	}
	return row.place(c)
}

// OnHost reports whether the mode runs on the host (the cpu), not the
// GPU: it has no device memory of its own, and no copies between the two
// apply to it; false for a mode the table does not have.
func (m Mode) OnHost() bool {
	row, ok := rowOf(m)
	return ok && !row.gpu
}

// Copies reports whether copies between host and device apply to the
// mode: not to one on the host, whose device is the host itself, so its
// epochs record no copies and tables show those figures as not applying.
func (m Mode) Copies() bool { return !m.OnHost() }

// Resident reports whether the mode keeps every block resident on its
// processor: the baseline fit measures the others against.
func (m Mode) Resident() bool {
	row, ok := rowOf(m)
	return ok && row.resident
}

// Migrates reports whether the driver migrates the mode's pages: its
// need is the device memory it is given, and a budget under one page
// holds nothing.
func (m Mode) Migrates() bool {
	row, ok := rowOf(m)
	return ok && row.migrates
}

// Predicted reports whether the performance model predicts the mode; a
// mode the table does not have is.
func (m Mode) Predicted() bool {
	row, ok := rowOf(m)
	return !ok || !row.unpredicted
}

// PlacesBlocks reports whether the mode places each block as
// Config.Place says (--place).
func (m Mode) PlacesBlocks() bool {
	row, ok := rowOf(m)
	return ok && row.placesBlocks
}

// Simplicity ranks the modes from the simplest to run (0): between two
// configurations whose predictions tie, fit recommends the simpler; -1
// for a mode the table does not have.
func (m Mode) Simplicity() int {
	row, ok := rowOf(m)
	if !ok {
		return -1
	}
	return row.simplicity
}

// ResidentMode is the mode that keeps every block resident on the GPU
// (gpu) or on the host: cuda or cpu.
func ResidentMode(gpu bool) Mode {
	i := slices.IndexFunc(modes, func(r modeRow) bool { return r.resident && r.gpu == gpu })
	return modes[i].mode
}

// Space is what fit's search enumerates a mode's placements over: a
// workload of Blocks blocks whose steps need at most MinWindow resident,
// trained or evaluated.
type Space struct {
	Blocks, MinWindow int
	Train             bool
}

// Search returns the mode and configuration of every placement fit's
// search plans in space: the host's modes first, then, with a GPU, the
// GPU's, each in the table's order.
func Search(space Space, gpu bool) []ModeConfig {
	var out []ModeConfig
	for _, onGPU := range []bool{false, true} {
		for _, r := range modes {
			if r.gpu != onGPU || (onGPU && !gpu) {
				continue
			}
			configs := []Config{{}}
			if r.search != nil {
				configs = r.search(space)
			}
			for _, c := range configs {
				out = append(out, ModeConfig{Mode: r.mode, Config: c})
			}
		}
	}
	return out
}

// ModeConfig is a mode and its configuration: one placement.
type ModeConfig struct {
	Mode Mode
	Config
}

// Placed is c with the placement options of p (the cache, the blocks'
// places and the managed options), its levers kept.
func (c Config) Placed(p Config) Config {
	c.Cache, c.Place, c.ManagedPage, c.ManagedAdviseHost = p.Cache, p.Place, p.ManagedPage, p.ManagedAdviseHost
	return c
}

// WindowFamily returns, for a configuration of mode m whose blocks a
// window pages through the device (cache), c without its window (its
// family: the policy, the optimizer's place and the levers) and true: a
// larger window of one family holds more blocks and needs more of the
// device, so fit's search rules the larger windows out once one is over
// the budget. Other configurations give false.
func (m Mode) WindowFamily(c Config) (Config, bool) {
	if c.Cache.Window == 0 || m.PlacesBlocks() {
		return c, false
	}
	return c.WithoutWindow(), true
}

// WithoutWindow is c with the paged blocks' window unset: the
// configurations a table shows once, at their fastest window.
func (c Config) WithoutWindow() Config {
	c.Cache.Window = 0
	return c
}

// planPlacements is the placements a memory plan shows side by side for
// mode under c; none for a mode the table does not have.
func planPlacements(mode Mode, c Config, train bool) []engine.Placement {
	row, ok := rowOf(mode)
	switch {
	case !ok:
		return nil
	case row.plan != nil:
		return row.plan(c, train)
	}
	return []engine.Placement{row.place(c)}
}

// pagedChoices is the cache mode's placements in a plan: every policy,
// side by side (cache.Choices).
func pagedChoices(c Config, train bool) []engine.Placement {
	var out []engine.Placement
	for _, cc := range cache.Choices(c.Cache.Window, train) {
		out = append(out, engine.Paged{Cache: cc})
	}
	return out
}

// pagedSearch is the cache mode's configurations in fit's search: each
// policy, each window from the least a step needs to every block, the
// optimizer on the device or (where the policy allows and when training)
// the host. Windows below the least a step needs load as that; the auto
// policy's window 0 (sized from free memory) is not searched: a run would
// size it from all the free memory, the margin included, so each window
// is searched explicitly instead.
func pagedSearch(s Space) []Config {
	var out []Config
	for _, policy := range cache.Policies() {
		for _, onHost := range []bool{false, true} {
			for w := max(s.MinWindow, 1); w <= s.Blocks; w++ {
				cc := cache.Config{Policy: policy, Window: w, OptimizerOnHost: onHost}
				if cc.Validate() != nil || (onHost && !s.Train) {
					continue
				}
				out = append(out, Config{Cache: cc})
			}
		}
	}
	return out
}

// hybridSearch is the hybrid mode's configurations in fit's search: the
// first k blocks on the host and the rest resident on the device, and
// the first k on the device and the rest on the host, for k from 1 to
// blocks-1. Each boundary between the sides costs one activation copied
// each way per batch, so of the placements with k blocks on the host
// these have the fewest copies (one boundary); 2(blocks-1) placements
// instead of 2^blocks.
func hybridSearch(s Space) []Config {
	var out []Config
	for _, hostFirst := range []bool{true, false} {
		for k := 1; k < s.Blocks; k++ {
			place := make([]engine.Where, s.Blocks)
			for b := range place {
				place[b] = engine.OnDevice
				if (b < k) == hostFirst {
					place[b] = engine.OnHost
				}
			}
			out = append(out, Config{Place: place})
		}
	}
	return out
}

// managedSearch is the managed mode's configurations in fit's search:
// migrating, and with the host advised.
func managedSearch(Space) []Config {
	return []Config{{}, {ManagedAdviseHost: true}}
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
