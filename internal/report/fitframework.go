package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"gpuz/internal/torchplan"
	"gpuz/internal/units"
)

// FrameworkFit is fit --framework torch's result: PyTorch configurations
// of one model and sequence length ranked (torchplan.Rank) against the
// device's budget.
type FrameworkFit struct {
	Framework  torchplan.Framework
	Model      string
	SeqLen     int
	Device     string
	DeviceFree int64 // free memory less --take
	Budget     int64 // DeviceFree less the margin
	Margin     float64
	Choices    []torchplan.Choice
}

// WriteFrameworkFit writes f in format: a table of the choices, ranked,
// each with the Python a user sets, its batch, its planned peak and
// whether it fits; CSV in bytes; JSON.
func WriteFrameworkFit(w io.Writer, f FrameworkFit, format Format) error {
	title := fmt.Sprintf("Fit of %s for %s %s, sequences of %d, on %s: budget %s (%s free, margin %g%%)",
		f.Framework.Title(), f.Model, f.task(), f.SeqLen, f.Device, units.Bytes(f.Budget), units.Bytes(f.DeviceFree), f.Margin)
	build := func() table {
		// The model's Python (LoRA, attention) is a column when the rows
		// differ in it (fit --lora 0,16), else a note.
		shared := ""
		if len(f.Choices) > 0 {
			shared = f.Choices[0].Step.ModelPython()
		}
		for _, c := range f.Choices {
			if c.Step.ModelPython() != shared {
				shared = ""
			}
		}
		t := table{columns: []column{{"#", false}, {"peak", false}, {"fits", true}, {"TrainingArguments(…)", true}}}
		if shared == "" {
			t.columns = append(t.columns, column{"model", true})
		}
		for i, c := range f.Choices {
			row := []string{strconv.Itoa(i + 1), units.Bytes(c.Plan.Peak), yesNo(c.Fits), c.Step.TrainingArguments()}
			if shared == "" {
				row = append(row, c.Step.ModelPython())
			}
			t.rows = append(t.rows, row)
		}
		if shared != "" {
			t.notes = append(t.notes, "model: "+shared)
		}
		t.notes = append(t.notes,
			"order: those that fit first, then the larger batch, without gradient checkpointing before with, bf16 before fp32, the smaller peak; no time is predicted",
			"peak: gpuz plan llm "+f.task()+" --framework "+string(f.Framework)+"'s, planned from the rules of docs/llm.md (\"What PyTorch would hold\"), not measured")
		return t
	}
	return writeAs(w, format, formatWriters{
		text: func(b *strings.Builder) error {
			for _, line := range wrap(title, maxWidth) {
				b.WriteString(line + "\n")
			}
			build().writeText(b)
			return nil
		},
		markdown: func(b *strings.Builder) error {
			b.WriteString(title + "\n\n")
			build().writeMarkdown(b)
			return nil
		},
		csv: func(b *strings.Builder) error {
			var recs [][]string
			for i, c := range f.Choices {
				recs = append(recs, []string{strconv.Itoa(i + 1), strconv.Itoa(c.Step.Batch), strconv.FormatInt(c.Plan.Peak, 10),
					strconv.FormatBool(c.Fits), strconv.FormatBool(c.Step.Autocast), strconv.FormatBool(c.Step.Checkpoint),
					strconv.Itoa(c.Step.LoRARank), c.Step.Python()})
			}
			return writeCSV(b, []string{"rank", "batch", "peak_bytes", "fits", "bf16", "gradient_checkpointing", "lora_rank", "python"}, recs)
		},
		json: func(w io.Writer) error { return writeFrameworkFitJSON(w, f) },
	})
}

// task is the fit's task: eval when its choices are evaluation passes.
func (f FrameworkFit) task() string {
	if len(f.Choices) > 0 && f.Choices[0].Step.Eval {
		return "eval"
	}
	return "train"
}

// yesNo is a fit's cell.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// writeFrameworkFitJSON writes f as one JSON document.
func writeFrameworkFitJSON(w io.Writer, f FrameworkFit) error {
	type choice struct {
		Batch      int            `json:"batch"`
		BF16       bool           `json:"bf16"`
		Checkpoint bool           `json:"gradient_checkpointing"`
		LoRARank   int            `json:"lora_rank"`
		Python     string         `json:"python"`
		Fits       bool           `json:"fits"`
		Bytes      jsonTorchBytes `json:"bytes"`
	}
	doc := struct {
		Kind       string   `json:"kind"`
		Task       string   `json:"task"`
		Framework  string   `json:"framework"`
		Model      string   `json:"model"`
		SeqLen     int      `json:"seq_len"`
		Device     string   `json:"device"`
		DeviceFree int64    `json:"device_free"`
		Budget     int64    `json:"budget"`
		Margin     float64  `json:"margin_percent"`
		Choices    []choice `json:"choices"`
	}{Kind: "framework-fit", Task: f.task(), Framework: string(f.Framework), Model: f.Model, SeqLen: f.SeqLen, Device: f.Device,
		DeviceFree: f.DeviceFree, Budget: f.Budget, Margin: f.Margin, Choices: []choice{}}
	for _, c := range f.Choices {
		doc.Choices = append(doc.Choices, choice{Batch: c.Step.Batch, BF16: c.Step.Autocast, Checkpoint: c.Step.Checkpoint,
			LoRARank: c.Step.LoRARank, Python: c.Step.Python(), Fits: c.Fits, Bytes: frameworkJSON(&c.Plan).Bytes})
	}
	return encodeJSON(w, doc)
}
