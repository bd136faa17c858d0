package device

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Sim must satisfy the Device interface.
var _ Device = (*Sim)(nil)

func TestSimName(t *testing.T) {
	for _, tt := range []struct {
		capacity int64
		want     string
	}{
		{DefaultSimCapacity, "sim:8GiB"},
		{512 << 20, "sim:512MiB"},
		{4_000_000_000, "sim:4GB"},
		{1000, "sim:1KB"},
		{1001, "sim:1001B"},
	} {
		if got := NewSim(tt.capacity, nil).Name(); got != tt.want {
			t.Errorf("NewSim(%d).Name() = %q, want %q", tt.capacity, got, tt.want)
		}
	}
}

// TestSimAccounting allocates and frees at random, with and without a
// ledger: what the device holds is always the sum of its live buffers,
// never more than its capacity, and an allocation fails exactly when it
// does not fit.
func TestSimAccounting(t *testing.T) {
	for _, withLedger := range []bool{false, true} {
		var ledger *Ledger
		if withLedger {
			ledger = OpenLedger(filepath.Join(t.TempDir(), "ledger"))
		}
		const capacity = 1 << 16
		sim := NewSim(capacity, ledger)
		rng := rand.New(rand.NewPCG(1, 2))
		var live []Buffer
		var held, peak int64
		ooms := 0
		for step := range 2000 {
			if len(live) > 0 && rng.IntN(3) == 0 {
				i := rng.IntN(len(live))
				held -= 4 * int64(live[i].Len())
				sim.Free(live[i])
				live = slices.Delete(live, i, i+1)
			} else {
				n := rng.IntN(capacity / 4 / 3)
				b, err := sim.Alloc(n)
				if fits := held+4*int64(n) <= capacity; fits != (err == nil) {
					t.Fatalf("ledger %v, step %d: Alloc(%d) with %d held: %v", withLedger, step, n, held, err)
				}
				if err != nil {
					ooms++
				} else {
					live = append(live, b)
					held += 4 * int64(n)
					peak = max(peak, held)
				}
			}
			st := sim.Stats()
			if st.AllocatedBytes != held || st.PeakBytes != peak || st.TotalBytes != capacity || held > capacity {
				t.Fatalf("ledger %v, step %d: stats %+v, want %d held, peak %d, of %d", withLedger, step, st, held, peak, capacity)
			}
		}
		if ooms == 0 {
			t.Errorf("ledger %v: no allocation ran out of memory; the test does not reach the capacity", withLedger)
		}
		free, total, err := sim.MemInfo()
		if err != nil || free != capacity-held || total != capacity {
			t.Errorf("ledger %v: MemInfo = %d, %d, %v; want %d, %d", withLedger, free, total, err, capacity-held, capacity)
		}
		if withLedger {
			entries, err := ledger.Entries()
			want := 0
			if held > 0 {
				want = 1
			}
			if err != nil || len(entries) != want || (want == 1 && entries[0].Bytes != held) {
				t.Errorf("ledger entries %+v, %v; want one entry of %d bytes", entries, err, held)
			}
		}
		for _, b := range live {
			sim.Free(b)
		}
		if st := sim.Stats(); st.AllocatedBytes != 0 {
			t.Errorf("ledger %v: %d bytes held after freeing everything", withLedger, st.AllocatedBytes)
		}
		sim.ResetPeak()
		if st := sim.Stats(); st.PeakBytes != 0 {
			t.Errorf("ledger %v: peak %d after ResetPeak with nothing held", withLedger, st.PeakBytes)
		}
		if withLedger {
			if entries, err := ledger.Entries(); err != nil || len(entries) != 0 {
				t.Errorf("ledger entries after freeing everything: %+v, %v", entries, err)
			}
		}
	}
}

func TestSimOutOfMemory(t *testing.T) {
	sim := NewSim(1000, nil)
	if _, err := sim.Alloc(200); err != nil {
		t.Fatal(err)
	}
	_, err := sim.Alloc(51)
	var oom *OutOfMemoryError
	if !errors.As(err, &oom) {
		t.Fatalf("Alloc(51) with 200 of 1000 bytes free: %v, want an *OutOfMemoryError", err)
	}
	want := OutOfMemoryError{Device: "sim:1KB", Requested: 204, Free: 200, Total: 1000}
	if !reflect.DeepEqual(*oom, want) {
		t.Errorf("error %+v, want %+v", *oom, want)
	}
	if _, err := sim.Alloc(50); err != nil {
		t.Errorf("Alloc(50) filling the device exactly: %v", err)
	}
	if _, err := sim.Reserve(1); !errors.As(err, &oom) || oom.Free != 0 {
		t.Errorf("Reserve(1) on a full device: %v, want an *OutOfMemoryError with 0 free", err)
	}
	if _, err := sim.Alloc(-1); err == nil || errors.As(err, &oom) {
		t.Errorf("Alloc(-1): %v, want a plain error", err)
	}
	if st := sim.Stats(); st.AllocatedBytes != 1000 {
		t.Errorf("held %d after the failed calls, want 1000", st.AllocatedBytes)
	}
}

