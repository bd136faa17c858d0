// Package gpu holds gpuz's CUDA C kernels (the .cu files, embedded) and the
// Go code that drives them: Dispatcher implements device.Kernels by launching
// those kernels and cuBLAS-convention GEMMs through a Launcher. Two
// Launchers exist: the CUDA device (package cuda, built with -tags gpuzcuda),
// and, in the default build, Shim, which runs the very same .cu sources on
// the CPU (compiled by gcc through a header shim, one fiber per GPU thread)
// and GEMM through gonum with cuBLAS's column-major arguments, so that the
// tests check the kernels, the launch arguments and the driver's
// arithmetic against the host kernels without a GPU.
package gpu

import (
	"fmt"
	"math"
	"sort"
	"unsafe"

	"gpuz/internal/device"
	"gpuz/internal/half"
)

// Buffer is a device buffer whose memory a kernel can address.
type Buffer interface {
	device.Buffer
	// Ptr is the device address of the first element.
	Ptr() uintptr
}

// Launcher runs kernels and GEMMs on a device's memory, in order: each
// launch sees the effects of every earlier one. Launches do not return
// errors: a launcher records the first one it meets, and the device reports
// it at the next copy.
type Launcher interface {
	// Launch runs kernel over grid blocks of block threads with
	// sharedBytes of dynamic shared memory and the given arguments, whose
	// kinds must match Signatures[kernel].
	Launch(kernel string, grid, block, sharedBytes int, args []Arg)
	// Sgemm computes c = alpha·op(a)·op(b) + beta·c with cuBLAS's
	// column-major conventions: op(a) is m×k, op(b) k×n, c m×n, and lda,
	// ldb, ldc are leading dimensions (column strides).
	Sgemm(transA, transB bool, m, n, k int, alpha float32, a uintptr, lda int, b uintptr, ldb int, beta float32, c uintptr, ldc int)
	// GemmEx is Sgemm with a and b holding 16-bit values of format f and
	// c float32, summing in float32 (cublasGemmEx with
	// CUBLAS_COMPUTE_32F).
	GemmEx(f half.Format, transA, transB bool, m, n, k int, alpha float32, a uintptr, lda int, b uintptr, ldb int, beta float32, c uintptr, ldc int)
	// Workspace is the device scratch that kernels may use between
	// launches: its address and size in bytes.
	Workspace() (ptr uintptr, bytes int)
	// Read copies bytes from device address src into host memory at dst
	// once every earlier launch has finished.
	Read(dst unsafe.Pointer, src uintptr, bytes int) error
	// Write copies bytes from host memory at src to device address dst,
	// after every earlier launch and before every later one; src may be
	// reused when it returns.
	Write(dst uintptr, src unsafe.Pointer, bytes int) error
	// Fail records err as the device's error if it has none yet.
	Fail(err error)
}

// Arg is one kernel argument: its kind (a letter of Signatures) and its
// value's bits, 8 bytes as the CUDA driver copies them.
type Arg struct {
	Kind byte
	Bits uint64
}

// Pointer, Int, Long, Float and Double make arguments of the kinds 'p'
// (a device pointer), 'i' (int32), 'l' (int64), 'f' (float32) and 'd'
// (float64).
func Pointer(p uintptr) Arg { return Arg{'p', uint64(p)} }

// Int is an int32 argument.
func Int(v int) Arg { return Arg{'i', uint64(uint32(int32(v)))} }

// Long is an int64 argument.
func Long(v int) Arg { return Arg{'l', uint64(int64(v))} }

// Float is a float32 argument.
func Float(v float32) Arg { return Arg{'f', uint64(math.Float32bits(v))} }

// Double is a float64 argument.
func Double(v float64) Arg { return Arg{'d', math.Float64bits(v)} }

// CheckArgs reports arguments whose kinds do not match the kernel's
// signature.
func CheckArgs(kernel string, args []Arg) error {
	sig, ok := Signatures[kernel]
	if !ok {
		return fmt.Errorf("unknown kernel %q", kernel)
	}
	kinds := make([]byte, len(args))
	for i, a := range args {
		kinds[i] = a.Kind
	}
	if string(kinds) != sig {
		return fmt.Errorf("kernel %s takes %q, launched with %q", kernel, sig, kinds)
	}
	return nil
}

// sortedNames returns m's keys in order.
func sortedNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
