package device

import (
	"fmt"
	"time"
)

// ManagedMemory is a device that allocates managed (unified) memory: one
// address space for host and device, whose pages live in host memory
// until they migrate to the device, and back when the device needs the
// room (CUDA's cuMemAllocManaged with oversubscription). The engine's
// managed placement allocates through it and says which pages migrate.
type ManagedMemory interface {
	// AllocManaged returns a zeroed buffer of n float32 elements of
	// managed memory. It does not count against the device's free memory:
	// the pages resident on the device do.
	AllocManaged(n int) (Buffer, error)
	// Migrate moves bytes [off, off+n) of managed buffer b to the device
	// (toDevice) or back to host memory. A device whose driver migrates
	// by itself (CUDA) may do nothing; the simulated device copies and
	// counts, and fails with an *OutOfMemoryError when the device's free
	// memory cannot take the bytes.
	Migrate(b Buffer, off, n int64, toDevice bool) error
	// Access records a kernel's access to bytes [off, off+n) of managed
	// buffer b where they are, in host memory, across the bus (pages the
	// engine keeps preferred on the host). A device whose hardware does
	// it (CUDA) may do nothing; the simulated device reads the bytes and
	// counts them in Stats.RemoteBytes.
	Access(b Buffer, off, n int64) error
	// AdviseHost makes the host the preferred location of bytes [off,
	// off+n) of managed buffer b, the device an accessor: its kernels
	// then access those pages in place instead of migrating them (CUDA's
	// cuMemAdvise). The simulated device leaves it to the engine, which
	// calls Access for them.
	AdviseHost(b Buffer, off, n int64) error
	// ManagedSupport reports why the device cannot oversubscribe managed
	// memory (a GPU without concurrent managed access, as under some
	// Windows and WSL set-ups), or nil when it can.
	ManagedSupport() error
}

// AdviseHost does nothing: on the simulated device the engine's page
// residency keeps such pages on the host and reports their accesses.
func (s *Sim) AdviseHost(Buffer, int64, int64) error { return nil }

// ManagedSupport is nil: the simulated device oversubscribes its managed
// memory as the engine says.
func (s *Sim) ManagedSupport() error { return nil }

// AllocManaged returns a zeroed buffer of n elements of simulated managed
// memory: host memory, counted against the device's capacity only for the
// bytes migrated to it (Migrate).
func (s *Sim) AllocManaged(n int) (Buffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("%s: cannot allocate %d elements of managed memory", s.name, n)
	}
	b, err := newHostBuffer(n)
	if err != nil {
		return nil, fmt.Errorf("%s: managed memory: %w", s.name, err)
	}
	s.meter.mu.Lock()
	defer s.meter.mu.Unlock()
	if s.closed {
		b.free()
		return nil, fmt.Errorf("%s: device is closed", s.name)
	}
	if s.managed == nil {
		s.managed = map[*hostBuffer]int64{}
	}
	s.managed[b] = 0
	return b, nil
}

// Migrate moves bytes [off, off+n) of a managed buffer between host and
// device. On the simulated device the data stay where they are (kernels
// read host memory either way); a migration copies the bytes through a
// bounce buffer the size of the range, so that it costs what a copy of
// them costs on the host, counts them as an upload (to the device) or a
// download, and moves them into or out of the device's held memory, which
// a migration to a full device cannot exceed.
func (s *Sim) Migrate(b Buffer, off, n int64, toDevice bool) error {
	hb, resident, err := s.managedRange("migrating", b, off, n)
	if err != nil {
		return err
	}
	if !toDevice && n > resident {
		return fmt.Errorf("%s: migrating %d bytes to the host, %d resident", s.name, n, resident)
	}
	start := time.Now()
	if toDevice {
		if err := s.hold(n); err != nil {
			return err
		}
	}
	s.bounceCopy(hb, off, n)
	took := time.Since(start)
	s.meter.mu.Lock()
	if toDevice {
		s.managed[hb] += n
	} else {
		s.managed[hb] -= n
	}
	s.meter.mu.Unlock()
	if toDevice {
		s.meter.Uploaded(n, took)
	} else {
		s.release(n)
		s.meter.Downloaded(n, took)
	}
	return nil
}

// managedRange checks that bytes [off, off+n) lie in managed buffer b, for
// the error of doing (what), and returns the buffer and its bytes resident
// on the device.
func (s *Sim) managedRange(doing string, b Buffer, off, n int64) (*hostBuffer, int64, error) {
	hb, ok := b.(*hostBuffer)
	s.meter.mu.Lock()
	resident, managed := s.managed[hb]
	s.meter.mu.Unlock()
	switch {
	case !ok || !managed:
		return nil, 0, fmt.Errorf("%s: %s a buffer that is not managed memory", s.name, doing)
	case off < 0 || n < 0 || off%4 != 0 || n%4 != 0 || off+n > 4*int64(len(hb.data)):
		return nil, 0, fmt.Errorf("%s: %s bytes %d to %d of %d", s.name, doing, off, off+n, 4*len(hb.data))
	}
	return hb, resident, nil
}

// bounceCopy copies bytes [off, off+n) of hb into the bounce buffer: the
// cost of moving them across a bus, on the host.
func (s *Sim) bounceCopy(hb *hostBuffer, off, n int64) {
	data := hb.data[off/4 : (off+n)/4]
	if cap(s.bounce) < len(data) {
		s.bounce = make([]float32, len(data))
	}
	copy(s.bounce[:len(data)], data)
}

// Access reads bytes [off, off+n) of a managed buffer through the bounce
// buffer, as a kernel reading them across the bus would, and counts them
// as remote bytes; nothing is held on the device.
func (s *Sim) Access(b Buffer, off, n int64) error {
	hb, _, err := s.managedRange("accessing", b, off, n)
	if err != nil {
		return err
	}
	start := time.Now()
	s.bounceCopy(hb, off, n)
	s.meter.Accessed(n, time.Since(start))
	return nil
}
