package hugemem

import "testing"

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
			if mem != nil {
				checkUnmapped(t, mem)
			}
			f.Free() // a second Free does nothing
		})
	}
}

func TestAllocNegative(t *testing.T) {
	if _, err := Alloc(-1); err == nil {
		t.Fatal("Alloc(-1) succeeded")
	}
}
