package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"gpuz/internal/levers"
)

// addLoRAFlags adds --lora (sweepable), --lora-alpha and --lora-targets to
// a workload whose linear layers LoRA adapts; layers names them and def
// says the default targets, for the help.
func addLoRAFlags(lists *listFlags, fs *pflag.FlagSet, o *WorkloadOptions, layers, def string) {
	lists.add(fs, "lora", "ints", "0", "LoRA's rank R: train low-rank adapters on the --lora-targets layers, A (R × in) and B (out × R, zeros at first), y = x·Wᵀ + (α/R)·(x·Aᵀ)·Bᵀ, as Hugging Face PEFT does, every other weight frozen (no gradient, no optimizer state, no update; under --precision bf16 or fp16 stored in 16 bits with no fp32 master); 0 trains every weight; a comma list sweeps")
	fs.Float64Var(&o.LoRA.Alpha, "lora-alpha", 0, "LoRA's α: the adapters' product is scaled by α/R (default R, a scale of 1, as PEFT's)")
	fs.StringVar(&o.LoRA.Targets, "lora-targets", "", fmt.Sprintf("the layers LoRA adapts: a comma list of %s, or %s (every one; the output head is never a target) (default %s)", layers, levers.AllLinear, def))
}
