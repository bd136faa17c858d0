//go:build gpuzcuda

package cudainit

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>
#include <stdio.h>
#include <unistd.h>

__attribute__((constructor)) static void gpuz_check_cuda(void) {
	CUresult r = cuInit(0);
	if (r == CUDA_SUCCESS) {
		return;
	}
	const char *name = NULL;
	if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == NULL) {
		switch (r) { // the stub library cannot name its own errors
		case CUDA_ERROR_STUB_LIBRARY: name = "CUDA_ERROR_STUB_LIBRARY: the CUDA stub library, not a driver, answered"; break;
		case CUDA_ERROR_NO_DEVICE: name = "CUDA_ERROR_NO_DEVICE"; break;
		case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: name = "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"; break;
		default: name = "unnamed error"; break;
		}
	}
	fprintf(stderr, "gpuz: no usable CUDA GPU (cuInit: %s, code %d); this is the GPU build of gpuz: run the default build (make build, bin/gpuz) for the cpu and sim devices\n", name, (int)r);
	_exit(2);
}
*/
import "C"
