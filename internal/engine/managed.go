package engine

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/units"
)

// Managed keeps every block resident in one region of managed (unified)
// memory, run as the resident placement runs, the pages migrating between
// host and device as a kernel touches them (cache.Pages: the least
// recently touched page out first) when the device's free memory cannot
// hold them all.
type Managed struct {
	// PageSize is the unit of migration, a power of two of at least
	// cache.MinPageSize.
	PageSize int64
	// AdviseHost keeps the pages that do not fit the device's free memory
	// in host memory (their preferred location), the kernels reading and
	// writing them there across the bus instead of migrating them: the
	// Windows driver's fallback. The pages that fit migrate once and stay.
	AdviseHost bool
}

// Validate reports a page size that cannot be used.
func (m Managed) Validate() error { return cache.CheckPageSize(m.PageSize) }

// Usable reports why dev cannot run a managed placement: its Caps have
// no managed memory, or that memory cannot be oversubscribed.
func (Managed) Usable(dev device.Device) error {
	mm := dev.Caps().Managed
	if mm == nil {
		return errors.New(dev.Name() + " cannot allocate managed memory")
	}
	return mm.ManagedSupport()
}

// Describe is the pages the device holds resident of the region's and
// their size: recorded "40/76 pages of 2 MiB" (", rest on the host" after
// it when the rest stays there), Long "managed, 40/76 pages of 2 MiB",
// Short "40/76×2 MiB" (", host").
func (m Managed) Describe(fp Footprint, _ int, form Form) string {
	switch form {
	case Named:
		if m.AdviseHost {
			return ", advise host"
		}
		return ""
	case Short:
		s := fmt.Sprintf("%d/%d×%s", fp.Window, fp.Pages, units.Bytes(m.PageSize))
		if m.AdviseHost {
			s += ", host"
		}
		return s
	case Long:
		return "managed, " + managedText(fp.Window, fp.Pages, m.PageSize, m.AdviseHost)
	}
	return managedText(fp.Window, fp.Pages, m.PageSize, m.AdviseHost)
}

// managedText is "40/76 pages of 2 MiB", adviseHostText after it when the
// rest stays in host memory.
func managedText(resident, pages int, pageSize int64, adviseHost bool) string {
	s := fmt.Sprintf("%d/%d pages of %s", resident, pages, units.Bytes(pageSize))
	if adviseHost {
		s += adviseHostText
	}
	return s
}

// adviseHostText ends a managed placement's recorded text when the pages
// that do not fit stay on the host (--managed-advise host).
const adviseHostText = ", rest on the host"

// Flags is the page size where it is not cache.DefaultPageSize and the
// advice where it is host: "--managed-page 65536 --managed-advise host".
func (m Managed) Flags() []string {
	var words []string
	if m.PageSize != cache.DefaultPageSize {
		words = append(words, "--managed-page", strconv.FormatInt(m.PageSize, 10))
	}
	if m.AdviseHost {
		words = append(words, "--managed-advise", "host")
	}
	return words
}

// Settings is the advice.
func (m Managed) Settings() Settings { return Settings{AdviseHost: m.AdviseHost} }

// Keys is the resident pages of fp ("40/76") and, where the rest stays
// on the host, the advice ("host").
func (m Managed) Keys(fp Footprint) [][2]string {
	keys := [][2]string{{"resident", fmt.Sprintf("%d/%d", fp.Window, fp.Pages)}}
	if m.AdviseHost {
		keys = append(keys, [2]string{"advise", "host"})
	}
	return keys
}

// keysOfRecord reads the resident pages ("40/76") and the advice ("host",
// where the record ends in adviseHostText) from the record (RecordedKeys).
func (Managed) keysOfRecord(recorded string) [][2]string {
	resident, _, _ := strings.Cut(recorded, " ")
	keys := [][2]string{{"resident", resident}}
	if strings.Contains(recorded, adviseHostText) {
		keys = append(keys, [2]string{"advise", "host"})
	}
	return keys
}

// Paging reports false: the driver migrates pages, no cache pages blocks.
func (Managed) Paging() (cache.Config, bool) { return cache.Config{}, false }

// PageBytes is the page size.
func (m Managed) PageBytes() int64 { return m.PageSize }

