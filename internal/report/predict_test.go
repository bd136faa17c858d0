package report

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"gpuz/internal/bench"
	"gpuz/internal/perfmodel"
)

// prediction returns a prediction on profile of model and bound seconds,
// limited by limiter.
func prediction(profile string, model, bound float64, limiter string) *bench.Prediction {
	return &bench.Prediction{Profile: profile, Prediction: perfmodel.Prediction{
		Model: time.Duration(model * 1e9), Bound: time.Duration(bound * 1e9), Copy: time.Duration(model * 0.9e9), Limiter: limiter}}
}

var (
	// predictedResult: the full-scale linear eval on sim:rtx4060-laptop
	// with the cpu mode predicted on the reference laptop's CPU.
	predictedResult = bench.Result{
		Header: linearHeader,
		Modes: []bench.ModeResult{
			{Mode: bench.ModeCUDA, Simulated: true, Device: "sim:rtx4060-laptop", Epochs: withCopies(epochs(0.9, 0.31, 0.30, 0.32), 0, 0, 0), Warmup: 1,
				PeakDeviceBytes: 1_921_440_004, Status: bench.Status{Kind: bench.StatusOK},
				Prediction: prediction("rtx4060-laptop", 0.0105, 0.00543, perfmodel.LimitCompute)},
			{Mode: bench.ModeCache, Simulated: true, Device: "sim:rtx4060-laptop", Placement: "window 3/12", PlacementKeys: windowKeys("3"), Epochs: withCopies(epochs(1.9, 1.21, 1.25, 1.22), 3<<30, 3<<30, time.Second), Warmup: 1,
				PeakDeviceBytes: 481 << 20, Status: bench.Status{Kind: bench.StatusOK},
				Prediction: prediction("rtx4060-laptop", 1.44, 0.49, perfmodel.LimitCopy)},
			{Mode: bench.ModeCPU, Device: "host", Epochs: epochs(0.5, 0.41, 0.40, 0.42), Warmup: 1, Status: bench.Status{Kind: bench.StatusOK},
				Prediction: prediction("cpu-i7-13700h", 0.0611, 0.0402, perfmodel.LimitCompute)},
		},
		PeakRSSBytes: 4_100_000_000,
	}

	// predictedGPUResult: the attention eval on a real GPU with a profile:
	// cuda within 3× its model time, cache flagged at 6.8×.
	predictedGPUResult = func() bench.Result {
		r := evalResult
		r.Modes = slices.Clone(r.Modes)
		r.Modes[0].Prediction = prediction("rtx4060-laptop", 0.305, 0.122, perfmodel.LimitCompute)
		r.Modes[1].Prediction = prediction("rtx4060-laptop", 0.1, 0.05, perfmodel.LimitCompute)
		return r
	}()

	// predictedPlan: the linear plan with each mode predicted.
	predictedPlan = func() bench.MemoryPlan {
		p := linearPlan
		p.Modes = slices.Clone(p.Modes)
		for i := range p.Modes {
			p.Modes[i].Device = strings.Replace(p.Modes[i].Device, "sim:8GiB", "sim:rtx4060-laptop", 1)
		}
		p.Modes[0].Prediction = prediction("rtx4060-laptop", 1.12, 0.98, perfmodel.LimitCompute)
		p.Modes[1].Prediction = prediction("rtx4060-laptop", 14.3, 5.61, perfmodel.LimitCopy)
		p.Modes[2].Prediction = prediction("rtx4060-laptop", 1.63, 0.98, perfmodel.LimitCompute)
		p.Modes[3].Prediction = prediction("cpu-i7-13700h", 7.93, 3.61, perfmodel.LimitMemory)
		return p
	}()
)

// TestPredictionGoldens renders results and a plan with predictions: the
// predicted column and its note on the simulated GPU and the host, the
// efficiency and flag on a real GPU, and the prediction's fields in CSV
// and JSON; the default text tables fit, the plan's (sim:rtx4060-laptop,
// a "no: device" row) included.
func TestPredictionGoldens(t *testing.T) {
	checkGoldens(t, []goldenCase{
		{"analyze_predicted.golden", func(w io.Writer) error { return WriteAnalyze(w, predictedResult) }},
		{"analyze_predicted_wide.golden", func(w io.Writer) error {
			return WriteResults(w, predictedResult, Options{Format: FormatText, Wide: true})
		}},
		{"analyze_predicted.md.golden", func(w io.Writer) error { return WriteResults(w, predictedResult, Options{Format: FormatMarkdown}) }},
		{"analyze_predicted.csv.golden", func(w io.Writer) error { return WriteResults(w, predictedResult, Options{Format: FormatCSV}) }},
		{"json_predicted.golden", func(w io.Writer) error { return WriteResults(w, withEnv(predictedResult), Options{Format: FormatJSON}) }},
		{"analyze_predicted_gpu.golden", func(w io.Writer) error { return WriteAnalyze(w, predictedGPUResult) }},
		{"plan_predicted.golden", func(w io.Writer) error { return WritePlan(w, predictedPlan) }},
		{"plan_predicted_wide.golden", func(w io.Writer) error { return WritePlanAs(w, predictedPlan, Options{Format: FormatText, Wide: true}) }},
		{"plan_predicted.csv.golden", func(w io.Writer) error { return WritePlanAs(w, predictedPlan, Options{Format: FormatCSV}) }},
		{"plan_predicted_json.golden", func(w io.Writer) error { return WritePlanJSON(w, predictedPlan) }},
	})
}

// TestPredictedCells checks the cells the predictions add: the model time
// with its bound in the column's unit, the efficiency and flag only on a
// real GPU's rows, and none without a prediction.
func TestPredictedCells(t *testing.T) {
	sim := analyzeTable(predictedResult, false)
	if got := cells(t, sim, 1, "predicted", "status"); got != "1440 (≥490)|ok" {
		t.Errorf("sim cache: predicted, status = %q", got)
	}
	for _, c := range sim.columns {
		if c.name == "eff." || strings.HasPrefix(c.name, "cold") || c.name == "speed-up" {
			t.Errorf("default table on sim with predictions has column %q", c.name)
		}
	}
	gpu := analyzeTable(predictedGPUResult, false)
	if got := cells(t, gpu, 0, "predicted", "eff.", "speed-up") + "/" + cells(t, gpu, 1, "predicted", "eff.") + "/" + cells(t, gpu, 2, "predicted", "eff."); got != "305 (≥122)|20%|10.33×/100 (≥50)|7% [1]/-|-" {
		t.Errorf("real GPU: predicted, eff. = %q", got)
	}
	if !slices.ContainsFunc(gpu.notes, func(n string) bool {
		return strings.HasPrefix(n, "[1] cache: measured 6.8× its model time on rtx4060-laptop; likely: copies")
	}) {
		t.Errorf("no flag note in %q", gpu.notes)
	}
	for _, c := range analyzeTable(evalResult, true).columns {
		if strings.HasPrefix(c.name, "predicted") || c.name == "eff." || c.name == "limiter" {
			t.Errorf("a run without predictions has column %q", c.name)
		}
	}
}
