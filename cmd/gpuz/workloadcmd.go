package main

import (
	"io"

	"github.com/spf13/cobra"

	"gpuz/internal/bench"
	"gpuz/internal/kernels"
)

// workloadConfig is a workload's sizes: what the runner builds and feeds,
// and their check.
type workloadConfig interface {
	bench.Workload
	Validate() error
}

// sizeDef is one of a workload's own size flags.
type sizeDef struct{ name, usage string }

// workloadDef describes a workload command: its texts, its own size flags,
// and its presets.
type workloadDef struct {
	name, short, long, example string
	sizes                      []sizeDef
	// preset returns the workload's sizes at a scale, and a pointer to each
	// size by flag name: its own sizes and "batch", "samples", "epochs".
	preset func(scale string) (workloadConfig, map[string]*int, error)
}

// newWorkloadCmd builds "gpuz NAME train|eval [MODES]" with the shared flags
// and the workload's own sizes.
func newWorkloadCmd(def workloadDef, stdout, stderr io.Writer) *cobra.Command {
	o := &runOptions{}
	own := make([]int, len(def.sizes))
	cmd := &cobra.Command{
		Use:     def.name + " train|eval [MODES]",
		Short:   def.short,
		Long:    def.long,
		Example: def.example,
		RunE: func(cmd *cobra.Command, args []string) error {
			task, modes, err := parseWorkloadArgs(args)
			if err != nil {
				return err
			}
			opts, err := def.benchOptions(cmd, o, own, task, modes)
			if err != nil {
				return err
			}
			return benchmark(cmd.Context(), stdout, stderr, o, opts)
		},
	}
	fs := cmd.Flags()
	addRunFlags(fs, o)
	for i, s := range def.sizes {
		fs.IntVar(&own[i], s.name, 0, s.usage)
	}
	return cmd
}

// benchOptions applies the size flags the user set over the preset,
// validates everything and returns the runner's options.
func (def workloadDef) benchOptions(cmd *cobra.Command, o *runOptions, own []int, task bench.Task, modes []bench.Mode) (bench.Options, error) {
	cfg, fields, err := def.preset(o.Scale)
	if err != nil {
		return bench.Options{}, err
	}
	flags := make([]sizeFlag, 0, len(def.sizes)+3)
	targets := make([]*int, 0, len(def.sizes)+3)
	for i, s := range def.sizes {
		flags, targets = append(flags, sizeFlag{s.name, &own[i]}), append(targets, fields[s.name])
	}
	for _, f := range []sizeFlag{{"batch", &o.Batch}, {"samples", &o.Samples}, {"epochs", &o.Epochs}} {
		flags, targets = append(flags, f), append(targets, fields[f.name])
	}
	if err := overrideSizes(cmd.Flags(), flags, targets); err != nil {
		return bench.Options{}, err
	}
	scale := o.Scale
	for _, f := range flags {
		if f.name != "epochs" && cmd.Flags().Changed(f.name) {
			scale = "custom"
		}
	}
	if err := cfg.Validate(); err != nil {
		return bench.Options{}, err
	}
	epochs, batch, samples := *fields["epochs"], *fields["batch"], *fields["samples"]
	if err := o.validate(epochs); err != nil {
		return bench.Options{}, err
	}
	adam := kernels.DefaultAdam
	adam.LR = o.LR
	return bench.Options{
		ModelName: def.name, Scale: scale, Workload: cfg, Task: task, Modes: modes,
		Samples: samples, Batch: batch, Epochs: epochs, Warmup: o.Warmup,
		Optimizer: adam, ClipNorm: 1, Seed: o.Seed, Threads: o.Threads,
	}, nil
}
