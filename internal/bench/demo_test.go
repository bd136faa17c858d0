package bench

import (
	"testing"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/models"
)

// TestDemoScaleTellsTheStory plans every workload's training at the demo
// scale on the simulated device the docs use, sim:256MiB, with nothing taken
// and with 128 MiB taken (a device of 128 MiB: sim counts a take as memory
// in use): the cuda mode fits the whole device but not what the take
// leaves, while the cache mode's window fits both. That is the offload
// story docs/sweeps.md shows with --take 0,64MiB,128MiB.
func TestDemoScaleTellsTheStory(t *testing.T) {
	for _, w := range []models.Workload{models.Linear, models.Resnet, models.Attention} {
		cfg, scale, err := w.Configure(models.ScaleDemo, nil)
		if err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		feed := models.FeedOf(cfg)
		for _, tc := range []struct {
			free     int64
			cudaFits bool
		}{{256 << 20, true}, {128 << 20, false}} {
			opts := Options{
				ModelName: w.Name, Scale: scale, Workload: cfg, Task: TaskTrain, Modes: []Mode{ModeCUDA, ModeCache},
				Samples: feed.Samples, Batch: feed.Batch, Epochs: feed.Epochs, Warmup: 1,
				Adam: DefaultAdam(), ClipNorm: 1, Seed: 1, Threads: 1,
				Config: Config{Cache: cache.Config{Policy: cache.Window, Window: 3}},
				NewGPU: func() (device.Device, error) { return device.NewSim(tc.free, nil), nil },
			}
			plan, err := PlanMemory(opts, PlanOptions{})
			if err != nil {
				t.Fatalf("%s: %v", w.Name, err)
			}
			for _, m := range plan.Modes {
				want := m.Mode == ModeCache || tc.cudaFits
				if m.Mode == ModeCache && m.Placement.Cache.Policy != cache.Window {
					continue
				}
				if m.FitsDevice != want {
					t.Errorf("%s on %d MiB free: %s (%s) fits the device %v, want %v (needs %d MiB)",
						w.Name, tc.free>>20, m.Mode, m.Placement.Cache.Policy, m.FitsDevice, want, m.Footprint.Device>>20)
				}
			}
		}
	}
}
