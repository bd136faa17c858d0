package device

import (
	"fmt"
	"runtime"
	"unsafe"

	"gpuz/internal/hugemem"
)

// hostBuffer is a buffer in host memory: an allocation of its own (mem), or
// a view of another buffer (owner).
type hostBuffer struct {
	data []float32
	// mem is the buffer's memory, nil for a view. A large buffer's is a
	// mapping of its own (package hugemem), which free keeps for the next
	// allocation; cleanup frees it when the buffer becomes unreachable
	// without having been freed.
	mem     *hugemem.Floats
	cleanup runtime.Cleanup
	// owner is the buffer a view is of, which the view keeps reachable,
	// and so its memory mapped, as long as the view is.
	owner *hostBuffer
}

func (b *hostBuffer) Len() int { return len(b.data) }

// newHostBuffer allocates a zeroed buffer of n elements.
func newHostBuffer(n int) (*hostBuffer, error) {
	mem, err := hugemem.Alloc(n)
	if err != nil {
		return nil, err
	}
	b := &hostBuffer{data: mem.Data, mem: mem}
	if mem.Mapped() {
		b.cleanup = runtime.AddCleanup(b, (*hugemem.Floats).Free, mem)
	}
	return b, nil
}

// free releases the buffer's memory, which no slice of it may be used
// after (a mapping is gone); a view only forgets its slice.
func (b *hostBuffer) free() {
	if b.mem != nil {
		b.cleanup.Stop()
		b.mem.Free()
		b.mem = nil
	}
	b.data = nil
}

// Floats returns the host slice behind a buffer of the host or simulated
// device. It panics on a buffer of another device: mixing devices is a
// programming error.
func Floats(b Buffer) []float32 { return b.(*hostBuffer).data }

// Halves returns the memory of a host or simulated buffer as 16-bit
// elements, two to each of its float32 words: where a 16-bit value lives.
func Halves(b Buffer) []uint16 {
	f := Floats(b)
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&f[0])), 2*len(f))
}

// Bytes returns the memory of a host or simulated buffer as bytes, four to
// each of its float32 words: where a quantized weight's blocks live.
func Bytes(b Buffer) []byte {
	f := Floats(b)
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f))
}

// Host is the CPU as a device: buffers are Go slices and the kernels are
// those of package hostmath.
type Host struct{ hostMemory }

// NewHost returns the host device.
func NewHost() *Host { return &Host{hostMemory{name: "host"}} }

// Name is "host".
func (h *Host) Name() string { return "host" }

// Alloc returns a zeroed buffer of n elements in host memory.
func (h *Host) Alloc(n int) (Buffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("host: cannot allocate %d elements", n)
	}
	b, err := newHostBuffer(n)
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	h.meter.Hold(4 * int64(n))
	return b, nil
}

// Free releases a buffer: a large one's memory is kept for the next
// allocation to take (package hugemem).
func (h *Host) Free(b Buffer) {
	hb := b.(*hostBuffer)
	h.meter.Hold(-4 * int64(len(hb.data)))
	hb.free()
}

// MemInfo reports the host memory available (MemAvailable) and installed
// (MemTotal).
func (h *Host) MemInfo() (free, total int64, err error) {
	info, err := ReadMeminfo()
	if err != nil {
		return 0, 0, fmt.Errorf("host: %w", err)
	}
	return info.Available, info.Total, nil
}

// Close does nothing: Free releases each buffer, and the collector those
// never freed.
func (h *Host) Close() error { return nil }
