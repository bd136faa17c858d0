package main

import (
	"io"

	"github.com/spf13/cobra"

	"gpuz/internal/bench"
	"gpuz/internal/kernels"
	"gpuz/internal/models"
)

// linearOptions are the flags of gpuz linear.
type linearOptions struct {
	runOptions
	Blocks, LayersPerBlock, Dims int
}

func newLinearCmd(stdout, stderr io.Writer) *cobra.Command {
	o := &linearOptions{}
	cmd := &cobra.Command{
		Use:   "linear train|eval [MODES]",
		Short: "A stack of big linear layers: 12 blocks of 10 × Linear(2000→2000) + LeakyReLU",
		Long: `The linear workload: blocks of Linear(dims→dims) + LeakyReLU(0.01) layers,
trained with MSE to reproduce uniform random input, with each block's
gradient norm clipped to 1 and its own Adam. MODES is a comma list of cuda
(or gpu), cache and cpu; the default is all three.`,
		Example: `  gpuz linear train cuda,cache,cpu
  gpuz linear train cpu --scale small
  gpuz linear eval cpu --epochs 3 --threads 2`,
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
	fs.IntVar(&o.Blocks, "blocks", 0, "blocks in the model (default: the preset's)")
	fs.IntVar(&o.LayersPerBlock, "layers-per-block", 0, "Linear+LeakyReLU layers per block (default: the preset's)")
	fs.IntVar(&o.Dims, "dims", 0, "width of every layer (default: the preset's)")
	return cmd
}

// benchOptions validates the flags and turns them into the runner's options.
func (o *linearOptions) benchOptions(cmd *cobra.Command, task bench.Task, modes []bench.Mode) (bench.Options, error) {
	cfg, err := models.LinearPreset(o.Scale)
	if err != nil {
		return bench.Options{}, err
	}
	scale := o.Scale
	sizes := []sizeFlag{{"blocks", &o.Blocks}, {"layers-per-block", &o.LayersPerBlock}, {"dims", &o.Dims},
		{"batch", &o.Batch}, {"samples", &o.Samples}, {"epochs", &o.Epochs}}
	if err := overrideSizes(cmd.Flags(), sizes, []*int{&cfg.Blocks, &cfg.LayersPerBlock, &cfg.Dims, &cfg.Batch, &cfg.Samples, &cfg.Epochs}); err != nil {
		return bench.Options{}, err
	}
	for _, f := range sizes[:5] {
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
		ModelName: "linear", Scale: scale, Workload: cfg, Task: task, Modes: modes,
		Samples: cfg.Samples, Batch: cfg.Batch, Epochs: cfg.Epochs, Warmup: o.Warmup,
		Optimizer: adam, ClipNorm: 1, Seed: o.Seed, Threads: o.Threads,
	}, nil
}
