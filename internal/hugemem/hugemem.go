// Package hugemem allocates the large float32 buffers of host memory that
// a run touches for the first time in its first epoch: each buffer of at
// least Threshold bytes is a mapping of its own, aligned to a huge page
// and marked for transparent huge pages (madvise MADV_HUGEPAGE), so that
// the kernel faults it in 2 MiB at a time instead of 4 KiB at a time, and
// faulted in at once (MADV_POPULATE_WRITE), when it is allocated rather
// than in the first epoch; Free hands it back to the system at once. Smaller buffers, and every
// buffer where the kernel does not offer transparent huge pages (other
// operating systems, or the setting "never"), come from the Go heap.
package hugemem

import "fmt"

// Threshold is the size in bytes from which Alloc maps a buffer of its
// own: one huge page, the least that can hold one.
const Threshold = 2 << 20

// Floats is a zeroed buffer of float32 from Alloc.
type Floats struct {
	// Data is the buffer; nil once freed. No slice of it may be used
	// after Free: a mapped buffer's memory is gone.
	Data []float32
	mem  []byte // the mapping, huge-page aligned; nil on the Go heap
}

// Alloc returns a zeroed buffer of exactly n float32: a mapping of its
// own marked for huge pages when 4n bytes reach Threshold and the kernel
// offers them, otherwise Go heap memory.
func Alloc(n int) (*Floats, error) {
	if n < 0 {
		return nil, fmt.Errorf("hugemem: cannot allocate %d elements", n)
	}
	if 4*int64(n) < Threshold || !offered() {
		return &Floats{Data: make([]float32, n)}, nil
	}
	f, err := mapFloats(n)
	if err != nil {
		return nil, fmt.Errorf("hugemem: allocating %d bytes: %w", 4*int64(n), err)
	}
	return f, nil
}

// Mapped reports whether the buffer is a mapping of its own (which Free
// unmaps) rather than Go heap memory.
func (f *Floats) Mapped() bool { return f.mem != nil }

// Free releases the buffer: a mapping goes back to the system at once, Go
// heap memory to the collector. Data is nil afterwards; a second Free does
// nothing.
func (f *Floats) Free() {
	if f.mem != nil {
		unmap(f.mem)
	}
	f.Data, f.mem = nil, nil
}

// Status says whether gpuz's large buffers use transparent huge pages:
// the kernel's setting and what gpuz does with it, as "madvise: used",
// "always: used", "never: not available", or "not available on darwin".
func Status() string { return status() }
