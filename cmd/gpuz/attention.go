package main

import (
	"io"

	"github.com/spf13/cobra"

	"gpuz/internal/bench"
	"gpuz/internal/kernels"
	"gpuz/internal/models"
)

// attentionOptions are the flags of gpuz attention.
type attentionOptions struct {
	runOptions
	Vocab, DModel, Heads, Layers, SeqLen int
}

func newAttentionCmd(stdout, stderr io.Writer) *cobra.Command {
	o := &attentionOptions{}
	cmd := &cobra.Command{
		Use:   "attention train|eval [MODES]",
		Short: "A causal self-attention decoder: 12 layers of 8 heads, d_model 512, sequences of 512 tokens",
		Long: `The attention workload: token ids (uniform below --vocab) are embedded and
given fixed sinusoidal positions, pass through decoder layers, each
x = LayerNorm(x + MultiheadAttention(x)) with causal heads, then
x = LayerNorm(x + Linear(x)), and a final Linear to the vocabulary. It is
trained with cross-entropy to predict each token's id, in 14 blocks (the
head, the embedding and each layer), each with its gradient norm clipped to
1 and its own Adam. MODES is a comma list of cuda (or gpu), cache and cpu;
the default is all three.`,
		Example: `  gpuz attention train cuda,cache,cpu
  gpuz attention train cpu --scale small
  gpuz attention eval cpu --epochs 3 --seq-len 256`,
		RunE: func(cmd *cobra.Command, args []string) error {
			task, modes, err := parseWorkloadArgs(args)
			if err != nil {
				return err
			}
			opts, err := o.benchOptions(cmd, task, modes)
			if err != nil {
				return err
			}
			return benchmark(cmd.Context(), stdout, stderr, &o.runOptions, opts)
		},
	}
	fs := cmd.Flags()
	addRunFlags(fs, &o.runOptions)
	fs.IntVar(&o.Vocab, "vocab", 0, "token ids, rows of the embedding and outputs of the head (default: the preset's)")
	fs.IntVar(&o.DModel, "d-model", 0, "width of the model, even and a multiple of --heads (default: the preset's)")
	fs.IntVar(&o.Heads, "heads", 0, "attention heads per layer (default: the preset's)")
	fs.IntVar(&o.Layers, "layers", 0, "decoder layers, one block each (default: the preset's)")
	fs.IntVar(&o.SeqLen, "seq-len", 0, "tokens per sequence (default: the preset's)")
	return cmd
}

// benchOptions validates the flags and turns them into the runner's options.
func (o *attentionOptions) benchOptions(cmd *cobra.Command, task bench.Task, modes []bench.Mode) (bench.Options, error) {
	cfg, err := models.AttentionPreset(o.Scale)
	if err != nil {
		return bench.Options{}, err
	}
	scale := o.Scale
	sizes := []sizeFlag{{"vocab", &o.Vocab}, {"d-model", &o.DModel}, {"heads", &o.Heads}, {"layers", &o.Layers},
		{"seq-len", &o.SeqLen}, {"batch", &o.Batch}, {"samples", &o.Samples}, {"epochs", &o.Epochs}}
	if err := overrideSizes(cmd.Flags(), sizes, []*int{&cfg.Vocab, &cfg.DModel, &cfg.Heads, &cfg.Layers,
		&cfg.SeqLen, &cfg.Batch, &cfg.Samples, &cfg.Epochs}); err != nil {
		return bench.Options{}, err
	}
	for _, f := range sizes[:7] {
		if cmd.Flags().Changed(f.name) {
			scale = "custom"
		}
	}
	if err := cfg.Validate(); err != nil {
		return bench.Options{}, err
	}
	if err := o.validate(cfg.Epochs); err != nil {
		return bench.Options{}, err
	}
	adam := kernels.DefaultAdam
	adam.LR = o.LR
	return bench.Options{
		ModelName: "attention", Scale: scale, Workload: cfg, Task: task, Modes: modes,
		Samples: cfg.Samples, Batch: cfg.Batch, Epochs: cfg.Epochs, Warmup: o.Warmup,
		Optimizer: adam, ClipNorm: 1, Seed: o.Seed, Threads: o.Threads,
	}, nil
}
