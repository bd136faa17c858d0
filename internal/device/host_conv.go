package device

import "gpuz/internal/kernels"

// Conv2d sets dst to the convolution of x with w plus bias.
func (HostKernels) Conv2d(dst, x, w, bias Buffer, s kernels.ConvShape) {
	kernels.Conv2d(Floats(dst), Floats(x), Floats(w), Floats(bias), s)
}

// Conv2dInputGrad sets dst to the gradient with respect to x.
func (HostKernels) Conv2dInputGrad(dst, g, w Buffer, s kernels.ConvShape) {
	kernels.Conv2dInputGrad(Floats(dst), Floats(g), Floats(w), s)
}

// Conv2dWeightGrad sets dst to the gradient with respect to w.
func (HostKernels) Conv2dWeightGrad(dst, x, g Buffer, s kernels.ConvShape) {
	kernels.Conv2dWeightGrad(Floats(dst), Floats(x), Floats(g), s)
}

// Conv2dBiasGrad sets dst to the gradient with respect to the bias.
func (HostKernels) Conv2dBiasGrad(dst, g Buffer, s kernels.ConvShape) {
	kernels.Conv2dBiasGrad(Floats(dst), Floats(g), s.Batch, s.OutC, s.OutH*s.OutW)
}
