package report

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gpuz/internal/bench"
	"gpuz/internal/cache"
	"gpuz/internal/engine"
	"gpuz/internal/levers"
)

// linearPlan is the reference linear workload's plan on a simulated 8 GiB
// device with 4 GiB taken by another process.
var linearPlan = bench.MemoryPlan{
	Header:  linearHeader,
	Blocks:  12,
	Batches: 2,
	Schedules: []bench.SchedulePlan{{
		Recompute: levers.RecomputeNone,
		Bytes:     engine.Bytes{Parameters: 1_920_960_000, Optimizer: 3_841_920_000, Saved: 57_600_000, Inputs: 480_004, Arena: 160_560_000},
		Gradients: 1_920_960_000,
		MinWindow: 1,
		Work:      linearWork,
	}},
	Modes: []bench.ModePlan{
		{Mode: bench.ModeCUDA, Device: "sim:8GiB", Placement: engine.Resident{}, Footprint: engine.Footprint{Window: 12, Device: 5_981_520_004, BlockBytes: 485_000_000},
			DeviceFree: 4 << 30, HostAvailable: 22 << 30, HostNeed: 5_981_520_004, FitsDevice: false, FitsHost: true, Status: bench.Status{Kind: bench.StatusOK},
			Copies: engine.Copies{UploadBytes: 960_000, DownloadBytes: 8, Count: 6}},
		{Mode: bench.ModeCache, Device: "sim:8GiB", Placement: engine.Paged{Cache: cache.Config{Policy: cache.Window, Window: 3}},
			Footprint:  engine.Footprint{Window: 3, Device: 1_616_040_004, Host: 5_820_480_000, BlockBytes: 485_000_000},
			DeviceFree: 4 << 30, HostAvailable: 22 << 30, HostNeed: 7_436_520_004, FitsDevice: true, FitsHost: true, Status: bench.Status{Kind: bench.StatusOK},
			Copies: engine.Copies{UploadBytes: 17_376_960_000, DownloadBytes: 17_376_000_008, Count: 5054}},
		{Mode: bench.ModeCache, Device: "sim:8GiB", Placement: engine.Paged{Cache: cache.Config{Policy: cache.Auto, OptimizerOnHost: true}},
			Footprint:  engine.Footprint{Window: 12, Device: 2_100_000_000, Host: 9_662_400_000, BlockBytes: 165_000_000},
			DeviceFree: 4 << 30, HostAvailable: 22 << 30, HostNeed: 11_762_400_000, FitsDevice: true, FitsHost: true, Status: bench.Status{Kind: bench.StatusOK},
			Copies: engine.Copies{UploadBytes: 3_842_880_000, DownloadBytes: 3_841_920_008, OverlapBytes: 3_521_760_000, Count: 966}},
		// The managed region (5.57 GiB, 2853 pages of 2 MiB), 2048 of them
		// resident on the 4 GiB free.
		{Mode: bench.ModeManaged, Device: "sim:8GiB", Placement: engine.Managed{PageSize: 2 << 20},
			Footprint:  engine.Footprint{Window: 2048, Device: 4 << 30, Host: 1_686_552_836, BlockBytes: 2 << 20, Pages: 2853},
			DeviceFree: 4 << 30, HostAvailable: 22 << 30, HostNeed: 5_981_520_004, FitsDevice: true, FitsHost: true, Status: bench.Status{Kind: bench.StatusOK},
			Copies: engine.Copies{UploadBytes: 12_000_000_000, DownloadBytes: 11_999_000_008, Count: 11_400}},
		{Mode: bench.ModeCPU, Device: "host", Placement: engine.Resident{}, Footprint: engine.Footprint{Window: 12, Device: 5_981_520_004},
			DeviceFree: 22 << 30, HostAvailable: 22 << 30, HostNeed: 5_981_520_004, FitsDevice: true, FitsHost: true, Status: bench.Status{Kind: bench.StatusOK},
			Copies: engine.Copies{UploadBytes: 960_000, DownloadBytes: 8, Count: 6}},
	},
}

