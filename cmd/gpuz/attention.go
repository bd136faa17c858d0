package main

import (
	"io"

	"github.com/spf13/cobra"

	"gpuz/internal/models"
)

// attentionWorkload is gpuz attention.
var attentionWorkload = workloadDef{
	name:  "attention",
	short: "A causal self-attention decoder: 12 layers of 8 heads, d_model 512, sequences of 512 tokens",
	long: `The attention workload: token ids (uniform below --vocab) are embedded and
given fixed sinusoidal positions, pass through decoder layers, each
x = LayerNorm(x + MultiheadAttention(x)) with causal heads, then
x = LayerNorm(x + Linear(x)), and a final Linear to the vocabulary. It is
trained with cross-entropy to predict each token's id, in 14 blocks (the
head, the embedding and each layer), each with its gradient norm clipped to
1 and its own Adam. MODES is a comma list of cuda (or gpu), cache and cpu;
the default is all three.`,
	example: `  gpuz attention train cuda,cache,cpu
  gpuz attention train cpu --scale small
  gpuz attention eval cpu --epochs 3 --seq-len 256`,
	sizes: []sizeDef{
		{"vocab", "token ids, rows of the embedding and outputs of the head (default: the preset's)"},
		{"d-model", "width of the model, even and a multiple of --heads (default: the preset's)"},
		{"heads", "attention heads per layer (default: the preset's)"},
		{"layers", "decoder layers, one block each (default: the preset's)"},
		{"seq-len", "tokens per sequence (default: the preset's)"},
	},
	preset: func(scale string) (workloadConfig, map[string]*int, error) {
		cfg, err := models.AttentionPreset(scale)
		if err != nil {
			return nil, nil, err
		}
		return &cfg, map[string]*int{"vocab": &cfg.Vocab, "d-model": &cfg.DModel, "heads": &cfg.Heads, "layers": &cfg.Layers, "seq-len": &cfg.SeqLen,
			"batch": &cfg.Batch, "samples": &cfg.Samples, "epochs": &cfg.Epochs}, nil
	},
}

func newAttentionCmd(stdout, stderr io.Writer) *cobra.Command {
	return newWorkloadCmd(attentionWorkload, stdout, stderr)
}
