//go:build gpuzcuda

package device

import "fmt"

// CUDASupport reports whether this build has the CUDA device.
const CUDASupport = true

// openCUDA opens CUDA GPU index through the registered driver.
func openCUDA(index int) (Device, error) {
	if cudaDriver == nil {
		return nil, fmt.Errorf("cuda:%d: the CUDA device package is not linked into this binary (import gpuz/internal/device/cuda)", index)
	}
	return cudaDriver.Open(index)
}