func (m Managed) bind(sc *Schedule) (bound, error) {
	sd, err := sc.sides(nil)
	if err != nil {
		return nil, err
	}
	return &managedPlan{sc: sc, pl: m, sd: sd}, nil
}

// managedPlan is a managed placement bound to a schedule.
type managedPlan struct {
	sc *Schedule
	pl Managed
	sd sides // every value on the device
}

func (mp *managedPlan) sides() sides { return mp.sd }

func (mp *managedPlan) timeline(int) ([]StepMemory, error) { return nil, ErrNoTimeline }

// managedRun is a managed placement's hooks: before each step and update
// the pages it touches migrate; nothing is staged or paged out.
type managedRun struct {
	stays
	mp *managedPages
}

func (r managedRun) beforeStep(si int) (bool, error) { return false, r.mp.touchStep(si) }

func (r managedRun) update(u update, st stepper) error {
	if err := r.mp.touchUpdate(u.block); err != nil {
		return err
	}
	return st.update(u.block)
}

func (r managedRun) window() int { return r.mp.Capacity() }

// managedAlign is the alignment of every buffer in a managed region, in
// bytes: cudaMalloc's.
const managedAlign = 256

// managedLayout is where a managed placement keeps every value in its one
// region of managed memory, in bytes from the region's start: the inputs
// and the gradient seed, the arena (each temporary at its offset in it),
// then each block's area (parameters, Adam's moments, saved values), one
// after the other, each starting at a multiple of managedAlign bytes as cudaMalloc's buffers do
// (kernels may take another path for a less aligned buffer, and the
// managed mode must compute exactly what the cuda mode computes). Buffers
// share pages: a page holding the end of one buffer and the start of the
// next migrates once for both, as it does under the driver, so small
// buffers do not each round up to a page and the managed need is the cuda
// mode's but for that alignment.
type managedLayout struct {
	value []int64 // of each input, seed and temporary value; -1 for the others
	area  []int64 // of each block's area
	total int64   // the region's bytes
	// scratch is the place of the float32 scratch 16-bit steps convert
	// through.
	scratch int64
}

// pages returns the region's pages of pageSize bytes, the last one
// partial.
func (m managedLayout) pages(pageSize int64) int { return int((m.total + pageSize - 1) / pageSize) }

// capacity returns the pages a device with free bytes holds resident, at
// most the region's.
func (m managedLayout) capacity(pageSize, free int64) int {
	return min(int(max(free/pageSize, 0)), m.pages(pageSize))
}

// managedLayout lays out the region of a resident, single-sided
// placement (the managed mode's).
func (sc *Schedule) managedLayout() managedLayout {
	m := managedLayout{value: make([]int64, len(sc.values)), area: make([]int64, len(sc.spec.Blocks))}
	next := func(elems int) int64 { // the place of the next buffer
		off := (m.total + managedAlign - 1) / managedAlign * managedAlign
		m.total = off + 4*int64(elems)
		return off
	}
	for i, v := range sc.values {
		m.value[i] = -1
		if v.kind == kindInput || v.kind == kindSeed {
			m.value[i] = next(v.elems)
		}
	}
	arena := next(sc.arena)
	for i, v := range sc.values {
		if v.kind == kindTemporary {
			m.value[i] = arena + 4*int64(v.offset)
		}
	}
	for b, l := range sc.layouts(everyBlock) {
		m.area[b] = next(l.elems)
	}
	m.scratch = next(sc.scratchFor(func(int) bool { return true }))
	return m
}

// span returns the bytes [off, off+n) of value v in the region.
func (m managedLayout) span(sc *Schedule, ls []layout, v int) (off, n int64) {
	n = 4 * int64(sc.values[v].elems)
	if m.value[v] >= 0 {
		return m.value[v], n
	}
	return m.area[sc.values[v].block] + 4*int64(sc.offsetInArea(ls, v)), n
}

// managedPages walks a Run's page touches through the page residency
// (cache.Pages): before each step the pages of its arguments and output,
// before each update the pages of the block's parameters, gradients and
// moments. A Program's pages migrate on the device; the dry run's are
// counted.
type managedPages struct {
	*cache.Pages
	sched    *Schedule
	layout   managedLayout
	layouts  []layout
	pageSize int64
	// access records a kernel's access in place to bytes of pages
	// preferred on the host (Placement.AdviseHost).
	access func(off, n int64) error
}

