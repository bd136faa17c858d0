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
// plan and the JSON describe. Its placement options are one value,
// Placements, and its levers another, levers.Set.
type Config struct {
	// Placements is the placement options of every mode the
	// configuration runs: each mode's row of the modes table builds the
	// mode's engine.Placement from them (Mode.Placement).
	Placements
	// Placed, when set, is the placement of the configuration's one mode,
	// in place of the one its row builds from Placements: a candidate of
	// fit's search, which enumerates placements (Search), runs and plans
	// in the placement it enumerated.
	Placed engine.Placement
	// Set is the levers (--recompute, --precision, --attention, --lora):
	// the run applies them where it builds the workload (Options.compile),
	// the model's through models.Apply, the schedule's through
	// engine.Spec. The zero value is every lever's default.
	levers.Set
}

// Placements is the command line's placement options (--policy,
// --win-size, --optimizer-on, --place, --managed-page, --managed-advise),
// every mode's at once, since one configuration runs several modes: the
// flags fill it once, and each mode's row of the modes table turns it
// into the mode's engine.Placement.
type Placements struct {
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
	// place is the mode's placement under the placement options.
	place func(Placements) engine.Placement
	// plan is the placements a memory plan shows side by side under the
	// placement options, in training or not; nil: place's alone.
	plan func(p Placements, train bool) []engine.Placement
	// search is the placements fit's search plans (Search); nil: place's
	// under the zero Placements alone.
	search func(Space) []engine.Placement
	// window returns one of the mode's placements less the window of
	// blocks it pages through the device, and whether it had one (fit's
	// window families, Mode.WindowFamily); nil for a mode without one.
	window func(engine.Placement) (engine.Placement, bool)
}

// modes is every mode's row, in the order the command line lists them
// (and, the host's first, fit's search): a new mode is one more row here
// and its placement in package engine.
var modes = []modeRow{
	{mode: ModeCUDA, gpu: true, resident: true, simplicity: 0,
		place: func(Placements) engine.Placement { return engine.Resident{} }},
	{mode: ModeCache, gpu: true, simplicity: 2,
		place: func(p Placements) engine.Placement { return engine.Paged{Cache: p.Cache} },
		plan:  pagedChoices, search: pagedSearch, window: pagedWindow},
	{mode: ModeCPU, gpu: false, resident: true, simplicity: 1,
		place: func(Placements) engine.Placement { return engine.Resident{} }},
	{mode: ModeHybrid, gpu: true, unpredicted: true, placesBlocks: true, simplicity: 4,
		place:  func(p Placements) engine.Placement { return engine.Hybrid{Blocks: p.Place, Cache: p.Cache} },
		search: hybridSearch},
	{mode: ModeManaged, gpu: true, migrates: true, simplicity: 3,
		place: Placements.managed, search: managedSearch},
}

// rowOf returns mode's row, false for a mode the table does not have.
func rowOf(mode Mode) (modeRow, bool) {
	i := slices.IndexFunc(modes, func(r modeRow) bool { return r.mode == mode })
	if i < 0 {
		return modeRow{}, false
	}
	return modes[i], true
}

