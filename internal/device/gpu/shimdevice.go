//go:build !gpuzcuda && cgo

package gpu

import (
	"fmt"
	"sync"

	"gpuz/internal/device"
)

// ShimDevice is a device.Device whose kernels are gpuz's CUDA kernels run
// on the CPU shim: the engine, the placements and the self-test run on it
// exactly as on a GPU, only slowly. Tests use it; no command offers it.
type ShimDevice struct {
	shim     *Shim
	capacity int64
	mu       sync.Mutex // makes Alloc's check and count one step
	closed   bool       // Close was called; guarded by mu
	meter    device.Meter
	// managed maps each managed buffer to its bytes resident on the
	// device (AllocManaged, Migrate); guarded by mu.
	managed map[*ShimBuffer]int64
}

var _ device.Device = (*ShimDevice)(nil)

// DefaultShimWorkspace is the workspace of the shim devices of tests.
const DefaultShimWorkspace = 4 << 20

// NewShimDevice returns a shim device of capacity bytes running in order,
// with a workspace of workspaceBytes.
func NewShimDevice(order Order, capacity int64, workspaceBytes int) *ShimDevice {
	d := &ShimDevice{shim: NewShim(order, 7, workspaceBytes), capacity: capacity}
	d.meter.SetTotal(capacity)
	return d
}

// Name is "shim (order)".
func (d *ShimDevice) Name() string { return fmt.Sprintf("shim (%s)", d.shim.order) }

// Alloc returns n zeroed elements or an *OutOfMemoryError beyond the
// capacity.
func (d *ShimDevice) Alloc(n int) (device.Buffer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("%s: device is closed", d.Name())
	}
	bytes := 4 * int64(n)
	if free := d.capacity - d.meter.Stats().AllocatedBytes; bytes > free {
		return nil, &device.OutOfMemoryError{Device: d.Name(), Requested: bytes, Free: free, Total: d.capacity}
	}
	b := d.shim.Alloc(n)
	clear(b.Floats())
	d.meter.Hold(bytes)
	return b, nil
}

// Free returns a buffer's bytes to the capacity; the memory itself stays
// until Close, so that a use after Free reads the old values rather than
// crashing the test. After Close it does nothing.
func (d *ShimDevice) Free(b device.Buffer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if resident, ok := d.managed[b.(*ShimBuffer)]; ok {
		delete(d.managed, b.(*ShimBuffer))
		d.meter.Hold(-resident)
		return
	}
	if !d.closed {
		d.meter.Hold(-4 * int64(b.Len()))
	}
}

// View returns n elements of b from offset.
func (d *ShimDevice) View(b device.Buffer, offset, n int) device.Buffer {
	return d.shim.View(b.(*ShimBuffer), offset, n)
}

// Upload copies src into dst.
func (d *ShimDevice) Upload(dst device.Buffer, src []float32) error {
	if err := device.CheckUpload(d.Name(), dst, src); err != nil {
		return err
	}
	copy(dst.(*ShimBuffer).Floats(), src)
	d.meter.Uploaded(4*int64(len(src)), 0)
	return d.shim.Err()
}

// Download copies src into dst, reporting the first launch error.
func (d *ShimDevice) Download(dst []float32, src device.Buffer) error {
	if err := device.CheckDownload(d.Name(), dst, src); err != nil {
		return err
	}
	if err := d.shim.Err(); err != nil {
		return err
	}
	if err := d.shim.CheckGuards(); err != nil {
		return err
	}
	copy(dst, src.(*ShimBuffer).Floats())
	d.meter.Downloaded(4*int64(len(dst)), 0)
	return nil
}

// Stats reports the memory held and copied.
func (d *ShimDevice) Stats() device.Stats { return d.meter.Stats() }

// MemInfo reports the capacity less what is held.
func (d *ShimDevice) MemInfo() (free, total int64, err error) {
	s := d.Stats()
	return d.capacity - s.AllocatedBytes, d.capacity, nil
}

// ResetPeak starts a new peak: PeakBytes becomes what is held now.
func (d *ShimDevice) ResetPeak() { d.meter.ResetPeak() }

// Caps says that the shim runs the CUDA kernels (its kind is cuda),
// simulated in host memory (its times are the CPU's), and has managed
// memory (shimmanaged.go).
func (d *ShimDevice) Caps() device.Caps {
	return device.Caps{Kind: device.KindCUDA, Simulated: true, HostMemory: true, Managed: d}
}

// Kernels returns the CUDA kernels on the shim.
func (d *ShimDevice) Kernels() device.Kernels { return Dispatcher{L: d.shim} }

// Close frees the shim's memory; a second Close does nothing.
func (d *ShimDevice) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	d.shim.Free()
	d.meter.Hold(-d.meter.Stats().AllocatedBytes)
	return nil
}