// TestSimCopies checks that copies really move the data and that the
// counters grow by exactly the bytes copied.
func TestSimCopies(t *testing.T) {
	sim := NewSim(1<<20, nil)
	b, err := sim.Alloc(6)
	if err != nil {
		t.Fatal(err)
	}
	src := []float32{1, 2, 3, 4, 5, 6}
	if err := sim.Upload(b, src); err != nil {
		t.Fatal(err)
	}
	src[0] = 99 // the device holds its own copy
	if err := sim.Upload(sim.View(b, 2, 3), []float32{7, 8, 9}); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 6)
	if err := sim.Download(got, b); err != nil {
		t.Fatal(err)
	}
	if want := []float32{1, 2, 7, 8, 9, 6}; !slices.Equal(got, want) {
		t.Errorf("downloaded %v, want %v", got, want)
	}
	got[1] = 99 // the host copy is separate
	if Floats(b)[1] != 2 {
		t.Errorf("writing the downloaded slice changed the device buffer")
	}
	if err := sim.Upload(b, make([]float32, 5)); err == nil {
		t.Error("upload of 5 elements into 6: no error")
	}
	if err := sim.Download(make([]float32, 7), b); err == nil {
		t.Error("download of 6 elements into 7: no error")
	}
	st := sim.Stats()
	if st.UploadBytes != 4*(6+3) || st.DownloadBytes != 4*6 {
		t.Errorf("counted %d bytes up, %d down; want %d, %d", st.UploadBytes, st.DownloadBytes, 4*9, 4*6)
	}
}

// TestSimFreeMisuse checks that nil is ignored and that a double free, a
// view or another device's buffer panics without changing the accounting.
func TestSimFreeMisuse(t *testing.T) {
	sim := NewSim(1<<20, nil)
	b, err := sim.Alloc(10)
	if err != nil {
		t.Fatal(err)
	}
	sim.Free(nil)
	hostBuf, _ := NewHost().Alloc(10)
	for _, tt := range []struct {
		name string
		buf  Buffer
	}{
		{"view", sim.View(b, 0, 10)},
		{"host buffer", hostBuf},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Free of a %s did not panic", tt.name)
				}
			}()
			sim.Free(tt.buf)
		}()
		if st := sim.Stats(); st.AllocatedBytes != 40 {
			t.Errorf("after Free of a %s: %d bytes held, want 40", tt.name, st.AllocatedBytes)
		}
	}
	sim.Free(b)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("double Free did not panic")
			}
		}()
		sim.Free(b)
	}()
	if st := sim.Stats(); st.AllocatedBytes != 0 {
		t.Errorf("after a double free: %d bytes held, want 0", st.AllocatedBytes)
	}
}

// simOnLedger returns a simulated device of capacity bytes on a ledger of
// its own in the test's temporary folder, and the ledger.
func simOnLedger(t *testing.T, capacity int64) (*Sim, *Ledger) {
	t.Helper()
	ledger := OpenLedger(filepath.Join(t.TempDir(), "ledger"))
	return NewSim(capacity, ledger), ledger
}

func TestSimReserve(t *testing.T) {
	sim, ledger := simOnLedger(t, 1000)
	release, err := sim.Reserve(600)
	if err != nil {
		t.Fatal(err)
	}
	if free, _, err := sim.MemInfo(); err != nil || free != 400 {
		t.Errorf("MemInfo after reserving 600 of 1000: %d free, %v", free, err)
	}
	// Another holder on the same ledger sees the reservation.
	if others, err := ledger.Others(); err != nil || others != 600 {
		t.Errorf("another holder sees %d bytes taken, %v; want 600", others, err)
	}
	if _, err := sim.Alloc(101); err == nil {
		t.Error("Alloc of 404 bytes with 400 free succeeded")
	}
	release()
	release() // a second call does nothing
	if st := sim.Stats(); st.AllocatedBytes != 0 || st.PeakBytes != 600 {
		t.Errorf("after release: stats %+v, want 0 held, peak 600", st)
	}
	if others, err := ledger.Others(); err != nil || others != 0 {
		t.Errorf("after release another holder sees %d bytes, %v", others, err)
	}
}