// linearWork is Schedule.Work of the full-scale linear training step.
var linearWork = engine.Work{Kernels: []engine.KernelWork{
	{Name: "Linear", Launches: 120, FLOPs: 28_807_200_000, Bytes: 2_036_160_000},
	{Name: "LeakyReLU", Launches: 120, FLOPs: 7_200_000, Bytes: 57_600_000},
	{Name: "MSE", Launches: 1, FLOPs: 180_000, Bytes: 480_004},
	{Name: "MSEGrad", Launches: 1, FLOPs: 180_000, Bytes: 720_004},
	{Name: "LeakyReLUGrad", Launches: 120, FLOPs: 7_200_000, Bytes: 86_400_000},
	{Name: "LinearInputGrad", Launches: 119, FLOPs: 28_560_000_000, Bytes: 1_961_120_000},
	{Name: "LinearWeightGrad", Launches: 120, FLOPs: 28_800_000_000, Bytes: 1_977_600_000},
	{Name: "LinearBiasGrad", Launches: 120, FLOPs: 7_200_000, Bytes: 29_760_000},
	{Name: "SumSquares", Launches: 240, FLOPs: 960_480_000, Bytes: 1_920_960_000},
	{Name: "AdamStep", Launches: 240, FLOPs: 6_723_360_000, Bytes: 13_446_720_000},
}, Launches: 1201, FLOPs: 93_873_000_000, Bytes: 21_517_520_008}

func TestWritePlanDefault(t *testing.T) {
	golden(t, "plan_linear.golden", written(t, func(w io.Writer) error { return WritePlan(w, linearPlan) }))
	golden(t, "plan_linear_json.golden", written(t, func(w io.Writer) error { return WritePlanJSON(w, linearPlan) }))
}

// TestPlanGoldensFit reads the default text plans in testdata, those on a
// simulated device (sim:8GiB) and on a profiled one (sim:rtx4060-laptop,
// with predictions), each with a "no: device" row, and checks that every
// line fits maxWidth columns.
func TestPlanGoldensFit(t *testing.T) {
	for _, name := range []string{"plan_linear.golden", "plan_predicted.golden"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		if !strings.Contains(text, "no: device") || !strings.Contains(text, "sim:") {
			t.Errorf("%s: no sim: device or no \"no: device\" row:\n%s", name, text)
		}
		checkFits(t, text)
	}
}

// bf16Plan is the linear plan evaluating in bf16: the parameters and
// activations stored in 16 bits, no gradients or optimizer state.
var bf16Plan = func() bench.MemoryPlan {
	p := linearPlan
	p.Header.Task, p.Header.Precision = string(bench.TaskEval), "bf16"
	sp := p.Schedules[0]
	sp.Bytes.Parameters, sp.Bytes.Optimizer, sp.Bytes.Saved, sp.Bytes.Arena, sp.Gradients = 960_480_000, 0, 0, 240_000, 0
	p.Schedules = []bench.SchedulePlan{sp}
	p.Modes = nil
	for _, m := range linearPlan.Modes[:2] {
		m.Footprint.Device, m.HostNeed = 960_960_004, 960_960_004
		if _, paged := m.Placement.Paging(); paged {
			m.Footprint.Device = 240_240_004
		}
		m.FitsDevice = m.Footprint.Device <= m.DeviceFree
		m.Copies = engine.Copies{UploadBytes: 480_000, DownloadBytes: 0, Count: 2}
		p.Modes = append(p.Modes, m)
	}
	return p
}()

// TestWritePlanPrecision renders a bf16 plan: the precision in its title
// and a note, in the JSON's header and the picture's title.
func TestWritePlanPrecision(t *testing.T) {
	checkGoldens(t, []goldenCase{
		{"plan_bf16.golden", func(w io.Writer) error { return WritePlan(w, bf16Plan) }},
		{"plan_bf16_json.golden", func(w io.Writer) error { return WritePlanJSON(w, bf16Plan) }},
	})
}

