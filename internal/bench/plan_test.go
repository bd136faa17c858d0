package bench

import (
	"testing"

	"gpuz/internal/cache"
	"gpuz/internal/levers"
)

// TestPlanRecomputeAndTake plans the small linear workload, training and
// evaluating, under recompute none and blocks with 16 MiB of the
// simulated 64 MiB taken: a schedule per setting, in order; for each mode
// and placement a row per setting, in order; every row's free memory the
// device's less the take, its capacity the device's; every timeline's
// peak the row's device need, and the figures of each row those of its
// own schedule.
func TestPlanRecomputeAndTake(t *testing.T) {
	const take = 16 << 20
	for _, task := range []Task{TaskTrain, TaskEval} {
		opts := smallLinearRun(t, task, ModeCUDA, ModeCache)
		opts.Cache = cache.Config{Policy: cache.Window, Window: 1}
		settings := []levers.Recompute{levers.RecomputeNone, levers.RecomputeBlocks}
		p, err := PlanMemory(opts, PlanOptions{Recomputes: settings, TakeBytes: take})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Schedules) != 2 || p.Schedules[0].Recompute != settings[0] || p.Schedules[1].Recompute != settings[1] {
			t.Fatalf("%s: schedules %+v, want none then blocks", task, p.Schedules)
		}
		if p.Header.TakeBytes != take {
			t.Errorf("%s: header's take %d, want %d", task, p.Header.TakeBytes, take)
		}
		for i, m := range p.Modes {
			if want := settings[i%2]; m.Recompute != want {
				t.Errorf("%s: row %d (%s) recompute %s, want %s", task, i, m.Mode, m.Recompute, want)
			}
			if i%2 == 1 && (p.Modes[i-1].Mode != m.Mode || cacheOf(p.Modes[i-1].Placement) != cacheOf(m.Placement)) {
				t.Errorf("%s: row %d is %s %+v, the row before %s %+v; want the same mode and placement", task, i, m.Mode, cacheOf(m.Placement), p.Modes[i-1].Mode, cacheOf(p.Modes[i-1].Placement))
			}
			if m.DeviceTotal != 64<<20 || m.DeviceFree != 64<<20-take {
				t.Errorf("%s: row %d: free %d of %d, want %d of %d", task, i, m.DeviceFree, m.DeviceTotal, 64<<20-take, 64<<20)
			}
			var peak int64
			for _, pt := range m.Timeline {
				peak = max(peak, pt.Total())
			}
			if len(m.Timeline) == 0 || peak != m.Footprint.Device {
				t.Errorf("%s: row %d (%s %s): timeline of %d points peaks at %d, device need %d", task, i, m.Mode, m.Recompute, len(m.Timeline), peak, m.Footprint.Device)
			}
		}
	}
}

// TestPlanHostNeedWithHostOptimizer pins the host need of the cache
// mode's rows of a trained model (issue 44 item 19), planned for a target
// host so that the simulated card's bytes are not the host's: the data
// set and the paged blocks' masters, plus Adam's two moments of every
// parameter, 8 B each, where the row keeps them in host memory, counted
// once. The window policy keeps the moments on the device; window-paged
// and auto page them in the blocks' areas, whose masters are on the
// host; auto with the optimizer on the host keeps them there apart: the
// three need the same, 8 B a parameter more than the window policy.
func TestPlanHostNeedWithHostOptimizer(t *testing.T) {
	opts := smallLinearRun(t, TaskTrain, ModeCache)
	opts.Cache = cache.Config{Policy: cache.Window, Window: 1}
	opts.HostMemory = 1 << 40
	p, err := PlanMemory(opts, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	need := map[cache.Config]int64{}
	for _, m := range p.Modes {
		if m.HostNeed != p.Header.DataBytes+m.Footprint.Host {
			t.Errorf("%+v: host need %d B, want the data's %d B and the footprint's %d B", cacheOf(m.Placement), m.HostNeed, p.Header.DataBytes, m.Footprint.Host)
		}
		need[cacheOf(m.Placement)] = m.HostNeed
	}
	window := need[cache.Config{Policy: cache.Window, Window: 1}]
	moments := 8 * p.Header.Params
	for _, c := range []cache.Config{
		{Policy: cache.WindowPaged, Window: 1},
		{Policy: cache.Auto},
		{Policy: cache.Auto, OptimizerOnHost: true},
	} {
		got, ok := need[c]
		if !ok {
			t.Fatalf("no row for %+v among %v", c, need)
		}
		if window == 0 || got != window+moments {
			t.Errorf("%+v: host need %d B, want the window policy's %d B and the moments' %d B", c, got, window, moments)
		}
	}
}
