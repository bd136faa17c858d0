package device

import (
	"fmt"
	"sync"

	"gpuz/internal/perfmodel"
	"gpuz/internal/units"
)

// DefaultSimCapacity is the simulated device's default capacity: 8 GiB, the
// memory of the reference GPU.
const DefaultSimCapacity int64 = 8 << 30

// Sim is a simulated GPU: buffers in host memory and the host kernels, but a
// fixed capacity, every copy between host and device really performed (into
// the buffer's own memory) and counted, and its holdings recorded in a
// cross-process Ledger so that memory taken by another process (gpuz
// take-mem in another shell) is not free here. Its times are host times,
// never GPU times.
//
// Free memory is the capacity less this device's buffers and reservations,
// less what every other holder in the ledger records. A reservation ahead
// (ReserveAhead) counts as held for every other holder but as free for
// this device's own allocations, which draw on it. The ledger is updated
// on every Alloc, Free and Reserve, which programs do rarely (a program
// allocates its memory once, when it is loaded).
type Sim struct {
	hostMemory
	capacity int64
	ledger   *Ledger // this device's entry; nil: no other process counts
	// recorded is set once the device has written an entry to the ledger,
	// which Close must then remove; guarded by meter.mu.
	recorded bool
	label    string
	live     map[*hostBuffer]struct{} // buffers allocated and not yet freed
	closed   bool                     // Close was called; guarded by meter.mu
	// ahead is the bytes ReserveAhead holds for this device's own
	// allocations; guarded by meter.mu. The ledger records the larger of
	// it and what the device holds, so allocations within it draw on it
	// instead of adding to the ledger.
	ahead int64
	// managed maps each managed buffer (AllocManaged) to its bytes
	// resident on the device; guarded by meter.mu. bounce is Migrate's
	// copy target.
	managed map[*hostBuffer]int64
	bounce  []float32
	// profile is the GPU profile the device stands for (sim:PROFILE);
	// nil when made from a size.
	profile *perfmodel.Profile
}

// NewSim returns a simulated device of capacity bytes that records its
// holdings under its own entry in ledger's file, labelled with the
// ledger's LedgerOptions.Label (shortened to maxSimLabel bytes); a nil
// ledger makes a device that no other process can see or take memory
// from.
func NewSim(capacity int64, ledger *Ledger) *Sim {
	s := &Sim{
		hostMemory: hostMemory{name: "sim:" + units.ExactBytes(capacity)},
		capacity:   capacity,
		live:       map[*hostBuffer]struct{}{},
	}
	s.meter.SetTotal(capacity)
	if ledger != nil {
		s.ledger = ledger.newHolder()
		s.label = shortLabel(ledger.opts.Label)
	}
	return s
}

// maxSimLabel is the longest label a simulated device's ledger entry
// keeps.
const maxSimLabel = 120

// shortLabel returns label cut to maxSimLabel bytes, its end replaced by
// "..." where it was cut.
func shortLabel(label string) string {
	if len(label) > maxSimLabel {
		return label[:maxSimLabel-3] + "..."
	}
	return label
}

// Name is "sim:" and the capacity, as in "sim:8GiB", or "sim:" and the
// profile's name when made from a profile ("sim:h100-sxm").
func (s *Sim) Name() string { return s.name }

// Capacity is the device's size in bytes.
func (s *Sim) Capacity() int64 { return s.capacity }

// Alloc returns a zeroed buffer of n elements, or an *OutOfMemoryError when
// 4n bytes exceed the free memory.
func (s *Sim) Alloc(n int) (Buffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("%s: cannot allocate %d elements", s.name, n)
	}
	if err := s.hold(4 * int64(n)); err != nil {
		return nil, err
	}
	b, err := newHostBuffer(n)
	if err != nil {
		s.release(4 * int64(n))
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	s.meter.mu.Lock()
	s.live[b] = struct{}{}
	s.meter.mu.Unlock()
	return b, nil
}

// Reserve takes bytes of the device's memory without allocating host memory
// for them: the accounting and the ledger count them as held until release
// is called (once; later calls do nothing). It fails with an
// *OutOfMemoryError as Alloc does. gpuz take-mem uses it to hold memory on
// a simulated device without consuming the host's.
func (s *Sim) Reserve(bytes int64) (release func(), err error) {
	if bytes < 0 {
		return nil, fmt.Errorf("%s: cannot reserve %d bytes", s.name, bytes)
	}
	if err := s.hold(bytes); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { s.release(bytes) }) }, nil
}

// ReserveAhead reserves bytes of the device for its own later allocations,
// in one ledger transaction, so that a program that will allocate them
// piece by piece either gets all of them or fails at once, instead of
// holding part of the memory while another process holds the rest. Until
// release is called (once; later calls do nothing) the ledger records at
// least bytes for this device, allocations within them draw on them instead
// of adding to the ledger, and MemInfo counts what is not yet drawn as
// free for this device. It fails with an *OutOfMemoryError, quoting the
// free memory at that moment, when bytes exceed it, and when a reservation
// ahead is already held.
func (s *Sim) ReserveAhead(bytes int64) (release func(), err error) {
	if bytes < 0 {
		return nil, fmt.Errorf("%s: cannot reserve %d bytes", s.name, bytes)
	}
	s.meter.mu.Lock()
	defer s.meter.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("%s: device is closed", s.name)
	}
	if s.ahead > 0 {
		return nil, fmt.Errorf("%s: a reservation ahead is already held", s.name)
	}
	held := s.meter.stats.AllocatedBytes
	fits := func(others int64) (int64, error) {
		if free := s.capacity - held - others; bytes-held > free {
			return 0, &OutOfMemoryError{Device: s.name, Requested: bytes, Free: max(free, 0), Total: s.capacity}
		}
		return max(held, bytes), nil
	}
	if err := s.record(fits); err != nil {
		return nil, err
	}
	s.ahead = bytes
	var once sync.Once
	return func() { once.Do(s.releaseAhead) }, nil
}

