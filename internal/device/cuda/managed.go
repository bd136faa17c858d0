//go:build gpuzcuda

package cuda

import (
	"fmt"

	"gorgonia.org/cu"

	"gpuz/internal/device"
)

// AllocManaged returns n zeroed elements of managed memory
// (cuMemAllocManaged, attached globally): the driver places its pages on
// the device as kernels touch them and, when the device is full, migrates
// the least recently used back to the host. It counts nothing against
// Stats' allocated bytes: the driver decides what is resident.
func (d *Device) AllocManaged(n int) (device.Buffer, error) {
	if d.ctx == nil {
		return nil, fmt.Errorf("%s: device is closed", d.Name())
	}
	if err := d.ManagedSupport(); err != nil {
		return nil, err
	}
	b, err := d.alloc(n, false, func(bytes int64) (cu.DevicePtr, error) { return cu.MemAllocManaged(bytes, cu.AttachGlobal) })
	if err != nil {
		return nil, fmt.Errorf("managed memory: %w", err)
	}
	return b, nil
}

// Migrate does nothing: on CUDA the driver migrates managed pages by
// itself, on the faults of the kernels that touch them. The engine's walk
// of the same touches only predicts what it migrates (Schedule.Copies), and
// the mode's copied bytes on a GPU are its inputs and outputs alone.
func (d *Device) Migrate(device.Buffer, int64, int64, bool) error { return nil }

// Access does nothing: the GPU reads pages preferred on the host across
// the bus by itself (the engine advises them at load, AdviseHost).
func (d *Device) Access(device.Buffer, int64, int64) error { return nil }

// AdviseHost sets bytes [off, off+n) of managed buffer b's preferred
// location to the host, with the GPU as an accessor: its kernels read and
// write those pages across the bus without migrating them.
func (d *Device) AdviseHost(b device.Buffer, off, n int64) error {
	if n <= 0 {
		return nil
	}
	p := b.(*buffer).ptr + cu.DevicePtr(off)
	return d.do(func() error {
		if err := p.MemAdvise(n, cu.SetPreferredLocation, cu.CPU); err != nil {
			return err
		}
		return p.MemAdvise(n, cu.SetAccessedBy, d.dev)
	})
}

// ManagedSupport reports a GPU that cannot oversubscribe managed memory:
// one without managed memory, or without concurrent managed access (the
// pre-Pascal GPUs, and Windows and some WSL set-ups, where managed memory
// cannot exceed the device's).
func (d *Device) ManagedSupport() error {
	var managed, concurrent int
	err := d.do(func() (err error) {
		if managed, err = d.dev.Attribute(cu.ManagedMemory); err != nil {
			return err
		}
		concurrent, err = d.dev.Attribute(cu.ConcurrentManagedAccess)
		return err
	})
	switch {
	case err != nil:
		return fmt.Errorf("%s: reading its managed-memory attributes: %w", d.Name(), err)
	case managed == 0:
		return fmt.Errorf("%s cannot allocate managed memory", d.Name())
	case concurrent == 0:
		return fmt.Errorf("%s cannot oversubscribe managed memory (no concurrent managed access, as on Windows and some WSL set-ups): the managed mode needs it", d.Name())
	}
	return nil
}
