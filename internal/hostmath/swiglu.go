package hostmath

import "math"

// expNeg sets e[j] = e^−z[j]: exp32 in float32, math.Exp in float64 (the
// element type chosen once per row, not per element).
func expNeg[T Float](e, z []T) {
	switch e := any(e).(type) {
	case []float32:
		for j, v := range any(z).([]float32) {
			e[j] = exp32(-v)
		}
	case []float64:
		for j, v := range any(z).([]float64) {
			e[j] = math.Exp(-v)
		}
	}
}

// SwiGLU sets each row of y [rows, n] to silu(gate)·up for the row of x
// [rows, 2n] that holds gate in its first n columns and up in the others
// (vLLM's SiluAndMul), silu(z) = z/(1 + e^−z) as PyTorch computes it. For
// large |z| e^−z overflows to +Inf or vanishes and silu is −0 or z: never
// NaN for finite z.
func SwiGLU[T Float](y, x []T, n int) {
	if n == 0 {
		return
	}
	parallelFor(len(y), n, func(lo, hi int) {
		if !swigluFast(y[lo:hi], x[2*lo:2*hi], n) {
			swigluGo(y[lo:hi], x[2*lo:2*hi], n)
		}
	})
}

// swigluGo is SwiGLU's Go loop over the rows of y, one thread; the float32
// C kernels (llama.h) compute what it computes.
func swigluGo[T Float](y, x []T, n int) {
	e := make([]T, n)
	for r := 0; r < len(y); r += n {
		gate, up := x[2*r:2*r+n], x[2*r+n:2*r+2*n]
		yr := y[r : r+n]
		expNeg(e, gate)
		for j, z := range gate {
			yr[j] = z / (1 + e[j]) * up[j]
		}
	}
}

// SwiGLUGrad sets dx [rows, 2n] to the gradient of SwiGLU with respect to
// x given the output gradient g [rows, n]: the gate's columns
// (g·up)·σ·(1 + z·(1 − σ)), σ = 1/(1 + e^−z) (PyTorch's silu_backward), the
// up columns g·silu(z).
func SwiGLUGrad[T Float](dx, x, g []T, n int) {
	if n == 0 {
		return
	}
	parallelFor(len(g), n, func(lo, hi int) {
		if !swigluGradFast(dx[2*lo:2*hi], x[2*lo:2*hi], g[lo:hi], n) {
			swigluGradGo(dx[2*lo:2*hi], x[2*lo:2*hi], g[lo:hi], n)
		}
	})
}

// swigluGradGo is SwiGLUGrad's Go loop over the rows of g, one thread.
func swigluGradGo[T Float](dx, x, g []T, n int) {
	e := make([]T, n)
	for r := 0; r < len(g); r += n {
		gate, up := x[2*r:2*r+n], x[2*r+n:2*r+2*n]
		dgate, dup := dx[2*r:2*r+n], dx[2*r+n:2*r+2*n]
		gr := g[r : r+n]
		expNeg(e, gate)
		for j, z := range gate {
			sig := 1 / (1 + e[j])
			dgate[j] = gr[j] * up[j] * sig * (1 + z*(1-sig))
			dup[j] = gr[j] * (z / (1 + e[j]))
		}
	}
}