// TestSimLabelsEntries reserves on simulated devices made on ledgers of
// several labels: each entry carries its ledger's label, a long one cut to
// maxSimLabel bytes, and none comes from the process's own arguments.
func TestSimLabelsEntries(t *testing.T) {
	long := strings.Repeat("x", 200)
	for _, tt := range []struct {
		name, label, want string
	}{
		{"none", "", ""},
		{"command line", "gpuz take-mem 2 --device sim:1GiB", "gpuz take-mem 2 --device sim:1GiB"},
		{"long", long, long[:maxSimLabel-3] + "..."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger")
			sim := NewSim(1000, OpenLedgerWith(path, LedgerOptions{Label: tt.label}))
			release, err := sim.Reserve(10)
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			entries, err := OpenLedger(path).Entries()
			if err != nil || len(entries) != 1 || entries[0].Label != tt.want {
				t.Errorf("entries %+v, %v; want one labelled %q", entries, err, tt.want)
			}
		})
	}
}

// TestSimKernels runs a kernel on sim buffers: they are host memory.
func TestSimKernels(t *testing.T) {
	sim := NewSim(1<<20, nil)
	a, _ := sim.Alloc(3)
	b, _ := sim.Alloc(3)
	c, _ := sim.Alloc(3)
	if err := errors.Join(sim.Upload(a, []float32{1, 2, 3}), sim.Upload(b, []float32{10, 20, 30})); err != nil {
		t.Fatal(err)
	}
	sim.Kernels().Add(c, a, b)
	if got, want := Floats(c), []float32{11, 22, 33}; !slices.Equal(got, want) {
		t.Errorf("Add = %v, want %v", got, want)
	}
}

// BenchmarkSimAlloc measures an Alloc and Free pair, with the two ledger
// transactions (lock, read, liveness checks, atomic write) they cost.
func BenchmarkSimAlloc(b *testing.B) {
	for _, withLedger := range []bool{false, true} {
		name := "no-ledger"
		var ledger *Ledger
		if withLedger {
			name = "ledger"
			ledger = OpenLedger(filepath.Join(b.TempDir(), "ledger"))
		}
		b.Run(name, func(b *testing.B) {
			sim := NewSim(1<<30, ledger)
			for b.Loop() {
				buf, err := sim.Alloc(16)
				if err != nil {
					b.Fatal(err)
				}
				sim.Free(buf)
			}
		})
	}
}

