package levers

import "gpuz/internal/quant"

// Lever names a lever as its flag does (--recompute, --precision,
// --attention, --lora, --weights, --grad-accum).
type Lever string

// The levers.
const (
	LeverRecompute Lever = "recompute"
	LeverPrecision Lever = "precision"
	LeverAttention Lever = "attention"
	LeverLoRA      Lever = "lora"
	LeverWeights   Lever = "weights"
	LeverGradAccum Lever = "grad-accum"
)

// Set is every lever's setting, the one value that the flags, a plan and
// fit's candidates fill and that a run applies where it builds its
// workload: the model's levers (attention, LoRA) through models.Apply,
// the schedule's (recompute, precision) through engine.Spec. Its zero
// value is every lever's default; for attention and LoRA, the workload's
// own setting.
type Set struct {
	// Recompute is the recompute lever (--recompute): with
	// RecomputeBlocks a training run keeps only each block's input and
	// runs the block's forward again before its gradients; "" is none.
	// Every workload takes it; evaluation saves nothing and is unchanged.
	Recompute Recompute
	// Precision is the storage precision on the compute device
	// (--precision): fp32, or bf16 or fp16 under automatic mixed
	// precision's rules, with float32 masters in training and fp16's loss
	// scaled dynamically; "" is fp32. Every workload takes it.
	Precision Precision
	// Attention is how the model computes attention (--attention): eager
	// or fused; "" keeps the workload's own setting. Only a workload with
	// attention layers takes another value.
	Attention Attention
	// LoRA is low-rank adaptation (--lora, --lora-alpha, --lora-targets):
	// the adapters trained, every other weight frozen; the zero value
	// keeps the workload's own setting. Only a workload with linear layers
	// to adapt takes another value.
	LoRA LoRA
	// Weights is the storage of the frozen weights (--weights): a
	// quantized kind (quant.Kind.Quantized) stores every weight that only
	// a product reads, when it is not trained (evaluation, generation,
	// LoRA's base), in that kind's blocks; quant.F32, the zero value,
	// leaves them as Precision stores them. Only the llm workload's
	// Llama-family decoders take a quantized kind.
	Weights quant.Kind
	// GradAccum is gradient accumulation (--grad-accum K): each training
	// step's batch runs as K micro-batches whose gradients are added
	// before one optimizer step, the model built for a micro-batch
	// (models.Apply) and the schedule accumulating (engine.Spec); 0 is
	// 1, none. Every workload takes it in training; evaluation and
	// generation refuse K > 1.
	GradAccum GradAccum
}

// Given returns the levers s sets away from their zero value, in Set's
// order.
func (s Set) Given() []Lever {
	var out []Lever
	if s.Recompute != "" {
		out = append(out, LeverRecompute)
	}
	if s.Precision != "" {
		out = append(out, LeverPrecision)
	}
	if s.Attention != "" {
		out = append(out, LeverAttention)
	}
	if s.LoRA != (LoRA{}) {
		out = append(out, LeverLoRA)
	}
	if s.Weights != quant.F32 {
		out = append(out, LeverWeights)
	}
	if s.GradAccum != 0 {
		out = append(out, LeverGradAccum)
	}
	return out
}
