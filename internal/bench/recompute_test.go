package bench

import (
	"fmt"
	"testing"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/levers"
)

// recomputePlacements are the placements the recompute lever must leave
// bit-identical: every block resident (cuda), paged under each policy
// (cache), DictCache's window with two blocks, the optimizer on the host,
// a hybrid split and managed memory. blocks is the workload's count.
func recomputePlacements(blocks int) map[string]engine.Placement {
	hybrid := make([]engine.Where, blocks)
	hybrid[0] = engine.OnHost
	for b := 1; b < blocks; b += 2 {
		hybrid[b] = engine.InCache
	}
	return map[string]engine.Placement{
		"cuda":               engine.Resident{},
		"cache-window":       engine.Paged{Cache: cache.Config{Policy: cache.Window, Window: 2}},
		"cache-window-paged": engine.Paged{Cache: cache.Config{Policy: cache.WindowPaged, Window: 2}},
		"cache-auto":         engine.Paged{Cache: cache.Config{Policy: cache.Auto, Window: 2}},
		"cache-auto-host":    engine.Paged{Cache: cache.Config{Policy: cache.Auto, Window: 2, OptimizerOnHost: true}},
		"hybrid":             engine.Hybrid{Blocks: hybrid, Cache: cache.Config{Policy: cache.Window, Window: 1}},
		"managed":            engine.Managed{PageSize: cache.MinPageSize},
	}
}

// leverPlacements returns recomputePlacements for the workload of opts,
// and the host's ("cpu").
func leverPlacements(t *testing.T, opts Options) map[string]engine.Placement {
	t.Helper()
	model, err := opts.Workload.Build()
	if err != nil {
		t.Fatal(err)
	}
	placements := recomputePlacements(len(model.Blocks))
	placements["cpu"] = engine.Resident{}
	return placements
}

// TestRecomputeIsBitIdentical trains every workload at small scale with
// and without --recompute blocks in every placement, and on the host (cpu
// mode): the re-run forward steps are the same kernels on the same inputs,
// so the losses and the final weights must be bit-identical, and the
// measured peak must be the plan's.
func TestRecomputeIsBitIdentical(t *testing.T) {
	for name, opts := range smallWorkloads(t) {
		for pname, pl := range leverPlacements(t, opts) {
			t.Run(fmt.Sprintf("%s/%s", name, pname), func(t *testing.T) {
				newDev := func() device.Device {
					if pname == "cpu" {
						return device.NewHost()
					}
					return device.NewSim(64<<20, nil)
				}
				want := trainOnDevice(t, opts, TaskTrain, pl, 3, newDev())
				opts := opts
				opts.Recompute = levers.RecomputeBlocks
				got := trainOnDevice(t, opts, TaskTrain, pl, 3, newDev())
				got.checkSame(t, want, "without recompute", "the run without recompute")
				if pname != "cpu" && got.peak != got.plan.Device {
					t.Errorf("measured peak %d, plan %d", got.peak, got.plan.Device)
				}
			})
		}
	}
}
