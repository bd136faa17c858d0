package main

import (
	"strings"

	"github.com/spf13/pflag"

	"gpuz/internal/bench"
	"gpuz/internal/levers"
	"gpuz/internal/models"
	"gpuz/internal/torchplan"
)

// addFrameworkFlag adds a plan's --framework to the llm workload.
func addFrameworkFlag(fs *pflag.FlagSet, o *WorkloadOptions) {
	names := make([]string, len(torchplan.Frameworks))
	for i, f := range torchplan.Frameworks {
		names[i] = string(f)
	}
	fs.StringVar(&o.Framework, "framework", string(torchplan.Gpuz), "the framework planned beside gpuz's own: "+strings.Join(names, ", ")+
		" (torch: PyTorch 2.x with transformers, torch-1.13: PyTorch 1.13; a training step: --precision bf16 is autocast over float32 weights, --recompute blocks gradient checkpointing, --lora PEFT's LoRA, --attention fused transformers' sdpa; torch-1.13 is eager)")
}

// frameworkPlan is PyTorch's plan of the step opts runs, under
// --framework; nil for gpuz. Its errors are usage errors.
func (o *WorkloadOptions) frameworkPlan(opts bench.Options) (*torchplan.Plan, error) {
	if o.Framework == "" {
		return nil, nil
	}
	fw, err := torchplan.ParseFramework(o.Framework)
	if err != nil {
		return nil, usagef("--framework: %v", err)
	}
	if !fw.IsTorch() {
		return nil, nil
	}
	llm, ok := opts.Workload.(*models.LLMConfig)
	if !ok || opts.Task != bench.TaskTrain {
		return nil, usagef("--framework %s plans the llm workload's training step (gpuz plan llm train)", fw)
	}
	step := torchplan.Step{Model: llm.Model.Config, Layers: llm.Layers, Batch: opts.Batch, SeqLen: llm.SeqLen,
		Checkpoint: opts.Recompute.Setting() == levers.RecomputeBlocks,
		// PyTorch 1.13 has no scaled_dot_product_attention: its attention
		// is eager whatever --attention says.
		SDPA: fw == torchplan.Torch && opts.Attention.Or(llm.Attention).Or(levers.AttentionFused).Fused()}
	switch opts.Precision.Setting() {
	case levers.FP32:
	case levers.BF16:
		step.Autocast = true
	default:
		return nil, usagef("--framework %s plans --precision fp32 and bf16 (autocast); %s is not planned", fw, opts.Precision)
	}
	if opts.LoRA.Rank > 0 {
		lora := *llm
		lora.LoRA = opts.LoRA
		targets, err := lora.LoRATargets()
		if err != nil {
			return nil, usage(err)
		}
		step.LoRARank, step.LoRATargets = opts.LoRA.Rank, targets
	}
	p, err := torchplan.PlanStep(step, fw)
	if err != nil {
		return nil, usagef("--framework %s: %v", fw, err)
	}
	return &p, nil
}
