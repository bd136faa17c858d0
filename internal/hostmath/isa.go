package hostmath

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/cpu"
)

// CPUVector names the widest vector extension of this CPU that gpuz's own
// kernels use: "AVX-512", "AVX2" or "SSE".
func CPUVector() string {
	switch {
	case cpu.X86.HasAVX512F:
		return "AVX-512"
	case cpu.X86.HasAVX2:
		return "AVX2"
	}
	return "SSE"
}

// vectorOfKernels is the vector extension of OpenBLAS's x86 kernels by
// core name (lower case): those that run AVX-512 and those that run AVX2.
var vectorOfKernels = map[string]string{
	"skylakex": "AVX-512", "cooperlake": "AVX-512", "sapphirerapids": "AVX-512",
	"haswell": "AVX2", "zen": "AVX2", "skylake": "AVX2",
	"prescott": "SSE3", "core2": "SSSE3", "nehalem": "SSE4.2", "sandybridge": "AVX",
}

// widths orders the vector extensions by width.
var widths = map[string]int{"SSE": 1, "SSE3": 1, "SSSE3": 1, "SSE4.2": 1, "AVX": 2, "AVX2": 3, "AVX-512": 4}

// kernelsFor is the OpenBLAS core type that runs a CPU's widest vectors.
var kernelsFor = map[string]string{"AVX-512": "SkylakeX", "AVX2": "Haswell"}

// BLASWarning returns a warning when OpenBLAS runs kernels narrower than
// this CPU's vectors, or "": forced by OPENBLAS_CORETYPE (AVX2 kernels on a
// CPU with AVX-512: its products at about half speed), or chosen by an
// OpenBLAS that does not recognise the CPU (Debian's 0.3.21 falls back to
// its SSE3 Prescott kernels on CPUs newer than it). Where gpuz's own SGEMM
// runs the large float32 products (SGEMMPath), the warning says that only
// the products left to OpenBLAS are slowed. gpuz does not change the
// variable: it is the user's.
func BLASWarning() string {
	return blasWarning(os.Getenv("OPENBLAS_CORETYPE"), BLASKernels(), CPUVector(), sgemmOverBLAS)
}

// blasWarning is BLASWarning for the variable's value, the kernels in use,
// the CPU's widest vector extension and whether gpuz's own SGEMM runs the
// large float32 products.
func blasWarning(coretype, kernels, cpuVector string, ownSGEMM bool) string {
	if !narrowerBLAS(kernels, cpuVector) {
		return ""
	}
	used := vectorOfKernels[strings.ToLower(kernels)]
	products := "its products"
	if ownSGEMM {
		products = "the products left to it (float32 ones under " + sgemmMinWorkName + " multiply-adds, float64 ones; gpuz's own kernels run the others)"
	}
	if coretype != "" {
		return fmt.Sprintf("OpenBLAS forced to %s (%s) kernels by OPENBLAS_CORETYPE; this CPU has %s: %s run at about half speed", kernels, used, cpuVector, products)
	}
	return fmt.Sprintf("OpenBLAS chose its %s (%s) kernels: it does not recognise this CPU, which has %s; OPENBLAS_CORETYPE=%s runs its %s kernels", kernels, used, cpuVector, kernelsFor[cpuVector], cpuVector)
}

// narrowerBLAS reports whether OpenBLAS's kernels (openblas_get_corename)
// are known to be narrower than the CPU's widest vector extension; "" (no
// OpenBLAS) and names it does not know are not.
func narrowerBLAS(kernels, cpuVector string) bool {
	used, known := vectorOfKernels[strings.ToLower(kernels)]
	return kernels != "" && known && widths[used] < widths[cpuVector]
}
