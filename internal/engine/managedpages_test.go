package engine

import (
	"slices"
	"testing"

	"gpuz/internal/cache"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
)

// managedTied compiles the tied model for training under bf16, so that the
// layer's weight has a float32 master and steps convert through the
// scratch.
func managedTied(t *testing.T) *Schedule {
	t.Helper()
	inputs, blocks, loss := tiedModel.build()
	sc, err := Compile(Spec{Inputs: inputs, Blocks: blocks, Output: loss, Train: true, Optimizer: hostmath.DefaultAdam(), ClipNorm: 1, Precision: levers.BF16})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// pageRecorder is a page mover that records what migrates.
type pageRecorder struct{ in, out []int }

func (r *pageRecorder) MigrateIn(page int) error  { r.in = append(r.in, page); return nil }
func (r *pageRecorder) MigrateOut(page int) error { r.out = append(r.out, page); return nil }

// TestManagedLayoutAligned: every buffer of the managed region starts at a
// multiple of 256 bytes, as cudaMalloc's do, and so does every temporary
// in the arena; the inputs, the arena, the block areas and the scratch lie
// one after the other without overlap, and the region ends where the last
// buffer does.
func TestManagedLayoutAligned(t *testing.T) {
	sc := managedTied(t)
	m := sc.managedLayout()
	var starts []int64
	for _, off := range m.value {
		if off >= 0 {
			starts = append(starts, off)
		}
	}
	starts = append(starts, m.area...)
	starts = append(starts, m.scratch)
	for _, off := range starts {
		if off%managedAlign != 0 {
			t.Errorf("a buffer at byte %d, not a multiple of %d", off, managedAlign)
		}
	}
	for b := 1; b < len(m.area); b++ {
		if m.area[b] < m.area[b-1]+4*int64(sc.layouts(everyBlock)[b-1].elems) {
			t.Errorf("area %d at %d overlaps area %d at %d", b, m.area[b], b-1, m.area[b-1])
		}
	}
	if end := m.scratch + 4*int64(sc.scratchFor(func(int) bool { return true })); m.total != end {
		t.Errorf("region of %d bytes, the scratch ends at %d", m.total, end)
	}
}

// TestManagedTouchPages: a touch migrates exactly the pages its bytes lie
// in: one that ends on a page's last byte does not reach the next page, one
// that starts on a page's first byte does not reach the one before, and one
// across several pages migrates each.
func TestManagedTouchPages(t *testing.T) {
	const page = cache.MinPageSize
	sc := managedTied(t)
	for _, tt := range []struct {
		name    string
		off, n  int64
		touched []int
	}{
		{"ends on a page's last byte", 0, page, []int{0}},
		{"starts on a page's first byte", page, 1, []int{1}},
		{"one byte over", page - 1, 2, []int{0, 1}},
		{"across three pages", page / 2, 2 * page, []int{0, 1, 2}},
		{"nothing", 3 * page, 0, nil},
	} {
		r := &pageRecorder{}
		mp, err := newManagedPages(sc, Managed{PageSize: page}, 8, r)
		if err != nil {
			t.Fatal(err)
		}
		if err := mp.touch(tt.off, tt.n); err != nil {
			t.Fatal(err)
		}
		if len(r.in) != len(tt.touched) {
			t.Errorf("%s: pages %v migrated in, want %v", tt.name, r.in, tt.touched)
			continue
		}
		for i, p := range tt.touched {
			if r.in[i] != p {
				t.Errorf("%s: pages %v migrated in, want %v", tt.name, r.in, tt.touched)
				break
			}
		}
	}
}

// TestManagedTouchesMastersAndScratch: under bf16 training a step that
// converts touches the scratch it converts through, and a block's update
// touches each trained parameter's gradient, the parameter, its two
// moments and, for a 16-bit parameter, its float32 master (the Adam step
// reads and writes them), so their pages migrate as the kernels use them.
// With the
// host preferred for every page, each touched byte is read in place and
// recorded.
func TestManagedTouchesMastersAndScratch(t *testing.T) {
	sc := managedTied(t)
	pl := Managed{PageSize: cache.MinPageSize}
	mp, err := newManagedPages(sc, pl, 1, &pageRecorder{})
	if err != nil {
		t.Fatal(err)
	}
	mp.PreferHost(0) // every page read in place: every touch is recorded
	var touched [][2]int64
	mp.access = func(off, n int64) error { touched = append(touched, [2]int64{off, off + n}); return nil }
	covered := func(off, n int64) bool {
		for _, r := range touched {
			if r[0] <= off && off+n <= r[1] {
				return true
			}
		}
		// A touch may be split at page boundaries: join what covers it.
		for at := off; at < off+n; {
			next := at
			for _, r := range touched {
				if r[0] <= at && at < r[1] {
					next = max(next, r[1])
				}
			}
			if next == at {
				return false
			}
			at = next
		}
		return true
	}
	scratch := int64(0)
	for si := range sc.steps {
		touched = nil
		if err := mp.touchStep(si); err != nil {
			t.Fatal(err)
		}
		if n := sc.scratchElems(si); n > 0 {
			scratch++
			if !covered(mp.layout.scratch, 4*int64(n)) {
				t.Errorf("step %d converts through %d scratch elements, never touched", si, n)
			}
		}
	}
	if scratch == 0 {
		t.Fatal("no step converts under bf16: nothing tested")
	}
	masters := 0
	for _, u := range sc.updates {
		touched = nil
		if err := mp.touchUpdate(u.block); err != nil {
			t.Fatal(err)
		}
		l := mp.layouts[u.block]
		for j, i := range l.params {
			if sc.grads[i] < 0 { // frozen: no update reads it
				continue
			}
			// The gradient the update reads, the parameter it writes and
			// its two moments (issue 44 item 22: the update touching the
			// parameter in place of its gradient passed every test).
			name := sc.spec.Blocks[u.block].Name
			if !covered(mp.layout.span(sc, mp.layouts, sc.grads[i])) {
				t.Errorf("block %s's update never touches the gradient of parameter %d", name, i)
			}
			if !covered(mp.layout.span(sc, mp.layouts, sc.params[i])) {
				t.Errorf("block %s's update never touches parameter %d", name, i)
			}
			n := 4 * int64(sc.count(sc.params[i]))
			for k, off := range l.moments[j] {
				if !covered(mp.layout.area[u.block]+4*int64(off), n) {
					t.Errorf("block %s's update never touches moment %d of parameter %d", name, k, i)
				}
			}
			if l.masters == nil || l.masters[j] < 0 {
				continue
			}
			masters++
			if !covered(mp.layout.area[u.block]+4*int64(l.masters[j]), n) {
				t.Errorf("block %s's update never touches the master of parameter %d", name, i)
			}
		}
	}
	if masters == 0 {
		t.Fatal("no 16-bit parameter has a master: nothing tested")
	}
}

// TestManagedFootprintSplitsTheRegion: the region's bytes are on the
// device as far as the free memory holds whole pages and in host memory
// beyond them, never both; with the host advised, the pages that fit are
// never read in place and every page beyond them is.
func TestManagedFootprintSplitsTheRegion(t *testing.T) {
	const page = cache.MinPageSize
	sc := managedTied(t)
	m := sc.managedLayout()
	pages := m.pages(page)
	bd, err := Managed{PageSize: page}.bind(sc)
	if err != nil {
		t.Fatal(err)
	}
	if m.total%page == 0 {
		t.Fatalf("the region of %d B fills its last page: no partial page to test", m.total)
	}
	for free := int64(page); free <= int64(pages+1)*page; free += page / 2 {
		fp := bd.footprint(free)
		if fp.Device+fp.Host != m.total || fp.Device > free {
			t.Errorf("%d B free: %d on the device and %d on the host, of a region of %d", free, fp.Device, fp.Host, m.total)
		}
		// Each part, not only the sum (issue 44 item 22): the whole pages
		// that fit, the last one partial, on the device; the rest, never
		// negative, on the host.
		if dev := min(free/page*page, m.total); fp.Device != dev || fp.Host != m.total-dev || fp.Host < 0 {
			t.Errorf("%d B free: %d B on the device and %d B on the host, want %d and %d", free, fp.Device, fp.Host, dev, m.total-dev)
		}
		if want := min(int(free/page), pages); fp.Window != want {
			t.Errorf("%d B free: %d pages resident, want %d", free, fp.Window, want)
		}
	}
	if fp := bd.footprint(page - 1); fp.Window != 0 || fp.Device != page {
		t.Errorf("less than a page free: %d pages, %d B needed; want none, a page", fp.Window, fp.Device)
	}
	// Every page fits, with room to spare: the whole region on the device
	// and nothing on the host, though the last page is partial.
	if fp := bd.footprint(int64(pages+4) * page); fp.Window != pages || fp.Device != m.total || fp.Host != 0 {
		t.Errorf("every page fits: %d pages, %d B on the device, %d B on the host; want %d, %d, 0", fp.Window, fp.Device, fp.Host, pages, m.total)
	}
	for capacity := 1; capacity <= pages; capacity++ {
		mp, err := newManagedPages(sc, Managed{PageSize: page, AdviseHost: true}, capacity, &pageRecorder{})
		if err != nil {
			t.Fatal(err)
		}
		for p := range pages {
			if mp.Remote(p) != (p >= capacity) {
				t.Errorf("advise host, %d pages fit: page %d read in place %v", capacity, p, mp.Remote(p))
			}
		}
	}
}

// TestManagedRemoteBytesAreTheTouch: with the host advised, a touch
// counts in place exactly its bytes that lie in the pages beyond the
// resident ones, page by page, not whole pages (issue 44 item 26: the
// remote bytes counted per host page passed every test, the dry run and
// the device counting through the same touch).
func TestManagedRemoteBytesAreTheTouch(t *testing.T) {
	const page = 1 << 10 // below a real page's size, for pages enough in a small region
	sc := managedTied(t)
	if pages := sc.managedLayout().pages(page); pages < 3 {
		t.Fatalf("the region holds %d pages: nothing tested", pages)
	}
	for _, tc := range []struct {
		name   string
		off, n int64
		want   [][2]int64 // each access in place: offset, length
	}{
		{"within the resident page", 10, 100, nil},
		{"within a host page", page + 10, 100, [][2]int64{{page + 10, 100}}},
		{"across the resident page and a host page", page / 2, page, [][2]int64{{page, page / 2}}},
		{"across two host pages", page + page/2, page, [][2]int64{{page + page/2, page / 2}, {2 * page, page / 2}}},
		{"a host page's last byte", 2*page - 1, 1, [][2]int64{{2*page - 1, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mp, err := newManagedPages(sc, Managed{PageSize: page, AdviseHost: true}, 1, &pageRecorder{})
			if err != nil {
				t.Fatal(err)
			}
			var got [][2]int64
			mp.access = func(off, n int64) error { got = append(got, [2]int64{off, n}); return nil }
			if err := mp.touch(tc.off, tc.n); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("touch of %d bytes at %d: accessed in place %v, want %v", tc.n, tc.off, got, tc.want)
			}
		})
	}
}
