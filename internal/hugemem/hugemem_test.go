package hugemem

import (
	"runtime"
	"testing"
	"unsafe"
)

func TestAlloc(t *testing.T) {
	const limit = Threshold / 4 // the fewest elements that are mapped
	for _, tc := range []struct {
		name string
		n    int
		big  bool // at or above Threshold: mapped where huge pages are offered
	}{
		{"empty", 0, false},
		{"one", 1, false},
		{"just below the threshold", limit - 1, false},
		{"at the threshold", limit, true},
		{"a page and an odd tail past it", limit + 1025, true},
		{"several huge pages and a tail", 5*limit + 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Alloc(tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Data) != tc.n {
				t.Fatalf("len %d, want %d", len(f.Data), tc.n)
			}
			if want := tc.big && offered(); f.Mapped() != want {
				t.Fatalf("Mapped() = %v, want %v (huge pages offered: %v)", f.Mapped(), want, offered())
			}
			if f.Mapped() {
				checkMapped(t, f) // before anything reads or writes it
			}
			for i, v := range f.Data {
				if v != 0 {
					t.Fatalf("element %d is %v, want 0", i, v)
				}
			}
			for i := range f.Data {
				f.Data[i] = float32(i) // every element writable
			}
			mem := f.mem
			f.Free()
			if f.Data != nil || f.Mapped() {
				t.Fatalf("after Free: Data of length %d, Mapped() = %v", len(f.Data), f.Mapped())
			}
			f.Free() // a second Free does nothing
			if mem != nil {
				if got := keptCount(); got != 1 {
					t.Fatalf("after Free: %d mappings kept, want 1", got)
				}
				releaseKept()
				checkUnmapped(t, mem)
			}
		})
	}
}

func TestAllocNegative(t *testing.T) {
	if _, err := Alloc(-1); err == nil {
		t.Fatal("Alloc(-1) succeeded")
	}
}

// releaseKept hands every mapping that Free kept back to the system, so
// that a test starts with none kept.
func releaseKept() {
	kept.Lock()
	defer kept.Unlock()
	for _, m := range kept.free {
		kept.mapped -= len(m)
		unmap(m)
	}
	kept.free = nil
}

// keptCount is the number of freed mappings kept.
func keptCount() int {
	kept.Lock()
	defer kept.Unlock()
	return len(kept.free)
}

// keptBytes is what is mapped and the most mapped at once so far.
func keptBytes() (mapped, high int) {
	kept.Lock()
	defer kept.Unlock()
	return kept.mapped, kept.high
}

// TestKeep follows a run's modes: each frees its buffers and the next
// allocates. A freed mapping is taken again, zeroed, by an allocation it
// can hold (the smallest that can, its tail handed back); an allocation
// none can hold hands kept mappings back first, so that the bytes mapped
// never pass the most a mode has needed at once.
func TestKeep(t *testing.T) {
	if !offered() {
		t.Skip("huge pages are not offered: nothing is mapped")
	}
	releaseKept()
	t.Cleanup(releaseKept)
	const page = hugePage / 4 // float32 in a huge page
	alloc := func(n int) *Floats {
		t.Helper()
		f, err := Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range f.Data {
			if v != 0 {
				t.Fatalf("element %d of a new buffer is %v, want 0", i, v)
			}
		}
		for i := range f.Data {
			f.Data[i] = 1
		}
		return f
	}
	start := func(f *Floats) uintptr { return uintptr(unsafe.Pointer(&f.mem[0])) }
	base, _ := keptBytes()

	// Mode 1: 4 and 2 huge pages at once.
	a, b := alloc(4*page), alloc(2*page)
	aStart, bStart := start(a), start(b)
	aMem := a.mem // its address, to check that its last page is handed back
	a.Free()
	b.Free()
	if mapped, high := keptBytes(); mapped-base != 6*hugePage || high < mapped {
		t.Fatalf("after mode 1: %d bytes mapped (high %d), want %d", mapped-base, high, 6*hugePage)
	}
	if got := KeptBytes(); got != 6*hugePage {
		t.Fatalf("after mode 1: KeptBytes() = %d, want %d", got, 6*hugePage)
	}

	// Mode 2: the same 2 pages again, then 3 pages: the 4-page mapping
	// is the smallest that holds 3, its last page handed back.
	c := alloc(2 * page)
	if start(c) != bStart {
		t.Errorf("a 2-page buffer after a 2-page one was freed: a new mapping, not the kept one")
	}
	d := alloc(3 * page)
	if start(d) != aStart {
		t.Errorf("a 3-page buffer with a 4-page mapping kept: a new mapping, not the kept one")
	}
	if len(d.mem) != 3*hugePage {
		t.Errorf("the kept mapping taken for 3 pages has %d bytes", len(d.mem))
	}
	checkUnmapped(t, aMem[3*hugePage:])
	c.Free()
	d.Free()

	// Mode 3: 5 pages, which no kept mapping holds: mapping them beside
	// the 5 kept would pass the 6 mapped in mode 1, so the kept ones go
	// first.
	e := alloc(5 * page)
	if mapped, high := keptBytes(); mapped-base != 5*hugePage || keptCount() != 0 {
		t.Errorf("after a 5-page buffer: %d bytes mapped, %d mappings kept (high %d), want 5 pages and none", mapped-base, keptCount(), high)
	}
	e.Free()
}

// TestChunks checks that the parts zeroed or faulted in on several threads
// cover the buffer exactly, start at huge pages, and are no more than the
// threads.
func TestChunks(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	for _, size := range []int{4096, hugePage, chunkMin - 4096, chunkMin, 3*chunkMin + 4096, 64*chunkMin + 12288} {
		mem := make([]byte, size)
		parts := chunks(mem)
		if len(parts) == 0 || len(parts) > max(1, procs) {
			t.Errorf("%d bytes: %d parts on %d threads", size, len(parts), procs)
			continue
		}
		at := 0
		for i, p := range parts {
			if len(p) == 0 || &p[0] != &mem[at] || at%hugePage != 0 {
				t.Fatalf("%d bytes: part %d (%d bytes) does not start at byte %d, a huge page", size, i, len(p), at)
			}
			if i > 0 && len(parts[i-1]) < chunkMin {
				t.Errorf("%d bytes: part %d has %d bytes, under %d", size, i-1, len(parts[i-1]), chunkMin)
			}
			at += len(p)
		}
		if at != size {
			t.Errorf("%d bytes: the parts cover %d", size, at)
		}
	}
}
