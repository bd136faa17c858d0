package device

import "time"

// hostMemory is what the devices whose memory is host memory (the host and
// the simulated GPU) share: views of host buffers, copies that are
// performed, counted and timed, the accounting, and the host kernels.
type hostMemory struct {
	name  string
	meter Meter // its mu also guards the simulated device's holdings
}

// View returns n elements of b from offset. The view keeps b's memory
// until it is unreachable, but not past b's Free.
func (m *hostMemory) View(b Buffer, offset, n int) Buffer {
	owner := b.(*hostBuffer)
	if owner.owner != nil {
		owner = owner.owner // a view of a view is of the same buffer
	}
	return &hostBuffer{data: Floats(b)[offset : offset+n : offset+n], owner: owner}
}

// Upload copies src into the host buffer dst, and counts it.
func (m *hostMemory) Upload(dst Buffer, src []float32) error {
	if err := CheckUpload(m.name, dst, src); err != nil {
		return err
	}
	start := time.Now()
	copy(Floats(dst), src)
	m.meter.Uploaded(4*int64(len(src)), time.Since(start))
	return nil
}

// Download copies the host buffer src into dst, and counts it.
func (m *hostMemory) Download(dst []float32, src Buffer) error {
	if err := CheckDownload(m.name, dst, src); err != nil {
		return err
	}
	start := time.Now()
	copy(dst, Floats(src))
	m.meter.Downloaded(4*int64(len(dst)), time.Since(start))
	return nil
}

// Stats reports the memory held and copied.
func (m *hostMemory) Stats() Stats { return m.meter.Stats() }

// ResetPeak starts a new peak: PeakBytes becomes what is held now.
func (m *hostMemory) ResetPeak() { m.meter.ResetPeak() }

// Kernels returns the host kernels.
func (m *hostMemory) Kernels() Kernels { return hostKernels{} }
