package main

import (
	"context"
	"fmt"
	"io"

	"gpuz/internal/bench"
	"gpuz/internal/report"
	"gpuz/internal/torchplan"
)

// fitFrameworkRun is "gpuz fit llm train|eval --framework torch": PyTorch
// configurations of the model ranked against the device's free memory
// (torchplan.Rank): bf16 autocast or fp32, gradient checkpointing or
// not (training), each LoRA setting of --lora (none: full fine-tuning) and the
// batches 1, 2, 4 … up to --batch, each printed as the Python a user
// sets.
func fitFrameworkRun(ctx context.Context, o *FitOptions, fw torchplan.Framework) (err error) {
	if o.Workload.Name != "llm" {
		return usagef("fit --framework %s ranks the llm workload's PyTorch configurations; gpuz plan %s train --framework %s plans this one's step", fw, o.Workload.Name, fw)
	}
	loras, err := o.loraSettings()
	if err != nil {
		return err
	}
	if err := o.validate(); err != nil {
		return err
	}
	if o.Verify > 0 {
		return usagef("fit --framework %s plans PyTorch's configurations; --verify runs gpuz's: drop one", fw)
	}
	opts, take, err := o.searchOptions(ctx, bench.ResidentMode(true))
	if err != nil {
		return err
	}
	base, err := torchStep(fw, opts)
	if err != nil {
		return err
	}
	bases := []torchplan.Step{base}
	if loras != nil {
		bases = bases[:0]
		for _, l := range loras {
			s := base
			if l.Rank > 0 {
				if s, err = withLoRA(base, opts, l); err != nil {
					return err
				}
			}
			bases = append(bases, s)
		}
	}
	var batches []int
	for b := 1; b < opts.Batch; b *= 2 {
		batches = append(batches, b)
	}
	batches = append(batches, opts.Batch)
	var (
		p    *bench.Planner
		name string
		free int64
	)
	if !untilDone(ctx, func() { p, err = bench.NewPlanner(opts) }) {
		return errInterrupted
	}
	if err != nil {
		return fmt.Errorf("fitting %s %s: %w", o.Workload.Name, o.Task, err)
	}
	name, free, status := p.GPU()
	if err := p.Close(); err != nil {
		return err
	}
	if name == "" {
		return usagef("fit --framework %s needs a GPU to fit (--device cuda or sim:…): %s", fw, status)
	}
	f := report.FrameworkFit{Framework: fw, Model: o.modelName, SeqLen: base.SeqLen, Device: name, Margin: o.Margin}
	f.DeviceFree = max(free-take, 0)
	f.Budget = f.DeviceFree - int64(float64(f.DeviceFree)*o.Margin/100)
	if f.Choices, err = torchplan.Rank(bases, fw, batches, f.Budget); err != nil {
		return usagef("--framework %s: %v", fw, err)
	}
	if o.JSON != "" && o.JSON != "-" {
		return writeJSON(o.IO.Out, o.JSON, "the fit", func(w io.Writer) error {
			return report.WriteFrameworkFit(w, f, report.FormatJSON)
		})
	}
	return report.WriteFrameworkFit(o.IO.Out, f, o.format())
}
