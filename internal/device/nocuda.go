//go:build !gpuzcuda

package device

import "fmt"

// CUDASupport reports whether this build has the CUDA device.
const CUDASupport = false

// openCUDA opens CUDA GPU index; this build has none.
func openCUDA(index int) (Device, error) {
	return nil, fmt.Errorf("cuda:%d: this build has no CUDA support (build the GPU binary with make cuda)", index)
}
