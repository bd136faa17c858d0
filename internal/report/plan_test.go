package report

import (
	"io"
	"testing"

	"gpuz/internal/bench"
	"gpuz/internal/engine"
)

// linearPlan is the reference linear workload's plan on a simulated 8 GiB
// device with 4 GiB taken by another process.
var linearPlan = bench.MemoryPlan{
	Header:    linearHeader,
	Bytes:     engine.Bytes{Parameters: 1_920_960_000, Optimizer: 3_841_920_000, Saved: 57_600_000, Inputs: 480_004, Arena: 160_560_000},
	Gradients: 1_920_960_000,
	Blocks:    12,
	MinWindow: 1,
	Modes: []bench.ModePlan{
		{Mode: bench.ModeCUDA, Device: "sim:8GiB", Footprint: engine.Footprint{Window: 12, Device: 5_981_520_004, BlockBytes: 485_000_000},
			DeviceFree: 4 << 30, HostAvailable: 22 << 30, HostNeed: 5_981_520_004, FitsDevice: false, FitsHost: true, Status: bench.Status{Kind: bench.StatusOK}},
		{Mode: bench.ModeCache, Device: "sim:8GiB", Placement: engine.Placement{Paged: true, Policy: engine.PolicyWindow, Window: 3},
			Footprint:  engine.Footprint{Window: 3, Device: 1_616_040_004, Host: 5_820_480_000, BlockBytes: 485_000_000},
			DeviceFree: 4 << 30, HostAvailable: 22 << 30, HostNeed: 7_436_520_004, FitsDevice: true, FitsHost: true, Status: bench.Status{Kind: bench.StatusOK}},
		{Mode: bench.ModeCache, Device: "sim:8GiB", Placement: engine.Placement{Paged: true, Policy: engine.PolicyAuto, OptimizerOnHost: true},
			Footprint:  engine.Footprint{Window: 12, Device: 2_100_000_000, Host: 9_662_400_000, BlockBytes: 165_000_000},
			DeviceFree: 4 << 30, HostAvailable: 22 << 30, HostNeed: 11_762_400_000, FitsDevice: true, FitsHost: true, Status: bench.Status{Kind: bench.StatusOK}},
		{Mode: bench.ModeCPU, Device: "host", Footprint: engine.Footprint{Window: 12, Device: 5_981_520_004},
			DeviceFree: 22 << 30, HostAvailable: 22 << 30, HostNeed: 5_981_520_004, FitsDevice: true, FitsHost: true, Status: bench.Status{Kind: bench.StatusOK}},
	},
}

func TestWritePlanDefault(t *testing.T) {
	golden(t, "plan_linear.golden", written(t, func(w io.Writer) error { return WritePlan(w, linearPlan) }))
	golden(t, "plan_linear_json.golden", written(t, func(w io.Writer) error { return WritePlanJSON(w, linearPlan) }))
}
