//go:build !gpuzcuda && cgo

package gpu

import (
	"fmt"

	"gpuz/internal/device"
)

var _ device.ManagedMemory = (*ShimDevice)(nil)

// AllocManaged returns n zeroed elements of managed memory: shim memory
// that counts against the capacity only for the bytes migrated to the
// device, as on the simulated device, so that the managed placement's
// allocation and migrations run with the CUDA kernels on the shim.
func (d *ShimDevice) AllocManaged(n int) (device.Buffer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("%s: device is closed", d.Name())
	}
	b := d.shim.Alloc(n)
	clear(b.Floats())
	if d.managed == nil {
		d.managed = map[*ShimBuffer]int64{}
	}
	d.managed[b] = 0
	return b, nil
}

// Migrate moves bytes [off, off+n) of a managed buffer into or out of the
// device's held memory, counting them as an upload or a download; the data
// stay in place.
func (d *ShimDevice) Migrate(b device.Buffer, off, n int64, toDevice bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	sb, _ := b.(*ShimBuffer)
	resident, ok := d.managed[sb]
	switch {
	case !ok:
		return fmt.Errorf("%s: migrating a buffer that is not managed memory", d.Name())
	case off < 0 || n < 0 || off+n > 4*int64(sb.Len()):
		return fmt.Errorf("%s: migrating bytes %d to %d of %d", d.Name(), off, off+n, 4*sb.Len())
	case toDevice && n > d.capacity-d.meter.Stats().AllocatedBytes:
		return &device.OutOfMemoryError{Device: d.Name(), Requested: n, Free: d.capacity - d.meter.Stats().AllocatedBytes, Total: d.capacity}
	case !toDevice && n > resident:
		return fmt.Errorf("%s: migrating %d bytes to the host, %d resident", d.Name(), n, resident)
	}
	if toDevice {
		d.managed[sb] += n
		d.meter.Hold(n)
		d.meter.Uploaded(n, 0)
	} else {
		d.managed[sb] -= n
		d.meter.Hold(-n)
		d.meter.Downloaded(n, 0)
	}
	return nil
}

// Access counts bytes of a managed buffer that a kernel reads in place.
func (d *ShimDevice) Access(b device.Buffer, off, n int64) error {
	if off < 0 || n < 0 || off+n > 4*int64(b.Len()) {
		return fmt.Errorf("%s: remote access to bytes %d to %d of %d", d.Name(), off, off+n, 4*b.Len())
	}
	d.meter.Accessed(n, 0)
	return nil
}

// AdviseHost does nothing, as on the simulated device.
func (d *ShimDevice) AdviseHost(device.Buffer, int64, int64) error { return nil }

// ManagedSupport is nil: the shim oversubscribes as the engine says.
func (d *ShimDevice) ManagedSupport() error { return nil }
