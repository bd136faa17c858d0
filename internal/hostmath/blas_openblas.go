//go:build !purego

package hostmath

// #cgo LDFLAGS: -lopenblas
// void openblas_set_num_threads(int);
// int openblas_get_num_threads(void);
// char* openblas_get_config(void);
// char* openblas_get_corename(void);
import "C"

import (
	"strings"

	"gonum.org/v1/netlib/blas/netlib"
)

// impl is the BLAS the kernels call: OpenBLAS through cgo.
var impl netlib.Implementation

// BLASName names the BLAS this binary multiplies matrices with and the
// kernels it chose for this CPU: "OpenBLAS 0.3.21 (Haswell kernels)".
func BLASName() string {
	config := C.GoString(C.openblas_get_config())
	// "OpenBLAS 0.3.21 NO_AFFINITY USE_OPENMP Zen MAX_THREADS=64"
	name := "OpenBLAS"
	if fields := strings.Fields(config); len(fields) >= 2 {
		name = fields[0] + " " + fields[1]
	}
	if core := BLASKernels(); core != "" {
		name += " (" + core + " kernels)"
	}
	return name
}

// BLASKernels names the kernels OpenBLAS runs (openblas_get_corename:
// "Haswell", "SkylakeX", "Zen"), which OPENBLAS_CORETYPE can force.
func BLASKernels() string {
	return strings.TrimSpace(C.GoString(C.openblas_get_corename()))
}

// setBLASThreads asks OpenBLAS for n threads and returns the count it
// then reports, which its build's MAX_THREADS caps.
func setBLASThreads(n int) int {
	C.openblas_set_num_threads(C.int(n))
	return int(C.openblas_get_num_threads())
}

// LoadEnv lists the environment settings the BLAS reads only when it is
// loaded, with the values gpuz needs; a program sets them by re-executing
// itself before any work. OpenBLAS's idle worker threads otherwise spin for
// 2²⁸ cycles after each multi-threaded product, competing with the
// element-wise and attention kernels' own threads (measured: 13 % of a
// training run's CPU time); OPENBLAS_THREAD_TIMEOUT=4 makes them sleep after
// 2⁴ cycles.
func LoadEnv() []string { return []string{"OPENBLAS_THREAD_TIMEOUT=4"} }
