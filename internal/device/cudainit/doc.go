// Package cudainit stops the GPU build of gpuz with one clear line when the
// machine has no usable CUDA GPU or driver.
//
// gorgonia.org/cu calls cuInit in its package init and, on failure, prints
// a long message and exits with status 1 before main runs. Go initialises
// packages in import-path order once their dependencies are ready, and
// every gpuz path sorts after "gorgonia.org", so a Go init here would run
// too late. This package therefore checks from a C constructor, which the
// dynamic loader runs before the Go runtime starts: if cuInit fails it
// prints
//
//	gpuz: no usable CUDA GPU (cuInit: CUDA_ERROR_NO_DEVICE, code 100); ...
//
// and exits with status 2. Without libcuda.so.1 (no NVIDIA driver) the
// loader itself refuses to start the binary, before any code runs, with
// "error while loading shared libraries: libcuda.so.1".
//
// The default build compiles only this comment.
package cudainit