// recomputePlan is the linear plan of the cuda and window modes under
// recompute none and blocks, with 4 GiB of the 8 GiB device taken by
// --take: blocks keeps each block's input (12 of the 120 saved
// activations) and runs the forward again, one more Linear and LeakyReLU
// per layer.
var recomputePlan = func() bench.MemoryPlan {
	p := linearPlan
	p.Header.TakeBytes = 4 << 30
	p.Header.Recompute = "none,blocks"
	blocks := p.Schedules[0]
	blocks.Recompute = levers.RecomputeBlocks
	blocks.Bytes.Saved, blocks.Bytes.Arena = 5_760_000, 164_880_000
	blocks.Work.Kernels = slices.Clone(blocks.Work.Kernels)
	blocks.Work.Kernels[0].Launches, blocks.Work.Kernels[0].FLOPs = 240, 2*28_807_200_000
	blocks.Work.Kernels[1].Launches, blocks.Work.Kernels[1].FLOPs = 240, 2*7_200_000
	blocks.Work.Launches, blocks.Work.FLOPs = 1441, 93_873_000_000+28_807_200_000+7_200_000
	p.Schedules = append(slices.Clone(p.Schedules), blocks)
	p.Modes = nil
	for _, m := range linearPlan.Modes[:2] {
		m.Recompute = levers.RecomputeNone
		m.DeviceTotal = 8 << 30
		b := m
		b.Recompute = levers.RecomputeBlocks
		b.Footprint.Device -= 57_600_000 - 5_760_000 - (164_880_000 - 160_560_000)
		b.FitsDevice = b.Footprint.Device <= b.DeviceFree
		p.Modes = append(p.Modes, m, b)
	}
	return p
}()

// recomputeEval is recomputePlan evaluating, where blocks changes nothing
// and the note says so.
var recomputeEval = func() bench.MemoryPlan {
	p := recomputePlan
	p.Header.Task = string(bench.TaskEval)
	p.Schedules = slices.Clone(p.Schedules)
	p.Schedules[1] = p.Schedules[0]
	p.Schedules[1].Recompute = levers.RecomputeBlocks
	p.Modes = slices.Clone(p.Modes)
	for i := 1; i < len(p.Modes); i += 2 {
		p.Modes[i] = p.Modes[i-1]
		p.Modes[i].Recompute = levers.RecomputeBlocks
	}
	return p
}()

// TestWritePlanRecompute renders a plan of two recompute settings with
// --take in every format: the kinds under each setting, the extra FLOPs,
// a recompute column in both tables, the take's note; evaluating, the
// note that recompute changes nothing.
func TestWritePlanRecompute(t *testing.T) {
	var cases []goldenCase
	for _, f := range []struct {
		golden string
		opts   Options
	}{
		{"plan_recompute.golden", Options{Format: FormatText}},
		{"plan_recompute_wide.golden", Options{Format: FormatText, Wide: true}},
		{"plan_recompute.md.golden", Options{Format: FormatMarkdown}},
		{"plan_recompute.csv.golden", Options{Format: FormatCSV}},
		{"plan_recompute_json.golden", Options{Format: FormatJSON}},
	} {
		cases = append(cases, goldenCase{f.golden, func(w io.Writer) error { return WritePlanAs(w, recomputePlan, f.opts) }})
	}
	checkGoldens(t, append(cases, goldenCase{"plan_recompute_eval.golden", func(w io.Writer) error { return WritePlan(w, recomputeEval) }}))
	data, err := os.ReadFile(filepath.Join("testdata", "plan_recompute.golden"))
	if err != nil {
		t.Fatal(err)
	}
	checkFits(t, string(data))
}

// TestPlanOptimizerNote: the optimizer state holds the fp32 master
// weights too when training in 16 bits, and says so.
func TestPlanOptimizerNote(t *testing.T) {
	for _, tt := range []struct {
		task      bench.Task
		precision string
		want      string
	}{
		{bench.TaskTrain, "", "Adam's two moments"},
		{bench.TaskTrain, "fp32", "Adam's two moments"},
		{bench.TaskTrain, "bf16", "Adam's two moments and the fp32 master weights"},
		{bench.TaskTrain, "fp16", "Adam's two moments and the fp32 master weights"},
		{bench.TaskEval, "bf16", "Adam's two moments"},
	} {
		p := linearPlan
		p.Header.Task, p.Header.Precision = string(tt.task), tt.precision
		for _, k := range planKinds(p) {
			if k.name == "optimizer state" && k.note != tt.want {
				t.Errorf("%s %q: optimizer state's note %q, want %q", tt.task, tt.precision, k.note, tt.want)
			}
		}
	}
}
