package main

import (
	"strings"

	"github.com/spf13/pflag"

	"gpuz/internal/bench"
	"gpuz/internal/levers"
	"gpuz/internal/models"
	"gpuz/internal/torchplan"
)

// addFrameworkFlag adds --framework to a workload's plan and fit.
func addFrameworkFlag(fs *pflag.FlagSet, o *WorkloadOptions) {
	names := make([]string, len(torchplan.Frameworks))
	for i, f := range torchplan.Frameworks {
		names[i] = string(f)
	}
	fs.StringVar(&o.Framework, "framework", string(torchplan.Gpuz), "the framework planned (plan: beside gpuz's own; fit: PyTorch's configurations ranked in its place): "+strings.Join(names, ", ")+
		" (torch: PyTorch 2.x with transformers, torch-1.13: PyTorch 1.13; llm: a training step or an evaluation pass, --precision bf16 is autocast over float32 weights, --recompute blocks gradient checkpointing (training), --lora PEFT's LoRA, --attention fused transformers' sdpa, torch-1.13 eager; linear, resnet, attention: plan's training step as scripts/torch_reference.py writes it, fp32 or bf16 autocast)")
}

// frameworkPlan is PyTorch's plan of the step opts runs, under
// --framework; nil for gpuz. Its errors are usage errors.
func (o *WorkloadOptions) frameworkPlan(opts bench.Options) (*torchplan.Plan, error) {
	fw, err := o.framework()
	if err != nil || !fw.IsTorch() {
		return nil, err
	}
	if _, ok := opts.Workload.(*models.LLMConfig); !ok {
		s, err := syntheticStep(fw, o.Workload.Name, opts)
		if err != nil {
			return nil, err
		}
		p, err := torchplan.PlanSynthetic(s, fw)
		if err != nil {
			return nil, usagef("--framework %s: %v", fw, err)
		}
		return &p, nil
	}
	step, err := torchStep(fw, opts)
	if err != nil {
		return nil, err
	}
	if opts.LoRA.Rank > 0 {
		if step, err = withLoRA(step, opts, opts.LoRA); err != nil {
			return nil, err
		}
	}
	p, err := torchplan.PlanStep(step, fw)
	if err != nil {
		return nil, usagef("--framework %s: %v", fw, err)
	}
	return &p, nil
}

// framework reads --framework ("" is gpuz).
func (o *WorkloadOptions) framework() (torchplan.Framework, error) {
	if o.Framework == "" {
		return torchplan.Gpuz, nil
	}
	fw, err := torchplan.ParseFramework(o.Framework)
	if err != nil {
		return "", usagef("--framework: %v", err)
	}
	return fw, nil
}

// torchStep is the training step or evaluation pass opts describes as fw
// runs it, without LoRA: --precision bf16 as autocast, --recompute blocks
// as gradient checkpointing (training), --attention fused as SDPA
// (torch-1.13: eager). Its errors are usage errors.
func torchStep(fw torchplan.Framework, opts bench.Options) (torchplan.Step, error) {
	llm, ok := opts.Workload.(*models.LLMConfig)
	if !ok || opts.Task != bench.TaskTrain && opts.Task != bench.TaskEval {
		return torchplan.Step{}, usagef("--framework %s plans the llm workload's training step and evaluation pass (gpuz plan llm train|eval)", fw)
	}
	eval := opts.Task == bench.TaskEval
	step := torchplan.Step{Model: llm.Model.Config, Layers: llm.Layers, Batch: opts.Batch, SeqLen: llm.SeqLen, Eval: eval,
		Checkpoint: !eval && opts.Recompute.Setting() == levers.RecomputeBlocks,
		// PyTorch 1.13 has no scaled_dot_product_attention: its attention
		// is eager whatever --attention says.
		SDPA: fw == torchplan.Torch && opts.Attention.Or(llm.Attention).Or(levers.AttentionFused).Fused()}
	switch opts.Precision.Setting() {
	case levers.FP32:
	case levers.BF16:
		step.Autocast = true
	default:
		return torchplan.Step{}, usagef("--framework %s plans --precision fp32 and bf16 (autocast); %s is not planned", fw, opts.Precision)
	}
	return step, nil
}

// syntheticStep is the training step of a synthetic workload (linear,
// resnet, attention) opts describes, as scripts/torch_reference.py runs
// it: fp32, or --precision bf16 as autocast. Its errors are usage
// errors.
func syntheticStep(fw torchplan.Framework, name string, opts bench.Options) (torchplan.Synthetic, error) {
	s := torchplan.Synthetic{Batch: opts.Batch}
	if opts.Task != bench.TaskTrain {
		return s, usagef("--framework %s plans a synthetic workload's training step (gpuz plan %s train)", fw, name)
	}
	switch opts.Precision.Setting() {
	case levers.FP32:
	case levers.BF16:
		s.Autocast = true
	default:
		return s, usagef("--framework %s plans --precision fp32 and bf16 (autocast); %s is not planned", fw, opts.Precision)
	}
	switch c := opts.Workload.(type) {
	case *models.LinearConfig:
		if c.LoRA.Rank > 0 {
			return s, usagef("--framework %s does not plan the linear workload's LoRA", fw)
		}
		s.Workload, s.Blocks, s.Layers, s.Dims = torchplan.Linear, c.Blocks, c.LayersPerBlock, c.Dims
	case *models.ResnetConfig:
		s.Workload, s.Levels, s.Channels, s.Mid, s.Image, s.Kernel = torchplan.Resnet, c.Levels, c.Channels, c.MidChannels, c.ImageSize, c.Kernel
	case *models.AttentionConfig:
		if c.LoRA.Rank > 0 || opts.Attention.Or(c.Attention).Fused() {
			return s, usagef("--framework %s plans the attention workload as torch_reference.py runs it: eager, without LoRA", fw)
		}
		s.Workload, s.Vocab, s.DModel, s.Heads, s.Layers, s.SeqLen = torchplan.Attention, c.Vocab, c.DModel, c.Heads, c.Layers, c.SeqLen
	default:
		return s, usagef("--framework %s has no PyTorch form of the %s workload", fw, name)
	}
	return s, nil
}

// withLoRA is step with PEFT's adapters of l on the targets the llm
// workload of opts resolves for it.
func withLoRA(step torchplan.Step, opts bench.Options, l levers.LoRA) (torchplan.Step, error) {
	llm := *opts.Workload.(*models.LLMConfig)
	llm.LoRA = l
	targets, err := llm.LoRATargets()
	if err != nil {
		return step, usage(err)
	}
	step.LoRARank, step.LoRATargets = l.Rank, targets
	return step, nil
}
