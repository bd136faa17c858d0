package bench

import (
	"gpuz/internal/hostmath"
	"gpuz/internal/hugemem"
)

// This file names what the host's math runs on, for gpuz version and the
// BLAS's environment: cmd/gpuz reaches hostmath and hugemem only through
// these wrappers (docs/architecture.md, Layers), so that the command
// layer depends on the runner and not on the kernels below it.

// BLASName names the host BLAS the kernels use.
func BLASName() string { return hostmath.BLASName() }

// SGEMMPath names what runs the host's float32 matrix products
// (hostmath.SGEMMPath): gpuz's own AVX-512 SGEMM or the BLAS.
func SGEMMPath() string { return hostmath.SGEMMPath() }

// BLASWarning says when OPENBLAS_CORETYPE forces the BLAS to narrower
// kernels than the CPU runs, or is "".
func BLASWarning() string { return hostmath.BLASWarning() }

// HugePages says whether large host buffers use transparent huge pages:
// the kernel's setting and what gpuz does with it, as "madvise: used".
func HugePages() string { return hugemem.Status() }

// BF16Path names the path the host's bf16 products take
// (hostmath.BF16Path).
func BF16Path() string { return hostmath.BF16Path() }

// QuantPath names the path the host's products by a quantized weight
// take (hostmath.QuantPath).
func QuantPath() string { return hostmath.QuantPath() }

// CPUVector names the host CPU's widest vector extension.
func CPUVector() string { return hostmath.CPUVector() }

// BLASEnv returns the environment settings, NAME=VALUE, that the BLAS reads
// only when it loads: a program sets them before it starts.
func BLASEnv() []string { return hostmath.LoadEnv() }
