// Package hostmath holds the host math of gpuz: matrix products through a
// BLAS chosen at build time (OpenBLAS by default, gonum's pure-Go BLAS under
// the build tag purego) or, for large float32 products on a CPU with
// AVX-512F whose OpenBLAS runs narrower kernels, gpuz's own SGEMM
// (sgemm.h); element-wise kernels, reductions and optimizer updates written
// in Go that spread large slices over the host's cores; and C kernels with
// AVX2/AVX-512 for the convolutions, the attention and the few-row product.
// The C kernels flush subnormal values to zero (flush.h): on x86 each
// subnormal operand costs a microcode assist, and training's gradients
// reach them.
//
// Every kernel is generic over float32 and float64: the models run in
// float32, and the gradient checks of package ops run the same kernels in
// float64. Matrices are dense and row-major.
package hostmath

// Float is the element type of every kernel.
type Float interface{ ~float32 | ~float64 }
