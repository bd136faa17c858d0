//go:build !purego

package kernels

// #cgo LDFLAGS: -lopenblas
// void openblas_set_num_threads(int);
// char* openblas_get_config(void);
import "C"

import (
	"strings"

	"gonum.org/v1/netlib/blas/netlib"
)

// impl is the BLAS the kernels call: OpenBLAS through cgo.
var impl netlib.Implementation

// BLASName names the BLAS this binary multiplies matrices with.
func BLASName() string {
	config := C.GoString(C.openblas_get_config())
	// "OpenBLAS 0.3.21 NO_AFFINITY USE_OPENMP Zen MAX_THREADS=64"
	if fields := strings.Fields(config); len(fields) >= 2 {
		return fields[0] + " " + fields[1]
	}
	return "OpenBLAS"
}

func setBLASThreads(n int) { C.openblas_set_num_threads(C.int(n)) }
