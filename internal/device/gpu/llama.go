package gpu

import (
	"gpuz/internal/device"
	"gpuz/internal/hostmath"
)

// The Dispatcher methods of the Llama family's kernels (llama.cu).

// RMSNorm normalises each row of x by its root mean square, one block per
// row.
func (k Dispatcher) RMSNorm(dst, x, weight device.Buffer, eps float64) {
	if cols := weight.Len(); cols > 0 && x.Len() >= cols {
		k.L.Launch("rms_norm", x.Len()/cols, BlockSize, sharedReduce, []Arg{Pointer(ptr(dst)), Pointer(ptr(x)), Pointer(ptr(weight)), Int(cols), Double(eps)})
	}
}

// RMSNormInputGrad sets dst to RMSNorm's gradient with respect to x, one
// block per row.
func (k Dispatcher) RMSNormInputGrad(dst, x, weight, g device.Buffer, eps float64) {
	if cols := weight.Len(); cols > 0 && x.Len() >= cols {
		k.L.Launch("rms_norm_input_grad", x.Len()/cols, BlockSize, sharedReduce, []Arg{Pointer(ptr(dst)), Pointer(ptr(x)), Pointer(ptr(weight)), Pointer(ptr(g)), Int(cols), Double(eps)})
	}
}

// RMSNormWeightGrad sets dst to RMSNorm's gradient with respect to its
// weight: the rows' rstd into the workspace, then one thread per column
// adding the rows in order.
func (k Dispatcher) RMSNormWeightGrad(dst, x, g device.Buffer, eps float64) {
	cols := dst.Len()
	if cols == 0 {
		return
	}
	rows := x.Len() / cols
	if rows == 0 {
		k.each("fill_value", cols, Pointer(ptr(dst)), Long(cols), Float(0))
		return
	}
	rstd := k.take(k.workspace(), 4*rows, "RMS norm statistics")
	if rstd == 0 {
		return
	}
	k.L.Launch("rms_stats", rows, BlockSize, sharedReduce, []Arg{Pointer(rstd), Pointer(ptr(x)), Int(cols), Double(eps)})
	k.each("rms_norm_weight_grad", cols, Pointer(ptr(dst)), Pointer(ptr(x)), Pointer(ptr(g)), Pointer(rstd), Int(rows), Int(cols))
}

// Rotary applies the rotary position embedding, one thread per element.
func (k Dispatcher) Rotary(dst, x, cos, sin device.Buffer, s hostmath.RotaryShape) {
	k.rotary(dst, x, cos, sin, s, 0)
}

// RotaryGrad applies the opposite rotation to the gradient g.
func (k Dispatcher) RotaryGrad(dst, g, cos, sin device.Buffer, s hostmath.RotaryShape) {
	k.rotary(dst, g, cos, sin, s, 1)
}

// rotary launches the rotary kernel, the sines negated when inverse is 1.
func (k Dispatcher) rotary(dst, x, cos, sin device.Buffer, s hostmath.RotaryShape, inverse int) {
	if s.Width == 0 {
		return
	}
	k.each("rotary", x.Len(), Pointer(ptr(dst)), Pointer(ptr(x)), Pointer(ptr(cos)), Pointer(ptr(sin)), Long(x.Len()),
		Int(s.Width), Int(s.Heads*s.HeadDim), Int(s.HeadDim), Int(s.SeqLen), Int(inverse))
}

// SwiGLU sets dst to silu(gate)·up, one thread per output element.
func (k Dispatcher) SwiGLU(dst, x device.Buffer, n int) {
	if n > 0 {
		k.each("swiglu", dst.Len(), Pointer(ptr(dst)), Pointer(ptr(x)), Long(dst.Len()), Int(n))
	}
}

// SwiGLUGrad sets dst to SwiGLU's gradient, one thread per element of g
// writing the gate's and up's.
func (k Dispatcher) SwiGLUGrad(dst, x, g device.Buffer, n int) {
	if n > 0 {
		k.each("swiglu_grad", g.Len(), Pointer(ptr(dst)), Pointer(ptr(x)), Pointer(ptr(g)), Long(g.Len()), Int(n))
	}
}
