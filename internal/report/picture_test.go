package report

import (
	"strings"
	"testing"

	"gpuz/internal/bench"
	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/levers"
	"gpuz/internal/models"
)

// smallLinearPlan plans the small linear workload's task in the cuda,
// cache and managed modes on a simulated 64 MiB device with 16 MiB taken,
// under recompute none and blocks.
func smallLinearPlan(t *testing.T, task bench.Task) bench.MemoryPlan {
	t.Helper()
	cfg, err := models.LinearPreset(models.ScaleSmall)
	if err != nil {
		t.Fatal(err)
	}
	opts := bench.Options{
		ModelName: "linear", Workload: &cfg, Task: task, Modes: []bench.Mode{bench.ModeCUDA, bench.ModeCache, bench.ModeManaged},
		Samples: cfg.Samples, Batch: cfg.Batch, Epochs: cfg.Epochs, Warmup: 1,
		Adam: bench.DefaultAdam(), ClipNorm: 1, Seed: 1, Threads: 1,
		NewGPU: func() (device.Device, error) { return device.NewSim(64<<20, nil), nil },
		Config: bench.Config{Placements: bench.Placements{Cache: cache.Config{Policy: cache.Window, Window: 1}}},
	}
	p, err := bench.PlanMemory(opts, bench.PlanOptions{Recomputes: levers.Recomputes(), TakeBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPlanPictureIsThePlan checks that the memory picture draws the plan's
// own figures, training and evaluating: a panel per row with a timeline
// (the managed rows have none), in order, titled with the row's mode,
// recompute setting and device need; each band at each point the
// timeline's bytes of its category, the bands summing to the device need
// at every point; the capacity, the free memory less the take and the
// take the row's; the peak the most bytes in use, where the timeline
// first reaches it.
func TestPlanPictureIsThePlan(t *testing.T) {
	for _, task := range []bench.Task{bench.TaskTrain, bench.TaskEval} {
		p := smallLinearPlan(t, task)
		pic, err := PlanPicture(p)
		if err != nil {
			t.Fatal(err)
		}
		var rows []bench.ModePlan
		for _, m := range p.Modes {
			if m.Placement.PageBytes() > 0 {
				if m.Timeline != nil {
					t.Errorf("%s: a managed row has a timeline", task)
				}
				continue
			}
			rows = append(rows, m)
		}
		if len(pic.Panels) != len(rows) || len(rows) != 2*(1+len(cache.Choices(1, task == bench.TaskTrain))) {
			t.Fatalf("%s: %d panels for %d rows with a timeline", task, len(pic.Panels), len(rows))
		}
		if got := len(pic.Categories); got != len(engine.Categories()) || pic.Categories[got-1] != engine.Idle.String() {
			t.Errorf("%s: categories %q, want engine's, the idle one last", task, pic.Categories)
		}
		for i, m := range rows {
			checkPanel(t, pic.Panels[i], m, p.Header.TakeBytes)
		}
	}
}

func checkPanel(t *testing.T, panel MemoryPanel, m bench.ModePlan, take int64) {
	t.Helper()
	if !strings.HasPrefix(panel.Title, string(m.Mode)+", ") || !strings.Contains(panel.Title, "recompute "+m.Recompute.String()) {
		t.Errorf("panel %q for %s recompute %s", panel.Title, m.Mode, m.Recompute)
	}
	if panel.Capacity != m.DeviceTotal || panel.Free != m.DeviceFree || panel.Take != take || panel.Need != m.Footprint.Device {
		t.Errorf("%s: capacity %d, free %d, take %d, need %d; want %d, %d, %d, %d", panel.Title,
			panel.Capacity, panel.Free, panel.Take, panel.Need, m.DeviceTotal, m.DeviceFree, take, m.Footprint.Device)
	}
	var peak int64
	peakAt := 0
	for i, pt := range m.Timeline {
		var sum int64
		for c, cat := range engine.Categories() {
			if panel.Bands[c][i] != pt.Bytes[cat] {
				t.Fatalf("%s: %s at point %d is %d, the timeline's %d", panel.Title, cat, i, panel.Bands[c][i], pt.Bytes[cat])
			}
			sum += panel.Bands[c][i]
		}
		if sum != m.Footprint.Device {
			t.Fatalf("%s: point %d sums to %d, the device need is %d", panel.Title, i, sum, m.Footprint.Device)
		}
		if pt.InUse() > peak {
			peak, peakAt = pt.InUse(), i
		}
	}
	var slots int64
	for _, n := range panel.Slots {
		slots += n
	}
	if len(m.Timeline) > 0 && slots != m.Timeline[0].Bytes[engine.PagingSlots] {
		t.Errorf("%s: slots %v sum to %d, the paging slots' band is %d", panel.Title, panel.Slots, slots, m.Timeline[0].Bytes[engine.PagingSlots])
	}
	if panel.Peak != peak || panel.PeakAt != peakAt {
		t.Errorf("%s: peak %d at %d, want %d at %d", panel.Title, panel.Peak, panel.PeakAt, peak, peakAt)
	}
}

// TestPlanPictureNeedsATimeline: a plan whose rows have no timeline (the
// managed mode alone) has no picture, and the error says which modes have.
func TestPlanPictureNeedsATimeline(t *testing.T) {
	p := smallLinearPlan(t, bench.TaskTrain)
	p.Modes = []bench.ModePlan{p.Modes[len(p.Modes)-1]}
	if _, err := PlanPicture(p); err == nil || !strings.Contains(err.Error(), "managed does not") {
		t.Errorf("error %v, want one that says managed has no timeline", err)
	}
}
