package main

import (
	"io"

	"github.com/spf13/cobra"

	"gpuz/internal/models"
)

// resnetWorkload is gpuz resnet.
var resnetWorkload = workloadDef{
	name:  "resnet",
	short: "Nested residual convolutions: 12 levels of two ConvModel blocks on 10×512×512 images",
	long: `The resnet workload: 24 ConvModel blocks, each 2 × [Conv2d(10→30, 5×5, pad 2),
Conv2d(30→10, 5×5, pad 2), LeakyReLU(0.01)], nested in residual levels:
level 1 is x + b1(a1(x)) and level i is x + bi(level i−1(ai(x))). It is
trained with MSE to reproduce uniform random images, with each block's
gradient norm clipped to 1 and its own Adam. MODES is a comma list of cuda
(or gpu), cache and cpu; the default is all three.`,
	example: `  gpuz resnet train cuda,cache,cpu
  gpuz resnet train cpu --scale small
  gpuz resnet eval cpu --epochs 3 --image-size 256`,
	sizes: []sizeDef{
		{"levels", "nested residual levels, two blocks each (default: the preset's)"},
		{"channels", "channels of the images and of every residual (default: the preset's)"},
		{"mid-channels", "channels inside a block, between its convolutions (default: the preset's)"},
		{"image-size", "height and width of the images (default: the preset's)"},
		{"kernel", "side of the square kernels, odd; padded by kernel/2 (default: the preset's)"},
	},
	preset: func(scale string) (workloadConfig, map[string]*int, error) {
		cfg, err := models.ResnetPreset(scale)
		if err != nil {
			return nil, nil, err
		}
		return &cfg, map[string]*int{"levels": &cfg.Levels, "channels": &cfg.Channels, "mid-channels": &cfg.MidChannels, "image-size": &cfg.ImageSize, "kernel": &cfg.Kernel,
			"batch": &cfg.Batch, "samples": &cfg.Samples, "epochs": &cfg.Epochs}, nil
	},
}

func newResnetCmd(stdout, stderr io.Writer) *cobra.Command {
	return newWorkloadCmd(resnetWorkload, stdout, stderr)
}
