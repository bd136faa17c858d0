package engine_test

import (
	"fmt"
	"testing"

	"gpuz/internal/cache"
	"gpuz/internal/engine"
	"gpuz/internal/levers"
)

// TestTimelineTotalIsFootprint checks, for every workload at the small
// scale, training and evaluating, resident, paged under each policy and
// hybrid, that every point of the timeline holds exactly the footprint's
// device bytes (so its maximum is the schedule's device need), that no
// category is negative, that there is a point per step and per update,
// and, resident, that the weights are every parameter and that all the
// saved activations live at once where the backward pass starts.
func TestTimelineTotalIsFootprint(t *testing.T) {
	const free = 1 << 40
	type lever struct {
		train bool
		r     levers.Recompute
	}
	schedules := []lever{{true, levers.RecomputeNone}, {true, levers.RecomputeBlocks}, {false, levers.RecomputeNone}}
	for _, c := range smallConfigs(t) {
		for _, lever := range schedules {
			train := lever.train
			m, s := compileLever(t, c, train, lever.r)
			pls := []engine.Placement{engine.Resident{}}
			for _, cc := range cache.Choices(1, train) {
				pls = append(pls, engine.Paged{Cache: cc})
			}
			pls = append(pls, engine.Paged{Cache: cache.Config{Policy: cache.Window, Window: 3}})
			pls = append(pls, hybridPlacements(len(m.Blocks), train)...)
			for _, pl := range pls {
				name := fmt.Sprintf("%T/train=%v/recompute=%s/paged=%v-%s-%d-host=%v/%s", c, train, lever.r, isPaged(pl), cacheOf(pl).Policy, cacheOf(pl).Window, cacheOf(pl).OptimizerOnHost, engine.PlaceText(blocksOf(pl)))
				t.Run(name, func(t *testing.T) { checkTimeline(t, s, pl, free) })
			}
		}
	}
}

func checkTimeline(t *testing.T, s *engine.Schedule, pl engine.Placement, free int64) {
	fp := s.Footprint(pl, free)
	tl, err := s.Timeline(pl, fp.Window)
	if err != nil {
		t.Fatal(err)
	}
	want := s.Steps() + s.Updates() // an update per block with trained parameters when training
	if len(tl) != want {
		t.Errorf("%d points, want %d (steps and updates)", len(tl), want)
	}
	var peak int64
	firstBackward := -1
	for i, pt := range tl {
		peak = max(peak, pt.Total())
		if pt.Total() != fp.Device {
			t.Fatalf("point %d (step %d, %s %s): %d bytes, the footprint's device bytes are %d", i, pt.Step, pt.Phase, pt.Block, pt.Total(), fp.Device)
		}
		for _, c := range engine.Categories() {
			if pt.Bytes[c] < 0 {
				t.Fatalf("point %d: %s is %d bytes", i, c, pt.Bytes[c])
			}
		}
		var slots int64
		for _, n := range pt.Slots {
			slots += n
		}
		if slots != pt.Bytes[engine.PagingSlots] || isPaged(pl) && len(pt.Slots) < fp.Window {
			t.Fatalf("point %d: slots %v sum to %d, paging slots hold %d (window %d)", i, pt.Slots, slots, pt.Bytes[engine.PagingSlots], fp.Window)
		}
		if pt.Phase == engine.Backward && firstBackward < 0 {
			firstBackward = i
		}
	}
	if peak != fp.Device {
		t.Errorf("timeline's peak %d, device need %d", peak, fp.Device)
	}
	if isPaged(pl) || blocksOf(pl) != nil {
		return
	}
	b := s.Bytes()
	if got := tl[0].Bytes[engine.Weights]; got != b.Parameters+b.Frozen {
		t.Errorf("weights %d bytes, parameters %d trained and %d frozen", got, b.Parameters, b.Frozen)
	}
	if firstBackward >= 0 {
		if got := tl[firstBackward].Bytes[engine.SavedActivations]; got != b.Saved {
			t.Errorf("saved activations %d bytes where the backward pass starts, %d saved in all", got, b.Saved)
		}
	}
}
