package main

import (
	"io"

	"github.com/spf13/cobra"

	"gpuz/internal/models"
)

// linearWorkload is gpuz linear.
var linearWorkload = workloadDef{
	name:  "linear",
	short: "A stack of big linear layers: 12 blocks of 10 × Linear(2000→2000) + LeakyReLU",
	long: `The linear workload: blocks of Linear(dims→dims) + LeakyReLU(0.01) layers,
trained with MSE to reproduce uniform random input, with each block's
gradient norm clipped to 1 and its own Adam. MODES is a comma list of cuda
(or gpu), cache and cpu; the default is all three.`,
	example: `  gpuz linear train cuda,cache,cpu
  gpuz linear train cpu --scale small
  gpuz linear eval cpu --epochs 3 --threads 2`,
	sizes: []sizeDef{
		{"blocks", "blocks in the model (default: the preset's)"},
		{"layers-per-block", "Linear+LeakyReLU layers per block (default: the preset's)"},
		{"dims", "width of every layer (default: the preset's)"},
	},
	preset: func(scale string) (workloadConfig, map[string]*int, error) {
		cfg, err := models.LinearPreset(scale)
		if err != nil {
			return nil, nil, err
		}
		return &cfg, map[string]*int{"blocks": &cfg.Blocks, "layers-per-block": &cfg.LayersPerBlock, "dims": &cfg.Dims,
			"batch": &cfg.Batch, "samples": &cfg.Samples, "epochs": &cfg.Epochs}, nil
	},
}

func newLinearCmd(stdout, stderr io.Writer) *cobra.Command {
	return newWorkloadCmd(linearWorkload, stdout, stderr)
}
