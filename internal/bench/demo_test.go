package bench

import (
	"context"
	"math"
	"testing"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/levers"
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
				Config: Config{Placements: Placements{Cache: cache.Config{Policy: cache.Window, Window: 3}}},
				NewGPU: func() (device.Device, error) { return device.NewSim(tc.free, nil), nil },
			}
			plan, err := PlanMemory(opts, PlanOptions{})
			if err != nil {
				t.Fatalf("%s: %v", w.Name, err)
			}
			for _, m := range plan.Modes {
				want := m.Mode == ModeCache || tc.cudaFits
				if m.Mode == ModeCache && cacheOf(m.Placement).Policy != cache.Window {
					continue
				}
				if m.FitsDevice != want {
					t.Errorf("%s on %d MiB free: %s (%s) fits the device %v, want %v (needs %d MiB)",
						w.Name, tc.free>>20, m.Mode, cacheOf(m.Placement).Policy, m.FitsDevice, want, m.Footprint.Device>>20)
				}
			}
		}
	}
}

// TestRecomputeDemo runs the recompute story of docs/levers.md: resnet's
// training at the demo scale on a 128 MiB simulated device runs out of
// memory in the cuda mode with every activation kept, and completes with
// --recompute blocks, its measured peak under half the plan's need
// without it, with the same losses a larger device gives without it.
func TestRecomputeDemo(t *testing.T) {
	run := func(r levers.Recompute, capacity int64) ModeResult {
		return runDemoCUDA(t, models.Resnet, TaskTrain, Config{Set: levers.Set{Recompute: r}}, capacity)
	}
	if m := run(levers.RecomputeNone, 128<<20); m.Status.Kind != StatusOOM {
		t.Fatalf("without recompute on 128 MiB: %s, want OOM", m.Status)
	}
	got := run(levers.RecomputeBlocks, 128<<20)
	if got.Status.Kind != StatusOK {
		t.Fatalf("with recompute on 128 MiB: %s, want ok", got.Status)
	}
	want := run(levers.RecomputeNone, 256<<20)
	if got.PeakDeviceBytes*2 > want.PeakDeviceBytes {
		t.Errorf("peak %d bytes with recompute, %d without: want at most half", got.PeakDeviceBytes, want.PeakDeviceBytes)
	}
	for i := range want.Epochs {
		if got.Epochs[i].Value != want.Epochs[i].Value {
			t.Errorf("epoch %d: loss %v with recompute, %v without", i, got.Epochs[i].Value, want.Epochs[i].Value)
		}
	}
}

// TestPrecisionDemo is issue 21's demo: linear evaluation at demo scale
// needs 48.2 MiB in fp32 (the plan), so on a 32 MiB simulated GPU the cuda
// mode is out of memory; in bf16 its weights take half the bytes and it
// fits, with no paging, its peak at most 0.6× fp32's, its output within
// bf16's tolerance of fp32's.
func TestPrecisionDemo(t *testing.T) {
	run := func(p levers.Precision, capacity int64) ModeResult {
		return runDemoCUDA(t, models.Linear, TaskEval, Config{Set: levers.Set{Precision: p}}, capacity)
	}
	if m := run(levers.FP32, 32<<20); m.Status.Kind != StatusOOM {
		t.Fatalf("fp32 on 32 MiB: %s, want OOM", m.Status)
	}
	got := run(levers.BF16, 32<<20)
	if got.Status.Kind != StatusOK {
		t.Fatalf("bf16 on 32 MiB: %s, want ok", got.Status)
	}
	want := run(levers.FP32, 64<<20)
	if 10*got.PeakDeviceBytes > 6*want.PeakDeviceBytes {
		t.Errorf("peak %d bytes in bf16, %d in fp32: want at most 0.6×", got.PeakDeviceBytes, want.PeakDeviceBytes)
	}
	for i := range want.Epochs {
		if d := math.Abs(float64(got.Epochs[i].Value-want.Epochs[i].Value)) / math.Abs(float64(want.Epochs[i].Value)); d > precisionTolerance[levers.BF16] {
			t.Errorf("epoch %d: output %v in bf16, %v in fp32", i, got.Epochs[i].Value, want.Epochs[i].Value)
		}
	}
}

// runDemoCUDA runs a workload's cuda mode at the demo scale, 2 epochs (one
// warm-up), on a simulated GPU of capacity bytes, with cfg's levers.
func runDemoCUDA(t *testing.T, w models.Workload, task Task, cfg Config, capacity int64) ModeResult {
	t.Helper()
	wl, scale, err := w.Configure(models.ScaleDemo, nil)
	if err != nil {
		t.Fatal(err)
	}
	feed := models.FeedOf(wl)
	opts := Options{
		ModelName: w.Name, Scale: scale, Workload: wl, Task: task, Modes: []Mode{ModeCUDA},
		Samples: feed.Samples, Batch: feed.Batch, Epochs: 2, Warmup: 1,
		Adam: DefaultAdam(), ClipNorm: 1, Seed: 1, Threads: 1,
		Config: cfg,
		NewGPU: func() (device.Device, error) { return device.NewSim(capacity, nil), nil },
	}
	res, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return res.Modes[0]
}
