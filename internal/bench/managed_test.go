package bench

import (
	"strings"
	"testing"

	"gpuz/internal/device"
)

// TestManagedUnavailable: without a GPU (--device cpu), or on a device that
// cannot allocate managed memory, the managed mode is an unavailable row
// saying why; on the simulated device it runs and completes.
func TestManagedUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		newGPU func() (device.Device, error)
		want   StatusKind
		reason string
	}{
		{"no GPU", nil, StatusUnavailable, "no GPU device given"},
		{"no managed memory", func() (device.Device, error) { return device.NewHost(), nil }, StatusUnavailable, "host cannot allocate managed memory"},
		{"sim", func() (device.Device, error) { return device.NewSim(64<<20, nil), nil }, StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := smallLinearRun(t, TaskTrain, ModeManaged)
			opts.Epochs, opts.NewGPU = 2, tc.newGPU
			m := run(t, opts).Modes[0]
			if m.Status.Kind != tc.want || !strings.Contains(m.Status.Reason, tc.reason) {
				t.Errorf("managed: %s, want %s with %q", m.Status, tc.want, tc.reason)
			}
		})
	}
}
