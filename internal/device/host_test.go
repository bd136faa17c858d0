package device

import "testing"

// TestHostFreeAccounting pins the host's accounting of Free: Alloc then
// Free returns AllocatedBytes to where it was, a view is not counted (it
// changes nothing when made), and a second Free of the same buffer changes
// nothing, so the count never goes negative. The peak keeps the most held.
func TestHostFreeAccounting(t *testing.T) {
	h := NewHost()
	defer h.Close()
	held := func() int64 { return h.Stats().AllocatedBytes }
	keep, err := h.Alloc(7)
	if err != nil {
		t.Fatal(err)
	}
	base := held()
	if base != 28 {
		t.Fatalf("%d bytes held after Alloc(7), want 28", base)
	}
	b, err := h.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	if got := held(); got != base+400 {
		t.Errorf("%d bytes held after Alloc(100), want %d", got, base+400)
	}
	v := h.View(b, 10, 50)
	if got := held(); got != base+400 || v.Len() != 50 {
		t.Errorf("%d bytes held after a view of 50 elements (len %d), want %d: views are not counted", got, v.Len(), base+400)
	}
	h.Free(b)
	if got := held(); got != base {
		t.Errorf("%d bytes held after Free, want %d", got, base)
	}
	h.Free(b)
	if got := held(); got != base {
		t.Errorf("%d bytes held after a second Free of the same buffer, want %d", got, base)
	}
	h.Free(keep)
	if got := held(); got != 0 {
		t.Errorf("%d bytes held after freeing everything, want 0", got)
	}
	if peak := h.Stats().PeakBytes; peak != base+400 {
		t.Errorf("peak %d, want %d", peak, base+400)
	}
}

// TestSimAllocFreeRoundTrip pins the simulated device's accounting of a
// plain Alloc, View and Free sequence, with MemInfo's free memory following
// it; TestSimFreeMisuse covers the panics on a double Free and a view.
func TestSimAllocFreeRoundTrip(t *testing.T) {
	s := NewSim(1<<20, nil)
	defer s.Close()
	b, err := s.Alloc(256)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.View(b, 0, 128)
	if got := s.Stats().AllocatedBytes; got != 1024 {
		t.Errorf("%d bytes held after Alloc(256) and a view, want 1024", got)
	}
	if free, _, _ := s.MemInfo(); free != 1<<20-1024 {
		t.Errorf("free %d, want %d", free, 1<<20-1024)
	}
	s.Free(b)
	if got := s.Stats().AllocatedBytes; got != 0 {
		t.Errorf("%d bytes held after Free, want 0", got)
	}
	if free, _, _ := s.MemInfo(); free != 1<<20 {
		t.Errorf("free %d after Free, want %d", free, 1<<20)
	}
}
