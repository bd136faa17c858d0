package main

import "gpuz/internal/models"

// resnetWorkload is gpuz resnet.
var resnetWorkload = workloadDef{
	workload: models.Resnet,
	short:    "Nested residual convolutions: 12 levels of two ConvModel blocks on 10×512×512 images",
	long: `The resnet workload: 24 ConvModel blocks, each 2 × [Conv2d(10→30, 5×5, pad 2),
Conv2d(30→10, 5×5, pad 2), LeakyReLU(0.01)], nested in residual levels:
level 1 is x + b1(a1(x)) and level i is x + bi(level i−1(ai(x))). It is
trained with MSE to reproduce uniform random images, with each block's
gradient norm clipped to 1 and its own Adam. MODES is a comma list of cuda
(or gpu), cache and cpu; the default is all three.`,
	example: `  gpuz resnet train cuda,cache,cpu
  gpuz resnet train cpu --scale small
  gpuz resnet eval cpu --epochs 3 --image-size 256`,
}
