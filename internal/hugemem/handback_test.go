package hugemem

import "testing"

// TestKeepHandsBackLargestFirst: an allocation that no kept mapping holds
// hands kept mappings back, the largest first, only until mapping it
// keeps the bytes mapped within the most mapped at once: as few mappings
// go as can. Step by step, in huge pages (the most mapped at once reset to
// what is mapped at the start):
//
//	mode 1: 4 pages (the most at once: 4), freed and kept;
//	mode 2: 1 page takes the kept 4, its tail of 3 handed back; then 2
//	pages are mapped (3 mapped); both freed: 1 and 2 kept;
//	mode 3: 3 pages, which neither holds: 3 mapped + 3 is over 4, so the
//	2 goes (1 + 3 = 4, the most, which is not over it) and the 1 stays.
func TestKeepHandsBackLargestFirst(t *testing.T) {
	if !offered() {
		t.Skip("huge pages are not offered: nothing is mapped")
	}
	releaseKept()
	t.Cleanup(releaseKept)
	kept.Lock()
	kept.high = kept.mapped
	kept.Unlock()
	base, _ := keptBytes()
	const page = hugePage / 4 // float32 in a huge page
	alloc := func(n int) *Floats {
		t.Helper()
		f, err := Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	alloc(4 * page).Free()
	one, two := alloc(page), alloc(2*page)
	oneMem, twoMem := one.mem, two.mem
	one.Free()
	two.Free()
	if mapped, high := keptBytes(); mapped-base != 3*hugePage || high-base != 4*hugePage {
		t.Fatalf("after mode 2: %d pages mapped, the most %d; want 3 and 4", (mapped-base)/hugePage, (high-base)/hugePage)
	}
	three := alloc(3 * page)
	defer three.Free()
	mapped, high := keptBytes()
	kept.Lock()
	left := kept.free
	kept.Unlock()
	if len(left) != 1 || &left[0][0] != &oneMem[0] || mapped-base != 4*hugePage || high-base != 4*hugePage {
		t.Errorf("after 3 pages: %d mappings kept, %d pages mapped, the most %d; want the 1-page mapping kept, 4 and 4",
			len(left), (mapped-base)/hugePage, (high-base)/hugePage)
	}
	checkUnmapped(t, twoMem)
}
