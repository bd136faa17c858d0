//go:build gpuzcuda

package main

// The GPU build links the CUDA device, which registers itself for
// --device cuda[:N] and auto.
import _ "gpuz/internal/device/cuda"
