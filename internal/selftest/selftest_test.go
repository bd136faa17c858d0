//go:build !gpuzcuda

package selftest

import (
	"testing"

	"gpuz/internal/device"
	"gpuz/internal/device/gpu"
)

// TestShimDevicePasses runs the whole self-test on the CUDA kernels as the
// CPU shim runs them, in the shuffled schedule: every kernel and the
// training steps of the three workloads, resident and paged, through the
// engine, as `gpuz selftest --device cuda` runs them on a GPU.
func TestShimDevicePasses(t *testing.T) {
	if testing.Short() {
		t.Skip("the shim runs every GPU thread as a fiber: about a minute")
	}
	dev := gpu.NewShimDevice(gpu.Shuffled, 1<<30, gpu.DefaultShimWorkspace)
	defer dev.Close()
	r := Run(dev)
	for _, c := range r.Checks {
		if !c.Passed() {
			t.Errorf("%s %s: %s (largest error %.2g, tolerance %.2g)", c.Kind, c.Name, c.Problem, c.MaxErr, c.Tolerance)
		} else {
			t.Logf("%s %s: largest error %.2g (tolerance %.2g)", c.Kind, c.Name, c.MaxErr, c.Tolerance)
		}
	}
	if len(r.Checks) < len(Cases())+6 {
		t.Errorf("%d checks, want %d kernel and 6 training checks", len(r.Checks), len(Cases()))
	}
}

// TestSimPasses runs the self-test on the simulated device, whose kernels
// are the host's: every check must pass with zero error.
func TestSimPasses(t *testing.T) {
	r := Run(device.NewSim(1<<30, nil))
	for _, c := range r.Checks {
		if !c.Passed() || c.MaxErr != 0 {
			t.Errorf("%s %s: %q, largest error %g", c.Kind, c.Name, c.Problem, c.MaxErr)
		}
	}
}

// TestCompareCatchesDifferences checks that compare fails beyond the
// tolerance and on NaN.
func TestCompareCatchesDifferences(t *testing.T) {
	for _, c := range []struct {
		got, want []float32
		fail      bool
	}{
		{[]float32{1, 2}, []float32{1, 2}, false},
		{[]float32{1.00001, 2}, []float32{1, 2}, false},
		{[]float32{1.01, 2}, []float32{1, 2}, true},
		{[]float32{float32(nan()), 2}, []float32{1, 2}, true},
		{[]float32{1}, []float32{1, 2}, true},
	} {
		if _, p := compare(c.got, c.want, RelTol, AbsTol); (p != "") != c.fail {
			t.Errorf("compare(%v, %v): problem %q, want failure %v", c.got, c.want, p, c.fail)
		}
	}
}

func nan() float64 { var z float64; return z / z }
