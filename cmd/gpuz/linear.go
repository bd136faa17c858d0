package main

import (
	"github.com/spf13/pflag"

	"gpuz/internal/models"
)

// linearWorkload is gpuz linear.
var linearWorkload = workloadDef{
	workload: models.Linear,
	short:    "A stack of big linear layers: 12 blocks of 10 × Linear(2000→2000) + LeakyReLU",
	long: `The linear workload: blocks of Linear(dims→dims) + LeakyReLU(0.01) layers,
trained with MSE to reproduce uniform random input, with each block's
gradient norm clipped to 1 and its own Adam. MODES is a comma list of cuda
(or gpu), cache and cpu; the default is all three.`,
	example: `  gpuz linear train cuda,cache,cpu
  gpuz linear train cpu --scale small
  gpuz linear eval cpu --epochs 3 --threads 2`,
	flags: func(fs *pflag.FlagSet, lists *listFlags, o *WorkloadOptions) {
		addLoRAFlags(lists, fs, o, "layer (every Linear layer)", "layer")
	},
}
