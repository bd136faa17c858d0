package device

import (
	"fmt"
	"sync"
	"time"
)

// hostMemory is what the devices whose memory is host memory (the host and
// the simulated GPU) share: views of host buffers, copies that are
// performed, counted and timed, the accounting, and the host kernels.
type hostMemory struct {
	name  string
	mu    sync.Mutex
	stats Stats
}

// View returns n elements of b from offset.
func (m *hostMemory) View(b Buffer, offset, n int) Buffer {
	return &hostBuffer{data: Floats(b)[offset : offset+n : offset+n]}
}

// Upload copies src into the host buffer dst, and counts it.
func (m *hostMemory) Upload(dst Buffer, src []float32) error {
	d := Floats(dst)
	if len(d) != len(src) {
		return fmt.Errorf("%s: upload of %d elements into a buffer of %d", m.name, len(src), len(d))
	}
	start := time.Now()
	copy(d, src)
	m.count(&m.stats.UploadBytes, len(src), time.Since(start))
	return nil
}

// Download copies the host buffer src into dst, and counts it.
func (m *hostMemory) Download(dst []float32, src Buffer) error {
	s := Floats(src)
	if len(s) != len(dst) {
		return fmt.Errorf("%s: download of a buffer of %d elements into %d", m.name, len(s), len(dst))
	}
	start := time.Now()
	copy(dst, s)
	m.count(&m.stats.DownloadBytes, len(dst), time.Since(start))
	return nil
}

func (m *hostMemory) count(total *int64, elems int, took time.Duration) {
	m.mu.Lock()
	*total += 4 * int64(elems)
	m.stats.CopyTime += took
	m.mu.Unlock()
}

// Stats reports the memory held and copied.
func (m *hostMemory) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// ResetPeak starts a new peak: PeakBytes becomes what is held now.
func (m *hostMemory) ResetPeak() {
	m.mu.Lock()
	m.stats.PeakBytes = m.stats.AllocatedBytes
	m.mu.Unlock()
}

// Kernels returns the host kernels.
func (m *hostMemory) Kernels() Kernels { return HostKernels{} }
