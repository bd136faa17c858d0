package bench

import (
	"testing"

	"gpuz/internal/device"
)

// fakeGPU is a simulated device whose caps say it is a real GPU (a
// compute capability, not simulated) without a profile of its own, as a
// CUDA device's do.
type fakeGPU struct{ *device.Sim }

func (g fakeGPU) Caps() device.Caps {
	c := g.Sim.Caps()
	c.Simulated, c.ComputeCapability = false, "9.0"
	return c
}

// TestRealGPUMeasuredForPredictions runs the cuda mode on a device that is
// a GPU without a profile: it is measured once, before the mode loads, and
// the mode is predicted on the measured profile (bound ≤ model, both
// positive), without the measurement's buffers counting in the mode's peak
// memory; the mode's result says simulated as the device's caps do, not
// as its name ("sim:1GiB" for both) would.
func TestRealGPUMeasuredForPredictions(t *testing.T) {
	peak := func(gpu bool) ModeResult {
		opts := smallLinearRun(t, TaskEval, ModeCUDA)
		opts.NewGPU = func() (device.Device, error) {
			sim := device.NewSim(1<<30, nil) // room for device.Measure's 3 × 64 MiB
			if gpu {
				return fakeGPU{sim}, nil
			}
			return sim, nil
		}
		opts.measured = newMeasuredProfiles(64)
		return run(t, opts).Modes[0]
	}
	plain, measured := peak(false), peak(true)
	if plain.Prediction != nil {
		t.Errorf("a simulated device without a profile was predicted on %s", plain.Prediction.Profile)
	}
	if measured.Prediction == nil {
		t.Fatalf("the GPU's mode has no prediction (status %v)", measured.Status)
	}
	if p := measured.Prediction; p.Bound <= 0 || p.Bound > p.Model {
		t.Errorf("prediction on %s: bound %v, model %v; want 0 < bound ≤ model", p.Profile, p.Bound, p.Model)
	}
	if !plain.Simulated || measured.Simulated {
		t.Errorf("Simulated: %v on the simulated device, %v on the GPU; want what their caps say, true and false", plain.Simulated, measured.Simulated)
	}
	if measured.PeakDeviceBytes != plain.PeakDeviceBytes {
		t.Errorf("peak %d bytes on the measured GPU, %d without measuring: the measurement counted in the mode's peak", measured.PeakDeviceBytes, plain.PeakDeviceBytes)
	}
}
