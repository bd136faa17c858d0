package device

import (
	"fmt"
	"sync"
	"time"
)

// Meter keeps a device's Stats under its own lock: the bytes its buffers
// hold and their peak, its capacity, and its copies. The devices embed it
// for their Stats and ResetPeak methods.
type Meter struct {
	mu    sync.Mutex
	stats Stats
}

// Stats reports the memory held and copied.
func (m *Meter) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// ResetPeak starts a new peak: PeakBytes becomes what is held now.
func (m *Meter) ResetPeak() {
	m.mu.Lock()
	m.stats.PeakBytes = m.stats.AllocatedBytes
	m.mu.Unlock()
}

// SetTotal records the device's capacity in bytes.
func (m *Meter) SetTotal(bytes int64) {
	m.mu.Lock()
	m.stats.TotalBytes = bytes
	m.mu.Unlock()
}

// Hold counts bytes more held (fewer when negative), raising the peak.
func (m *Meter) Hold(bytes int64) {
	m.mu.Lock()
	m.hold(bytes)
	m.mu.Unlock()
}

// hold is Hold with m.mu held.
func (m *Meter) hold(bytes int64) {
	m.stats.AllocatedBytes += bytes
	m.stats.PeakBytes = max(m.stats.PeakBytes, m.stats.AllocatedBytes)
}

// Uploaded counts an upload of bytes that took took.
func (m *Meter) Uploaded(bytes int64, took time.Duration) {
	m.copied(&m.stats.UploadBytes, bytes, took)
}

// Accessed counts bytes of managed memory that kernels read or wrote in
// place across the bus, taking took.
func (m *Meter) Accessed(bytes int64, took time.Duration) {
	m.copied(&m.stats.RemoteBytes, bytes, took)
}

// Downloaded counts a download of bytes that took took.
func (m *Meter) Downloaded(bytes int64, took time.Duration) {
	m.copied(&m.stats.DownloadBytes, bytes, took)
}

func (m *Meter) copied(total *int64, bytes int64, took time.Duration) {
	m.mu.Lock()
	*total += bytes
	m.stats.CopyTime += took
	m.mu.Unlock()
}

// CheckUpload reports, as device dev's error, an upload whose source and
// destination differ in length.
func CheckUpload(dev string, dst Buffer, src []float32) error {
	if dst.Len() != len(src) {
		return fmt.Errorf("%s: upload of %d elements into a buffer of %d", dev, len(src), dst.Len())
	}
	return nil
}

// CheckDownload reports, as device dev's error, a download whose source and
// destination differ in length.
func CheckDownload(dev string, dst []float32, src Buffer) error {
	if src.Len() != len(dst) {
		return fmt.Errorf("%s: download of a buffer of %d elements into %d", dev, src.Len(), len(dst))
	}
	return nil
}