// newManagedPages returns the page residency of a managed placement on a
// device that holds capacity pages, with m migrating.
func newManagedPages(sc *Schedule, pl Managed, capacity int, m cache.PageMover) (*managedPages, error) {
	pages, err := cache.NewPages(capacity, m)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	mp := &managedPages{Pages: pages, sched: sc, layout: sc.managedLayout(), layouts: sc.layouts(everyBlock), pageSize: pl.PageSize,
		access: func(int64, int64) error { return nil }}
	if pl.AdviseHost {
		pages.PreferHost(capacity)
	}
	return mp, nil
}

// touch records a kernel's touch of bytes [off, off+n).
func (mp *managedPages) touch(off, n int64) error {
	if n <= 0 {
		return nil
	}
	first, last := int(off/mp.pageSize), int((off+n-1)/mp.pageSize)
	if err := mp.Touch(first, last); err != nil {
		return err
	}
	for page := first; page <= last; page++ {
		if !mp.Remote(page) {
			continue
		}
		// The part of the touch that lies in this page.
		from, to := max(off, int64(page)*mp.pageSize), min(off+n, int64(page+1)*mp.pageSize)
		if err := mp.access(from, to-from); err != nil {
			return err
		}
	}
	return nil
}

// touchValue records a kernel's touch of value v.
func (mp *managedPages) touchValue(v int) error {
	return mp.touch(mp.layout.span(mp.sched, mp.layouts, v))
}

// touchStep records the touches of compute step si: its arguments, then
// its output.
func (mp *managedPages) touchStep(si int) error {
	s := mp.sched.steps[si]
	for _, a := range s.args {
		if err := mp.touchValue(a); err != nil {
			return err
		}
	}
	if n := mp.sched.scratchElems(si); n > 0 {
		if err := mp.touch(mp.layout.scratch, 4*int64(n)); err != nil {
			return err
		}
	}
	return mp.touchValue(s.out)
}

// touchUpdate records the touches of block b's update: each parameter's
// gradient, the parameter, its two moments, its master and its gradient
// accumulator.
func (mp *managedPages) touchUpdate(b int) error {
	sc, l := mp.sched, mp.layouts[b]
	for j, i := range l.params {
		if sc.grads[i] < 0 { // frozen: the update reads nothing of it
			continue
		}
		if err := mp.touchValue(sc.grads[i]); err != nil {
			return err
		}
		if err := mp.touchValue(sc.params[i]); err != nil {
			return err
		}
		n := 4 * int64(sc.count(sc.params[i]))
		offs := l.moments[j][:]
		if l.masters[j] >= 0 {
			offs = append(offs, l.masters[j])
		}
		if l.accums[j] >= 0 {
			offs = append(offs, l.accums[j])
		}
		for _, off := range offs {
			if err := mp.touch(mp.layout.area[b]+4*int64(off), n); err != nil {
				return err
			}
		}
	}
	return nil
}

// pageBytes returns the bytes of page page that the region holds: a whole
// page but for the last, which migrates only what was allocated.
func (mp *managedPages) pageBytes(page int) int64 {
	off := int64(page) * mp.pageSize
	return min(mp.pageSize, mp.layout.total-off)
}

// deviceMigrator migrates a Program's managed pages on its device.
type deviceMigrator struct {
	mp     *managedPages
	dev    device.ManagedMemory
	region device.Buffer
}

func (d *deviceMigrator) MigrateIn(page int) error {
	return d.dev.Migrate(d.region, int64(page)*d.mp.pageSize, d.mp.pageBytes(page), true)
}

func (d *deviceMigrator) MigrateOut(page int) error {
	return d.dev.Migrate(d.region, int64(page)*d.mp.pageSize, d.mp.pageBytes(page), false)
}

