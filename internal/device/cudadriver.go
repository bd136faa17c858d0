package device

import "fmt"

// CUDADriver is the CUDA implementation of devices, which package
// gpuz/internal/device/cuda registers in the GPU build (-tags gpuzcuda); the
// default build has none and needs no CUDA.
type CUDADriver interface {
	// Open returns CUDA GPU index as a Device.
	Open(index int) (Device, error)
	// Count is the number of CUDA GPUs.
	Count() (int, error)
}

// cudaDriver is the registered driver; nil in the default build.
var cudaDriver CUDADriver

// RegisterCUDA makes d the driver behind cuda[:N] devices. Package cuda
// calls it from its init.
func RegisterCUDA(d CUDADriver) { cudaDriver = d }

// CUDACount returns the number of CUDA GPUs, or an error when this binary
// has no CUDA support.
func CUDACount() (int, error) {
	if cudaDriver == nil {
		return 0, fmt.Errorf("this build has no CUDA support (build the GPU binary with make cuda)")
	}
	return cudaDriver.Count()
}
