package main

import (
	"github.com/spf13/pflag"

	"gpuz/internal/levers"
	"gpuz/internal/models"
)

// attentionWorkload is gpuz attention.
var attentionWorkload = workloadDef{
	workload: models.Attention,
	short:    "A causal self-attention decoder: 12 layers of 8 heads, d_model 512, sequences of 512 tokens",
	long: `The attention workload: token ids (uniform below --vocab) are embedded and
given fixed sinusoidal positions, pass through decoder layers, each
x = LayerNorm(x + MultiheadAttention(x)) with causal heads, then
x = LayerNorm(x + Linear(x)), and a final Linear to the vocabulary. It is
trained with cross-entropy to predict each token's id, in 14 blocks (the
head, the embedding and each layer), each with its gradient norm clipped to
1 and its own Adam. MODES is a comma list of cuda (or gpu), cache and cpu;
the default is all three.`,
	flags: func(fs *pflag.FlagSet, lists *listFlags, o *WorkloadOptions) {
		addAttentionFlag(lists, fs, levers.AttentionEager)
		addLoRAFlags(lists, fs, o, "in_proj, out_proj and ff (each decoder layer's)", "in_proj")
	},
	example: `  gpuz attention train cuda,cache,cpu
  gpuz attention train cpu --scale small
  gpuz attention eval cpu --epochs 3 --seq-len 256`,
}
