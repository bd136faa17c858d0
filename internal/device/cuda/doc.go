// Package cuda is gpuz's CUDA device, built only with -tags gpuzcuda (make
// cuda): gorgonia.org/cu for the context, streams, memory and module
// loading, cuBLAS for GEMM, and gpuz's own kernels (package gpu) compiled at
// run time with NVRTC and cached per GPU architecture. Importing it
// registers the device with package device, so that --device cuda[:N]
// opens it.
package cuda
