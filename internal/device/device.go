// Package device defines where gpuz keeps a model's memory and runs its
// kernels: the Device interface, with the host (cpu) implementation here and
// the simulated and CUDA devices beside it.
//
// A Device owns its memory: buffers of float32 elements allocated and freed
// through it, filled and read back through counted copies. Out of memory is
// an *OutOfMemoryError carrying the requested, free and total bytes.
package device

import (
	"fmt"
	"os"
	"strings"
	"time"

	"gpuz/internal/units"
)

// Buffer is a block of float32 elements in a device's memory. Only the device
// that allocated a buffer can use it.
type Buffer interface {
	// Len is the number of float32 elements.
	Len() int
}

// Device allocates memory, copies data to and from it and runs kernels on it.
type Device interface {
	// Name identifies the device in tables: "host", "sim:8GiB", "cuda:0".
	Name() string
	// Alloc returns a zeroed buffer of n float32 elements, or an
	// *OutOfMemoryError.
	Alloc(n int) (Buffer, error)
	// Free releases a buffer; using it, or a view of it, afterwards is an
	// error.
	Free(Buffer)
	// View returns a buffer of n elements of b starting at element offset,
	// sharing b's memory; it is not freed on its own.
	View(b Buffer, offset, n int) Buffer
	// Upload copies src from host memory into dst.
	Upload(dst Buffer, src []float32) error
	// Download copies src into dst in host memory.
	Download(dst []float32, src Buffer) error
	// Stats reports the device's memory use and copies so far.
	Stats() Stats
	// MemInfo reports the bytes free for a new allocation and the device's
	// capacity. On a simulated device, free memory accounts for what other
	// processes reserve on it.
	MemInfo() (free, total int64, err error)
	// Kernels runs the math on the device's buffers.
	Kernels() Kernels
	// Caps says what the device can do beyond these methods (Caps): the
	// one place a caller learns it.
	Caps() Caps
	// ResetPeak starts a new peak: Stats' PeakBytes becomes what is held
	// now.
	ResetPeak()
	// Close releases everything the device holds: its buffers, its
	// reservations, its ledger entry, its context. Whoever opened a device
	// closes it when done (a mode, a plan, a probe); using the device or
	// its buffers afterwards is an error. Closing twice does nothing.
	Close() error
}

// Stats is a device's accounting of memory and copies.
type Stats struct {
	AllocatedBytes int64 // held now
	PeakBytes      int64 // most held at once since the last ResetPeak
	TotalBytes     int64 // capacity; 0 when bounded only by the host
	UploadBytes    int64 // host → device, since the device was made
	DownloadBytes  int64 // device → host, since the device was made
	// RemoteBytes is what kernels read and wrote of managed memory in
	// place across the bus, neither uploaded nor migrated (Access).
	RemoteBytes int64
	// CopyTime is the time spent in those copies.
	CopyTime time.Duration
}

// OutOfMemoryError reports an allocation that did not fit.
type OutOfMemoryError struct {
	Device    string
	Requested int64 // bytes asked for
	Free      int64 // bytes free when asked
	Total     int64 // capacity of the device
	// Holders are the other holders of a simulated device's memory when
	// the allocation failed, as its ledger records them (the user's from
	// the live process); nil on other devices.
	Holders []LedgerEntry
}

func (e *OutOfMemoryError) Error() string {
	s := fmt.Sprintf("%s: out of memory: requested %d bytes, %d of %d bytes free", e.Device, e.Requested, e.Free, e.Total)
	if h := e.HeldBy(); h != "" {
		s += "; " + h
	}
	return s
}

// maxHeldBy is the most holders HeldBy names.
const maxHeldBy = 3

// HeldBy names the holders of the memory that is not free, as "held by pid
// 4242 (alice): 1.00 GiB, …", the first maxHeldBy then how many more;
// empty when there are none. A holder that is this process (a run's own
// --take) is "this process (pid 4242)", not named as if it were another.
func (e *OutOfMemoryError) HeldBy() string {
	if len(e.Holders) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("held by ")
	for i, h := range e.Holders[:min(len(e.Holders), maxHeldBy)] {
		if i > 0 {
			b.WriteString(", ")
		}
		if h.PID == os.Getpid() {
			fmt.Fprintf(&b, "this process (pid %d): %s", h.PID, units.Bytes(h.Bytes))
			continue
		}
		fmt.Fprintf(&b, "pid %d (%s): %s", h.PID, h.User, units.Bytes(h.Bytes))
	}
	if n := len(e.Holders) - maxHeldBy; n > 0 {
		fmt.Fprintf(&b, " and %d more (gpuz take-mem --list)", n)
	}
	return b.String()
}