// releaseAhead ends the reservation ahead: the ledger records what the
// device holds.
func (s *Sim) releaseAhead() {
	s.meter.mu.Lock()
	defer s.meter.mu.Unlock()
	if s.closed {
		return // Close released everything already
	}
	s.ahead = 0
	if s.ledger != nil {
		_ = s.ledger.Set(s.meter.stats.AllocatedBytes, s.label)
	}
}

// record writes this device's new ledger total, which decide returns from
// the others' total or refuses with an error; without a ledger it only
// asks decide. The caller holds meter.mu.
func (s *Sim) record(decide func(others int64) (int64, error)) error {
	if s.ledger == nil {
		_, err := decide(0)
		return err
	}
	if err := s.ledger.update(decide, s.label); err != nil {
		if _, ok := err.(*OutOfMemoryError); ok {
			return err
		}
		return fmt.Errorf("%s: %w", s.name, err)
	}
	s.recorded = true
	return nil
}

// hold adds bytes to what the device holds, in the ledger first unless
// they fit within the reservation ahead, failing when they exceed the free
// memory.
func (s *Sim) hold(bytes int64) error {
	s.meter.mu.Lock()
	defer s.meter.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%s: device is closed", s.name)
	}
	held := s.meter.stats.AllocatedBytes
	if held+bytes <= s.ahead {
		s.meter.hold(bytes) // drawn on the reservation: the ledger is unchanged
		return nil
	}
	fits := func(others int64) (int64, error) {
		if free := s.capacity - held - others; bytes > free {
			return 0, &OutOfMemoryError{Device: s.name, Requested: bytes, Free: max(free, 0), Total: s.capacity}
		}
		return held + bytes, nil
	}
	if err := s.record(fits); err != nil {
		return err
	}
	s.meter.hold(bytes)
	return nil
}

// release removes bytes from what the device holds. A failure to update
// the ledger leaves this process's entry too high until the next Alloc or
// Reserve writes the right total, or until the process exits: Free cannot
// report an error.
func (s *Sim) release(bytes int64) {
	s.meter.mu.Lock()
	defer s.meter.mu.Unlock()
	if s.closed {
		return // Close released everything already
	}
	before := s.meter.stats.AllocatedBytes
	s.meter.stats.AllocatedBytes -= bytes
	if s.ledger != nil && before > s.ahead {
		// Within the reservation ahead the ledger's total is unchanged.
		_ = s.ledger.Set(max(s.meter.stats.AllocatedBytes, s.ahead), s.label)
	}
}

// Free releases a buffer that Alloc returned; a nil buffer is ignored, and
// so is any buffer once the device is closed (Close freed them all).
// Freeing a buffer twice, a view, or another device's buffer is a
// programming error and panics, leaving the accounting as it was.
func (s *Sim) Free(b Buffer) {
	if b == nil {
		return
	}
	hb, ok := b.(*hostBuffer)
	s.meter.mu.Lock()
	if s.closed {
		s.meter.mu.Unlock()
		return
	}
	_, live := s.live[hb]
	delete(s.live, hb)
	resident, managed := s.managed[hb]
	delete(s.managed, hb)
	s.meter.mu.Unlock()
	if managed {
		s.release(resident) // its pages resident on the device
		hb.free()
		return
	}
	if !ok || !live {
		panic(fmt.Sprintf("%s: Free of a buffer it does not hold (freed twice, a view, or another device's)", s.name))
	}
	s.release(4 * int64(len(hb.data)))
	hb.free()
}

// MemInfo reports the bytes free for a new allocation — the capacity less
// what this device and every other holder in the ledger hold — and the
// capacity.
func (s *Sim) MemInfo() (free, total int64, err error) {
	var others int64
	if s.ledger != nil {
		if others, err = s.ledger.Others(); err != nil {
			return 0, 0, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	held := s.Stats().AllocatedBytes
	return max(s.capacity-held-others, 0), s.capacity, nil
}

// Close frees every buffer and reservation (ahead included) the device still holds and
// removes its entry from the ledger, so that the memory is free for the
// next device at once rather than when this process exits; a device that
// never wrote an entry does not touch the ledger. Later Allocs
// and Reserves fail; later Frees and releases do nothing; a second Close
// does nothing.
func (s *Sim) Close() error {
	s.meter.mu.Lock()
	defer s.meter.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for b := range s.live {
		b.free()
	}
	for b := range s.managed {
		b.free()
	}
	s.live, s.managed = nil, nil
	s.meter.stats.AllocatedBytes = 0
	s.ahead = 0
	if s.ledger != nil && s.recorded {
		if err := s.ledger.Set(0, s.label); err != nil {
			return fmt.Errorf("%s: closing: %w", s.name, err)
		}
	}
	return nil
}
