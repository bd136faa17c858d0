package device

import "gpuz/internal/hostmath"

// The host implementations of the Llama family's kernels, beside the
// other kernels' in kernels.go.

// RMSNorm normalises the rows of x by their root mean square.
func (hostKernels) RMSNorm(dst, x, weight Buffer, eps float64) {
	hostmath.RMSNorm(Floats(dst), Floats(x), Floats(weight), eps)
}

// RMSNormInputGrad sets dst to the gradient with respect to x.
func (hostKernels) RMSNormInputGrad(dst, x, weight, g Buffer, eps float64) {
	hostmath.RMSNormInputGrad(Floats(dst), Floats(x), Floats(weight), Floats(g), eps)
}

// RMSNormWeightGrad sets dst to the gradient with respect to the weight.
func (hostKernels) RMSNormWeightGrad(dst, x, g Buffer, eps float64) {
	hostmath.RMSNormWeightGrad(Floats(dst), Floats(x), Floats(g), eps)
}

// Rotary applies the rotary position embedding.
func (hostKernels) Rotary(dst, x, cos, sin Buffer, s hostmath.RotaryShape) {
	hostmath.Rotary(Floats(dst), Floats(x), Floats(cos), Floats(sin), s)
}

// RotaryGrad applies the opposite rotation to the gradient.
func (hostKernels) RotaryGrad(dst, g, cos, sin Buffer, s hostmath.RotaryShape) {
	hostmath.RotaryGrad(Floats(dst), Floats(g), Floats(cos), Floats(sin), s)
}

// SwiGLU sets dst to silu(gate)·up.
func (hostKernels) SwiGLU(dst, x Buffer, n int) { hostmath.SwiGLU(Floats(dst), Floats(x), n) }

// SwiGLUGrad sets dst to the gradient with respect to the gate and up.
func (hostKernels) SwiGLUGrad(dst, x, g Buffer, n int) {
	hostmath.SwiGLUGrad(Floats(dst), Floats(x), Floats(g), n)
}