// load allocates a managed placement's one region and binds every value
// to its place in it (managedLayout), with a page residency of the pages
// the device's free memory holds.
func (mpl *managedPlan) load(prog *Program) (placed, error) {
	sc, pl := mpl.sc, mpl.pl
	dev := prog.dev.Caps().Managed
	if dev == nil {
		return nil, fmt.Errorf("engine: %s cannot allocate managed memory", prog.dev.Name())
	}
	free, total, err := prog.dev.MemInfo()
	if err != nil {
		return nil, fmt.Errorf("engine: sizing the managed residency: %w", err)
	}
	layout := sc.managedLayout()
	capacity := layout.capacity(pl.PageSize, free)
	if capacity < 1 { // not one page fits: out of memory, as any mode
		return nil, &device.OutOfMemoryError{Device: prog.dev.Name(), Requested: pl.PageSize, Free: free, Total: total}
	}
	region, err := dev.AllocManaged(int(layout.total / 4))
	if err != nil {
		return nil, fmt.Errorf("engine: allocating managed memory: %w", err)
	}
	prog.owned = append(prog.owned, region)
	view := func(off int64, elems int) device.Buffer { return prog.dev.View(region, int(off/4), elems) }
	for i, v := range sc.values {
		if layout.value[i] >= 0 {
			prog.buffers[i] = view(layout.value[i], v.elems)
		}
		if v.kind == kindSeed {
			if err := prog.dev.Upload(prog.buffers[i], []float32{1}); err != nil {
				return nil, fmt.Errorf("engine: setting the gradient seed: %w", err)
			}
		}
	}
	prog.layouts = sc.layouts(everyBlock)
	for b, l := range prog.layouts {
		prog.bind(b, view(layout.area[b], l.elems))
	}
	if n := sc.scratchFor(func(int) bool { return true }); n > 0 {
		prog.scratch16[0] = view(layout.scratch, n)
	}
	mig := &deviceMigrator{dev: dev, region: region}
	if mig.mp, err = newManagedPages(sc, pl, capacity, mig); err != nil {
		return nil, err
	}
	if pl.AdviseHost {
		mig.mp.access = func(off, n int64) error { return dev.Access(region, off, n) }
		from := int64(capacity) * pl.PageSize
		if err := dev.AdviseHost(region, from, layout.total-from); err != nil {
			return nil, fmt.Errorf("engine: advising the host for managed memory: %w", err)
		}
	}
	return managedRun{mp: mig.mp}, nil
}

// footprint is what a managed placement needs: on the device the pages
// its free memory holds, at most the whole region (Window of its Pages,
// of BlockBytes each), and in host memory the rest of the region, where
// managed memory lives until it migrates. When the free memory holds not
// one page, it needs the page it does not have (a run of it is out of
// memory, needing the page) and holds none (Window 0).
func (mpl *managedPlan) footprint(deviceFree int64) Footprint {
	pl, m := mpl.pl, mpl.sc.managedLayout()
	capacity := m.capacity(pl.PageSize, deviceFree)
	resident := min(m.total, int64(capacity)*pl.PageSize)
	f := Footprint{Window: capacity, Device: resident, Host: m.total - resident,
		BlockBytes: pl.PageSize, Pages: m.pages(pl.PageSize)}
	if capacity < 1 {
		f.Device = pl.PageSize
	}
	return f
}

// pageCounter is the managed dry run's page mover: it counts the
// migrations of the page touches a Program makes.
type pageCounter struct {
	*managedPages
	n Copies
}

func (k *pageCounter) MigrateIn(page int) error {
	k.n.UploadBytes += k.pageBytes(page)
	k.n.Count++
	return nil
}

func (k *pageCounter) MigrateOut(page int) error {
	k.n.DownloadBytes += k.pageBytes(page)
	k.n.Count++
	return nil
}

// idle is the dry runs' stepper where the hooks do all the counting: it
// runs nothing.
type idle struct{}

func (idle) execute(int, bool) error { return nil }
func (idle) update(int) error        { return nil }

// moves counts the migrations of one epoch (epoch walks it) in steady
// state (the second after Load) on a device holding capacity pages.
func (mpl *managedPlan) moves(capacity int, epoch func(runHooks, stepper) error) (Copies, error) {
	k := &pageCounter{}
	var err error
	if k.managedPages, err = newManagedPages(mpl.sc, mpl.pl, capacity, k); err != nil {
		return Copies{}, err
	}
	k.access = func(_, n int64) error { k.n.RemoteBytes += n; return nil }
	hooks := managedRun{mp: k.managedPages}
	for range 2 { // the second epoch is counted
		k.n = Copies{}
		if err := epoch(hooks, idle{}); err != nil {
			return Copies{}, err
		}
	}
	return k.n, nil
}
