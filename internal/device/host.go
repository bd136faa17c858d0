package device

import "fmt"

// hostBuffer is a buffer in host memory.
type hostBuffer struct{ data []float32 }

func (b *hostBuffer) Len() int { return len(b.data) }

// Floats returns the host slice behind a buffer of the host or simulated
// device. It panics on a buffer of another device: mixing devices is a
// programming error.
func Floats(b Buffer) []float32 { return b.(*hostBuffer).data }

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
	h.meter.Hold(4 * int64(n))
	return &hostBuffer{data: make([]float32, n)}, nil
}

// Free releases a buffer.
func (h *Host) Free(b Buffer) {
	hb := b.(*hostBuffer)
	h.meter.Hold(-4 * int64(len(hb.data)))
	hb.data = nil
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

// Close does nothing: host buffers are Go memory, freed by the collector.
func (h *Host) Close() error { return nil }