// Placement is mode's placement under c: c.Placed where set, else the
// one its row builds from c.Placements; Resident for a mode the table
// does not have (ParseMode refuses one).
func (m Mode) Placement(c Config) engine.Placement {
	row, ok := rowOf(m)
	switch {
	case c.Placed != nil:
		return c.Placed
	case !ok:
		return engine.Resident{}
	}
	return row.place(c.Placements)
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

// Search returns every placement fit's search plans in space, with its
// mode: the host's modes first, then, with a GPU, the GPU's, each in the
// table's order.
func Search(space Space, gpu bool) []ModePlacement {
	var out []ModePlacement
	for _, onGPU := range []bool{false, true} {
		for _, r := range modes {
			if r.gpu != onGPU || (onGPU && !gpu) {
				continue
			}
			placements := []engine.Placement{r.place(Placements{})}
			if r.search != nil {
				placements = r.search(space)
			}
			for _, p := range placements {
				out = append(out, ModePlacement{Mode: r.mode, Placement: p})
			}
		}
	}
	return out
}

// ModePlacement is a mode and one of its placements.
type ModePlacement struct {
	Mode      Mode
	Placement engine.Placement
}

// WindowFamily returns, for a configuration of mode m whose blocks a
// window pages through the device (cache), c without its window (its
// family: the policy, the optimizer's place and the levers) and true: a
// larger window of one family holds more blocks and needs more of the
// device, so fit's search rules the larger windows out once one is over
// the budget. Other configurations give c and false.
func (m Mode) WindowFamily(c Config) (Config, bool) {
	row, ok := rowOf(m)
	if !ok || row.window == nil {
		return c, false
	}
	without, windowed := row.window(m.Placement(c))
	if !windowed {
		return c, false
	}
	c.Placed = without
	return c, true
}

// planPlacements is the placements a memory plan shows side by side for
// mode under c (c.Placed alone where set); none for a mode the table does
// not have.
func planPlacements(mode Mode, c Config, train bool) []engine.Placement {
	row, ok := rowOf(mode)
	switch {
	case !ok:
		return nil
	case c.Placed != nil:
		return []engine.Placement{c.Placed}
	case row.plan != nil:
		return row.plan(c.Placements, train)
	}
	return []engine.Placement{row.place(c.Placements)}
}

// pagedWindow is a cache placement less its window, and whether it had
// one (Mode.WindowFamily).
func pagedWindow(pl engine.Placement) (engine.Placement, bool) {
	p, ok := pl.(engine.Paged)
	if !ok || p.Cache.Window == 0 {
		return pl, false
	}
	p.Cache.Window = 0
	return p, true
}

// pagedChoices is the cache mode's placements in a plan: every policy,
// side by side (cache.Choices).
func pagedChoices(p Placements, train bool) []engine.Placement {
	var out []engine.Placement
	for _, cc := range cache.Choices(p.Cache.Window, train) {
		out = append(out, engine.Paged{Cache: cc})
	}
	return out
}

// pagedSearch is the cache mode's placements in fit's search: each
// policy, each window from the least a step needs to every block, the
// optimizer on the device or (where the policy allows and when training)
// the host. Windows below the least a step needs load as that; the auto
// policy's window 0 (sized from free memory) is not searched: a run would
// size it from all the free memory, the margin included, so each window
// is searched explicitly instead.
func pagedSearch(s Space) []engine.Placement {
	var out []engine.Placement
	for _, policy := range cache.Policies() {
		for _, onHost := range []bool{false, true} {
			for w := max(s.MinWindow, 1); w <= s.Blocks; w++ {
				cc := cache.Config{Policy: policy, Window: w, OptimizerOnHost: onHost}
				if cc.Validate() != nil || (onHost && !s.Train) {
					continue
				}
				out = append(out, engine.Paged{Cache: cc})
			}
		}
	}
	return out
}

// hybridSearch is the hybrid mode's placements in fit's search: the
// first k blocks on the host and the rest resident on the device, and
// the first k on the device and the rest on the host, for k from 1 to
// blocks-1. Each boundary between the sides costs one activation copied
// each way per batch, so of the placements with k blocks on the host
// these have the fewest copies (one boundary); 2(blocks-1) placements
// instead of 2^blocks.
func hybridSearch(s Space) []engine.Placement {
	var out []engine.Placement
	for _, hostFirst := range []bool{true, false} {
		for k := 1; k < s.Blocks; k++ {
			place := make([]engine.Where, s.Blocks)
			for b := range place {
				place[b] = engine.OnDevice
				if (b < k) == hostFirst {
					place[b] = engine.OnHost
				}
			}
			out = append(out, engine.Hybrid{Blocks: place})
		}
	}
	return out
}

// managedSearch is the managed mode's placements in fit's search, in
// pages of cache.DefaultPageSize: migrating, and with the host advised.
func managedSearch(Space) []engine.Placement {
	return []engine.Placement{Placements{}.managed(), Placements{ManagedAdviseHost: true}.managed()}
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

// managed is the managed mode's placement: every block resident in
// managed memory, migrating in pages of p.ManagedPage.
func (p Placements) managed() engine.Placement {
	page := p.ManagedPage
	if page == 0 {
		page = cache.DefaultPageSize
	}
	return engine.Managed{PageSize: page, AdviseHost: p.ManagedAdviseHost}
}
