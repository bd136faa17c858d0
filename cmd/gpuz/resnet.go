package main

import (
	"io"

	"github.com/spf13/cobra"

	"gpuz/internal/bench"
	"gpuz/internal/kernels"
	"gpuz/internal/models"
)

// resnetOptions are the flags of gpuz resnet.
type resnetOptions struct {
	runOptions
	Levels, Channels, MidChannels, ImageSize, Kernel int
}

func newResnetCmd(stdout, stderr io.Writer) *cobra.Command {
	o := &resnetOptions{}
	cmd := &cobra.Command{
		Use:   "resnet train|eval [MODES]",
		Short: "Nested residual convolutions: 12 levels of two ConvModel blocks on 10×512×512 images",
		Long: `The resnet workload: 24 ConvModel blocks, each 2 × [Conv2d(10→30, 5×5, pad 2),
Conv2d(30→10, 5×5, pad 2), LeakyReLU(0.01)], nested in residual levels:
level 1 is x + b1(a1(x)) and level i is x + bi(level i−1(ai(x))). It is
trained with MSE to reproduce uniform random images, with each block's
gradient norm clipped to 1 and its own Adam. MODES is a comma list of cuda
(or gpu), cache and cpu; the default is all three.`,
		Example: `  gpuz resnet train cuda,cache,cpu
  gpuz resnet train cpu --scale small
  gpuz resnet eval cpu --epochs 3 --image-size 256`,
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
	fs.IntVar(&o.Levels, "levels", 0, "nested residual levels, two blocks each (default: the preset's)")
	fs.IntVar(&o.Channels, "channels", 0, "channels of the images and of every residual (default: the preset's)")
	fs.IntVar(&o.MidChannels, "mid-channels", 0, "channels inside a block, between its convolutions (default: the preset's)")
	fs.IntVar(&o.ImageSize, "image-size", 0, "height and width of the images (default: the preset's)")
	fs.IntVar(&o.Kernel, "kernel", 0, "side of the square kernels, odd; padded by kernel/2 (default: the preset's)")
	return cmd
}

// benchOptions validates the flags and turns them into the runner's options.
func (o *resnetOptions) benchOptions(cmd *cobra.Command, task bench.Task, modes []bench.Mode) (bench.Options, error) {
	cfg, err := models.ResnetPreset(o.Scale)
	if err != nil {
		return bench.Options{}, err
	}
	scale := o.Scale
	sizes := []sizeFlag{{"levels", &o.Levels}, {"channels", &o.Channels}, {"mid-channels", &o.MidChannels},
		{"image-size", &o.ImageSize}, {"kernel", &o.Kernel},
		{"batch", &o.Batch}, {"samples", &o.Samples}, {"epochs", &o.Epochs}}
	if err := overrideSizes(cmd.Flags(), sizes, []*int{&cfg.Levels, &cfg.Channels, &cfg.MidChannels,
		&cfg.ImageSize, &cfg.Kernel, &cfg.Batch, &cfg.Samples, &cfg.Epochs}); err != nil {
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
		ModelName: "resnet", Scale: scale, Workload: cfg, Task: task, Modes: modes,
		Samples: cfg.Samples, Batch: cfg.Batch, Epochs: cfg.Epochs, Warmup: o.Warmup,
		Optimizer: adam, ClipNorm: 1, Seed: o.Seed, Threads: o.Threads,
	}, nil
}
