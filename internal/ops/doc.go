// Package ops defines the gorgonia operations that gpuz models are built
// from, each with the operations that compute its gradients.
//
// An op is written once, as a Spec: a struct of its parameters (LeakyReLU's
// slope, Conv2d's padding) with the few methods that are particular to it:
// its signature (the dimensions of its inputs and output), its shape rule,
// its kernel (its host math in float32 and float64, one generic function
// that calls the kernels of package hostmath, and its launch on a device's
// kernels), its cost and, for a forward op, which gradient ops make its
// gradients. New wraps a Spec in the one implementation of gorgonia.Op in
// this package, which derives all that gorgonia asks besides: arity and
// type from the signature, the check of each input's dimensions, the name
// and hash from the spec's type and parameters, Do from the shape rule and
// the host math, and, for a differentiable spec, gorgonia.SDOp's DiffWRT
// and SymDiff from the gradient wiring. Apply adds such an op to a graph.
//
// gorgonia's TapeMachine and the gradient checks run an op's Do. Package
// engine does not: it calls each op's Launch method, which runs the same
// computation with a device's kernels in float32.
package ops
