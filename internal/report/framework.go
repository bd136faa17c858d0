package report

import (
	"strings"

	"gpuz/internal/bench"
	"gpuz/internal/torchplan"
	"gpuz/internal/units"
)

// This file is a plan's PyTorch lines (plan --framework torch): what
// PyTorch with transformers holds at the peak of the same training step,
// kind by kind, beside gpuz's own figure of the first schedule planned.

// frameworkHeading names the framework and the Python that sets its
// levers.
func frameworkHeading(tp *torchplan.Plan) string {
	return tp.Framework.Title() + " (--framework " + string(tp.Framework) + "): " + tp.Python
}

// frameworkTable is the kinds as rows: PyTorch's bytes, gpuz's, and
// what each holds; the saved activations then by op.
func frameworkTable(p bench.MemoryPlan, tp *torchplan.Plan) table {
	var b bench.SchedulePlan
	if len(p.Schedules) > 0 {
		b = p.Schedules[0]
	}
	params := b.Bytes.Parameters + b.Bytes.Frozen
	gpuzPeak := ""
	for _, m := range p.Modes {
		if m.Device != "" {
			gpuzPeak = units.Bytes(m.Footprint.Device)
			break
		}
	}
	t := table{columns: []column{{"kind", true}, {"PyTorch", false}, {"gpuz", false}, {"PyTorch holds", true}}}
	row := func(kind string, torch int64, gpuz, note string) {
		t.rows = append(t.rows, []string{kind, units.Bytes(torch), gpuz, note})
	}
	if tp.Eval {
		row("parameters", tp.Parameters, units.Bytes(params), units.Count(tp.ParameterCount)+" weights as loaded, float32")
		row("16-bit weight copies", tp.WeightCopies, "-", "autocast's, cached for the pass")
		row("activations at the peak", tp.Live, units.Bytes(b.Bytes.Arena+b.Bytes.Inputs), "alive at once, by the op that made them below")
		for _, op := range tp.LiveByOp {
			row("  "+op.Op, op.Bytes, "", "")
		}
		row("  of which log-softmax", tp.LogSoftmax, "", "the loss's, float32")
		row("peak", tp.Peak, gpuzPeak, "gpuz: the first mode's device need")
		t.notes = []string{
			"an evaluation pass under torch.no_grad(): nothing is saved; the peak is the parameters and the largest set of tensors alive at once (gpuz: its arena and a batch's inputs)",
			"the walk follows docs/llm.md's rules; torch-1.13's equals PyTorch 1.13's to the byte (TestEvalMatchesTorch), sdpa's (torch) is not yet measured",
		}
		return t
	}
	row("parameters", tp.Parameters, units.Bytes(params), units.Count(tp.ParameterCount)+" weights as loaded, float32")
	row("16-bit weight copies", tp.WeightCopies, "-", "autocast's, saved by the products")
	row("gradients", tp.Gradients, units.Bytes(b.Gradients), units.Count(tp.TrainedCount)+" trained, float32")
	row("optimizer state", tp.Moments, units.Bytes(b.Bytes.Optimizer), "AdamW's two moments")
	row("saved activations", tp.Saved, units.Bytes(b.Bytes.Saved), "by op below")
	for _, op := range tp.SavedByOp {
		row("  "+op.Op, op.Bytes, "", "")
	}
	row("  of which log-softmax", tp.LogSoftmax, "", "the loss's, float32")
	row("backward transient", tp.Transient, units.Bytes(b.Bytes.Arena), "gpuz: its arena")
	row("peak", tp.Peak, gpuzPeak, "gpuz: the first mode's device need")
	t.notes = []string{
		"backward transient: the loss's float32 gradients of the output (an llm's two of the logits, nll_loss's and log_softmax's), or under checkpointing one decoder layer's saved tensors re-made, the larger",
		"peak: parameters, moments and the larger of what the backward pass starts with (weight copies, saved activations, transient) and the gradients it ends with",
		"the saved tensors follow docs/llm.md's rules; torch-1.13's equal PyTorch 1.13's to the byte (TestSavedMatchesTorch, TestSyntheticSavedMatchesTorch), torch's 2.x rows, the transient and the peak are not yet measured",
	}
	return t
}

// writeFrameworkText writes the heading and the table as text, then a
// blank line.
func writeFrameworkText(b *strings.Builder, p bench.MemoryPlan, tp *torchplan.Plan) {
	for _, line := range wrap(frameworkHeading(tp), maxWidth) {
		b.WriteString(line + "\n")
	}
	frameworkTable(p, tp).writeText(b)
	b.WriteString("\n")
}

// jsonFramework is PyTorch's plan in the plan's JSON, bytes by kind.
type jsonFramework struct {
	Name      string           `json:"name"`
	Task      string           `json:"task"`
	Python    string           `json:"python"`
	Bytes     jsonTorchBytes   `json:"bytes"`
	SavedByOp []jsonTorchSaved `json:"saved_by_op"`
	LiveByOp  []jsonTorchSaved `json:"live_by_op"`
}

// jsonTorchBytes are torchplan.Plan's kinds.
type jsonTorchBytes struct {
	Parameters   int64 `json:"parameters"`
	WeightCopies int64 `json:"weight_copies"`
	Gradients    int64 `json:"gradients"`
	Optimizer    int64 `json:"optimizer"`
	Saved        int64 `json:"saved_activations"`
	LogSoftmax   int64 `json:"log_softmax"`
	Transient    int64 `json:"backward_transient"`
	Live         int64 `json:"live_activations"`
	Peak         int64 `json:"peak"`
}

// jsonTorchSaved is one op's saved bytes.
type jsonTorchSaved struct {
	Op    string `json:"op"`
	Bytes int64  `json:"bytes"`
}

// frameworkJSON is tp in the JSON, nil for nil.
func frameworkJSON(tp *torchplan.Plan) *jsonFramework {
	if tp == nil {
		return nil
	}
	task := "train"
	if tp.Eval {
		task = "eval"
	}
	j := &jsonFramework{Name: string(tp.Framework), Task: task, Python: tp.Python, SavedByOp: []jsonTorchSaved{}, LiveByOp: []jsonTorchSaved{},
		Bytes: jsonTorchBytes{Parameters: tp.Parameters, WeightCopies: tp.WeightCopies, Gradients: tp.Gradients,
			Optimizer: tp.Moments, Saved: tp.Saved, LogSoftmax: tp.LogSoftmax, Transient: tp.Transient, Live: tp.Live, Peak: tp.Peak}}
	for _, op := range tp.SavedByOp {
		j.SavedByOp = append(j.SavedByOp, jsonTorchSaved(op))
	}
	for _, op := range tp.LiveByOp {
		j.LiveByOp = append(j.LiveByOp, jsonTorchSaved(op))
	}
	return j
}
