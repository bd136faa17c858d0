//go:build purego

package hostmath

import "gonum.org/v1/gonum/blas/gonum"

// impl is the BLAS the kernels call: gonum's pure-Go implementation.
var impl gonum.Implementation

// BLASName names the BLAS this binary multiplies matrices with.
func BLASName() string { return "gonum (pure Go)" }

// BLASKernels is "": gonum's BLAS is Go code, vectorised by its assembly
// where it has some.
func BLASKernels() string { return "" }

// setBLASThreads sets nothing and accepts any count: gonum's BLAS picks its
// own parallelism.
func setBLASThreads(n int) int { return n }

// LoadEnv lists the environment settings the BLAS reads when it is loaded:
// none for gonum.
func LoadEnv() []string { return nil }