// TestSimClose closes a device holding a buffer and a reservation: the
// ledger forgets it, later Frees and releases do nothing, Alloc fails, and a
// second Close does nothing.
func TestSimClose(t *testing.T) {
	sim, ledger := simOnLedger(t, 1000)
	b, err := sim.Alloc(50)
	if err != nil {
		t.Fatal(err)
	}
	release, err := sim.Reserve(300)
	if err != nil {
		t.Fatal(err)
	}
	if others, _ := ledger.Others(); others != 500 {
		t.Fatalf("another holder sees %d bytes, want 500", others)
	}
	if err := sim.Close(); err != nil {
		t.Fatal(err)
	}
	if others, err := ledger.Others(); err != nil || others != 0 {
		t.Errorf("after Close another holder sees %d bytes, %v; want 0", others, err)
	}
	sim.Free(b)
	release()
	if st := sim.Stats(); st.AllocatedBytes != 0 {
		t.Errorf("after Close, Free and release: %d bytes held, want 0", st.AllocatedBytes)
	}
	if _, err := sim.Alloc(1); err == nil {
		t.Error("Alloc on a closed device succeeded")
	}
	if err := sim.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestSimReserveAhead has two devices on one ledger of 1000 bytes each
// reserve 600 ahead: the first gets it, the second fails at once as out of
// memory quoting the 400 free. The first device's allocations draw on its
// reservation (the ledger stays at 600) until they pass it; once the first
// device closes, the second's reservation succeeds.
func TestSimReserveAhead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	a, b := NewSim(1000, OpenLedger(path)), NewSim(1000, OpenLedger(path))
	observer := OpenLedger(path)
	others := func() int64 {
		t.Helper()
		n, err := observer.Others()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	release, err := a.ReserveAhead(600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ReserveAhead(600); !isOOM(err, 400) {
		t.Errorf("second reservation of 600 with 400 free: %v, want out of memory with 400 free", err)
	}
	if free, _, err := a.MemInfo(); err != nil || free != 1000 {
		t.Errorf("the reserving device sees %d free, %v; want 1000 (its reservation is its own)", free, err)
	}
	buf, err := a.Alloc(100) // 400 bytes, drawn on the reservation
	if err != nil {
		t.Fatal(err)
	}
	if n := others(); n != 600 {
		t.Errorf("after a 400-byte allocation within the reservation the ledger holds %d, want 600", n)
	}
	if _, err := a.Alloc(100); err != nil { // 800 in all: 200 past the reservation
		t.Fatal(err)
	}
	if n := others(); n != 800 {
		t.Errorf("after allocating 800 of a 600 reservation the ledger holds %d, want 800", n)
	}
	a.Free(buf)
	if n := others(); n != 600 {
		t.Errorf("after freeing back to 400 the ledger holds %d, want the reservation's 600", n)
	}
	release()
	release() // a second call does nothing
	if n := others(); n != 400 {
		t.Errorf("after the release the ledger holds %d, want the 400 allocated", n)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ReserveAhead(600); err != nil {
		t.Errorf("reservation after the first device closed: %v", err)
	}
}

// isOOM reports whether err is an *OutOfMemoryError quoting free bytes free.
func isOOM(err error, free int64) bool {
	var oom *OutOfMemoryError
	return errors.As(err, &oom) && oom.Free == free
}

// TestSimReserveAheadWithMemoryHeld reserves ahead on a device of 1000
// bytes that already holds 300, beside another holder of 200: what the
// device holds counts toward the reservation, so 800 fits exactly and 801
// does not (500 free); a reservation below what is held leaves the ledger
// at the held bytes. After a release the device reserves again, and its
// allocations are charged to the ledger again, not drawn on the released
// reservation: one that no longer fits fails.
func TestSimReserveAheadWithMemoryHeld(t *testing.T) {
	for _, tt := range []struct {
		reserve int64
		oom     bool  // out of memory, quoting 500 free
		ledger  int64 // this device's entry while reserved
	}{
		{600, false, 600},
		{800, false, 800},
		{801, true, 300},
		{100, false, 300},
	} {
		path := filepath.Join(t.TempDir(), "ledger")
		sim, other, observer := NewSim(1000, OpenLedger(path)), OpenLedger(path), OpenLedger(path)
		entry := func() int64 {
			t.Helper()
			n, err := observer.Others()
			if err != nil {
				t.Fatal(err)
			}
			return n - 200 // the other holder's
		}
		if err := other.Set(200, "other"); err != nil {
			t.Fatal(err)
		}
		if _, err := sim.Alloc(75); err != nil { // 300 bytes
			t.Fatal(err)
		}
		release, err := sim.ReserveAhead(tt.reserve)
		if tt.oom != (err != nil) || (tt.oom && !isOOM(err, 500)) {
			t.Fatalf("reserve %d with 300 held and 200 taken: %v, want out of memory %v (500 free)", tt.reserve, err, tt.oom)
		}
		if n := entry(); n != tt.ledger {
			t.Errorf("reserve %d: the ledger holds %d for the device, want %d", tt.reserve, n, tt.ledger)
		}
		if tt.oom {
			continue
		}
		if free, _, err := sim.MemInfo(); err != nil || free != 500 {
			t.Errorf("reserve %d: MemInfo %d free, %v; want 500 (the undrawn reservation is the device's own)", tt.reserve, free, err)
		}
		release()
		if n := entry(); n != 300 {
			t.Errorf("reserve %d: after the release the ledger holds %d for the device, want the 300 held", tt.reserve, n)
		}
		// Reserving again after a release works.
		again, err := sim.ReserveAhead(tt.reserve)
		if err != nil {
			t.Errorf("reserve %d again after the release: %v", tt.reserve, err)
		} else {
			again()
		}
		// Allocating after the release charges the ledger.
		if _, err := sim.Alloc(25); err != nil { // 100 bytes: 400 held
			t.Fatal(err)
		}
		if n := entry(); n != 400 {
			t.Errorf("reserve %d: an allocation after the release leaves the ledger at %d for the device, want 400", tt.reserve, n)
		}
		if err := other.Set(500, "other"); err != nil { // 100 free now
			t.Fatal(err)
		}
		if _, err := sim.Alloc(50); !isOOM(err, 100) { // 200 bytes
			t.Errorf("reserve %d: allocating 200 with 100 free after the release: %v, want out of memory", tt.reserve, err)
		}
		other.Set(200, "other")
		sim.Close()
	}
}
