// Package hugemem allocates the large float32 buffers of host memory that
// a run touches for the first time in its first epoch: each buffer of at
// least Threshold bytes is a mapping of its own, aligned to a huge page
// and marked for transparent huge pages (madvise MADV_HUGEPAGE), so that
// the kernel faults it in 2 MiB at a time instead of 4 KiB at a time, and
// faulted in at once (MADV_POPULATE_WRITE, on every core), when it is
// allocated rather than in the first epoch. Free keeps a mapping for the
// next allocation (the next mode of a run allocates the same sizes again),
// which takes it zeroed instead of faulting fresh memory in; the mappings
// kept are handed back as soon as keeping them would map more than the
// most the process has had mapped at once, so that a run's peak is its
// largest mode's need. Smaller buffers, and every buffer where the kernel
// does not offer transparent huge pages (other operating systems, or the
// setting "never"), come from the Go heap.
package hugemem

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"unsafe"
)

// Threshold is the size in bytes from which Alloc maps a buffer of its
// own: one huge page, the least that can hold one.
const Threshold = 2 << 20

// hugePage is the size of a transparent huge page (the PMD size) on the
// architectures gpuz maps them for.
const hugePage = 2 << 20

// Floats is a zeroed buffer of float32 from Alloc.
type Floats struct {
	// Data is the buffer; nil once freed. No slice of it may be used
	// after Free: its memory is another buffer's or gone.
	Data []float32
	mem  []byte // the mapping, huge-page aligned; nil on the Go heap
}

// kept is the process's mappings and the freed ones kept for reuse.
var kept struct {
	sync.Mutex
	free   [][]byte // freed mappings, for the next Alloc to take
	mapped int      // bytes mapped: the live buffers' and free's
	high   int      // the most bytes mapped at once so far
}

// Alloc returns a zeroed buffer of exactly n float32: a mapping of its
// own marked for huge pages when 4n bytes reach Threshold and the kernel
// offers them (a kept one where one is large enough), otherwise Go heap
// memory.
func Alloc(n int) (*Floats, error) {
	if n < 0 {
		return nil, fmt.Errorf("hugemem: cannot allocate %d elements", n)
	}
	if 4*int64(n) < Threshold || !offered() {
		return &Floats{Data: make([]float32, n)}, nil
	}
	page := pageSize()
	size := int((4*uintptr(n) + page - 1) &^ (page - 1))
	mem := reuse(size)
	if mem != nil {
		inParallel(mem, func(part []byte) error { clear(part); return nil })
	} else {
		var err error
		if mem, err = mapHuge(uintptr(size)); err != nil {
			kept.Lock()
			kept.mapped -= size
			kept.Unlock()
			return nil, fmt.Errorf("hugemem: allocating %d bytes: %w", 4*int64(n), err)
		}
	}
	data := unsafeFloats(mem, n)
	return &Floats{Data: data, mem: mem}, nil
}

// reuse takes the smallest kept mapping of at least size bytes, its tail
// past size handed back, and returns it; or, when none is that large,
// hands back kept mappings, the largest first, until mapping size bytes
// more would not raise the most mapped at once (or none is left), counts
// size as mapped and returns nil for the caller to map it.
func reuse(size int) []byte {
	kept.Lock()
	defer kept.Unlock()
	best := -1
	for i, m := range kept.free {
		if len(m) >= size && (best < 0 || len(m) < len(kept.free[best])) {
			best = i
		}
	}
	if best >= 0 {
		mem := kept.free[best]
		kept.free = slices.Delete(kept.free, best, best+1)
		if len(mem) > size {
			kept.mapped -= len(mem) - size
			mem = unmapTail(mem, size)
		}
		return mem
	}
	slices.SortFunc(kept.free, func(a, b []byte) int { return len(b) - len(a) })
	for len(kept.free) > 0 && kept.mapped+size > kept.high {
		kept.mapped -= len(kept.free[0])
		unmap(kept.free[0])
		kept.free = kept.free[1:]
	}
	kept.mapped += size
	kept.high = max(kept.high, kept.mapped)
	return nil
}

// unsafeFloats is the first n float32 of a mapping.
func unsafeFloats(mem []byte, n int) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(mem))), n)
}

// Mapped reports whether the buffer is a mapping of its own (which Free
// keeps for the next Alloc) rather than Go heap memory.
func (f *Floats) Mapped() bool { return f.mem != nil }

// Free releases the buffer: a mapping is kept for the next Alloc to take,
// Go heap memory goes to the collector. Data is nil afterwards; a second Free does nothing.
func (f *Floats) Free() {
	if f.mem != nil {
		kept.Lock()
		kept.free = append(kept.free, f.mem)
		kept.Unlock()
	}
	f.Data, f.mem = nil, nil
}

// KeptBytes is the memory of the mappings Free kept: mapped by this
// process and counted as used by the system, yet free for its next
// allocations, which take them or hand them back first.
func KeptBytes() int64 {
	kept.Lock()
	defer kept.Unlock()
	n := int64(0)
	for _, m := range kept.free {
		n += int64(len(m))
	}
	return n
}

// Status says whether gpuz's large buffers use transparent huge pages:
// the kernel's setting and what gpuz does with it, as "madvise: used",
// "always: used", "never: not available", or "not available on darwin".
func Status() string { return status() }

// chunkMin is the least memory one thread zeroes or faults in: a few
// milliseconds' work, against the microseconds of starting it.
const chunkMin = 32 << 20

// chunks splits mem into at most GOMAXPROCS parts of whole huge pages (but
// the last), each of at least chunkMin bytes where mem has that many.
func chunks(mem []byte) [][]byte {
	parts := max(1, min(runtime.GOMAXPROCS(0), len(mem)/chunkMin))
	step := (len(mem)/parts + hugePage - 1) &^ (hugePage - 1)
	var out [][]byte
	for lo := 0; lo < len(mem); lo += step {
		out = append(out, mem[lo:min(lo+step, len(mem))])
	}
	return out
}

// inParallel runs f on each of mem's chunks, each on a goroutine of its
// own, and returns when all are done, with their errors joined.
func inParallel(mem []byte, f func(part []byte) error) error {
	parts := chunks(mem)
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, part := range parts {
		wg.Go(func() { errs[i] = f(part) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
