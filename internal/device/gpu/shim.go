//go:build !gpuzcuda && cgo

package gpu

/*
#cgo CFLAGS: -O1 -Wall -Wno-unused-function
#cgo LDFLAGS: -lm
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"gpuz/internal/half"
	"gpuz/internal/hostmath"
	"math"
	"strings"
	"sync"
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// Order is the order in which the shim runs the blocks of a grid and the
// threads of a block between barriers. A correct kernel gives the same
// result in every order.
type Order int

// The orders: Forward runs block 0 first and thread 0 first, Reverse the
// last first, Shuffled a pseudo-random permutation, new at every barrier.
const (
	Forward Order = iota
	Reverse
	Shuffled
)

func (o Order) String() string { return [...]string{"forward", "reverse", "shuffled"}[o] }

// Guard is the number of float32 elements of marker before and after every
// shim allocation; GuardMarker is their bit pattern, a NaN that the kernels
// never compute.
const (
	Guard       = 64
	GuardMarker = 0x7fc0dead
)

// shimMu serialises the shim: its scheduler and fibers are global.
var shimMu sync.Mutex

// Shim is a Launcher that runs the kernels on the CPU: the .cu sources
// compiled by gcc, one fiber per GPU thread, the blocks and threads in its
// Order; GEMMs through gonum's row-major Sgemm given the column-major
// arguments transposed (Cᵀ = op(B)ᵀ·op(A)ᵀ), with slices that end where
// each allocation ends, so that a wrong leading dimension or size makes
// gonum panic as cuBLAS would read out of bounds. Memory comes from C,
// every allocation between guard zones of GuardMarker.
type Shim struct {
	order  Order
	seed   uint64
	allocs []*ShimBuffer
	ws     *ShimBuffer
	err    error
}

// NewShim returns a shim running in order, with a workspace of
// workspaceBytes.
func NewShim(order Order, seed uint64, workspaceBytes int) *Shim {
	s := &Shim{order: order, seed: seed}
	s.ws = s.Alloc((workspaceBytes + 3) / 4)
	return s
}

// ShimBuffer is memory of the shim: n float32 elements at ptr, inside an
// allocation with guard zones. Views share their base's allocation.
type ShimBuffer struct {
	ptr  uintptr
	n    int
	base *ShimBuffer // nil for an allocation
	raw  unsafe.Pointer
}

// Len is the number of elements.
func (b *ShimBuffer) Len() int { return b.n }

// Ptr is the address of the first element.
func (b *ShimBuffer) Ptr() uintptr { return b.ptr }

// Floats is the buffer's memory as a slice; valid until Free.
func (b *ShimBuffer) Floats() []float32 {
	if b.n == 0 {
		return nil
	}
	base := b
	if b.base != nil {
		base = b.base
	}
	return unsafe.Slice((*float32)(unsafe.Add(base.raw, b.ptr-uintptr(base.raw))), b.n)
}

// Alloc returns n elements set to GuardMarker (a kernel that leaves an
// output element unwritten leaves the marker there), between guard zones.
func (s *Shim) Alloc(n int) *ShimBuffer {
	raw := C.malloc(C.size_t(4 * (n + 2*Guard)))
	if raw == nil {
		panic(fmt.Sprintf("shim: cannot allocate %d elements", n))
	}
	all := unsafe.Slice((*uint32)(raw), n+2*Guard)
	for i := range all {
		all[i] = GuardMarker
	}
	b := &ShimBuffer{ptr: uintptr(raw) + 4*Guard, n: n, raw: raw}
	s.allocs = append(s.allocs, b)
	return b
}

// View returns n elements of b from offset.
func (s *Shim) View(b *ShimBuffer, offset, n int) *ShimBuffer {
	base := b
	if b.base != nil {
		base = b.base
	}
	return &ShimBuffer{ptr: b.ptr + uintptr(4*offset), n: n, base: base}
}

// Free releases every allocation.
func (s *Shim) Free() {
	for _, b := range s.allocs {
		C.free(b.raw)
		b.raw, b.ptr, b.n = nil, 0, 0
	}
	s.allocs = nil
}

// CheckGuards reports the first allocation whose guard zones were written.
func (s *Shim) CheckGuards() error {
	for i, b := range s.allocs {
		all := unsafe.Slice((*uint32)(b.raw), b.n+2*Guard)
		for j, v := range all {
			if (j < Guard || j >= Guard+b.n) && v != GuardMarker {
				return fmt.Errorf("shim: allocation %d (%d elements): guard element %d overwritten with %#x", i, b.n, j-Guard, v)
			}
		}
	}
	return nil
}

// Err is the first error a launch met.
func (s *Shim) Err() error { return s.err }

// Fail records err if no error is recorded yet.
func (s *Shim) Fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// Workspace is the shim's workspace.
func (s *Shim) Workspace() (uintptr, int) { return s.ws.ptr, 4 * s.ws.n }

// Launch runs kernel on the CPU.
func (s *Shim) Launch(kernel string, grid, block, sharedBytes int, args []Arg) {
	if err := CheckArgs(kernel, args); err != nil {
		s.Fail(err)
		return
	}
	kinds := make([]byte, len(args))
	vals := (*[64]C.uint64_t)(C.malloc(C.size_t(8 * max(1, len(args)))))
	defer C.free(unsafe.Pointer(vals))
	for i, a := range args {
		kinds[i] = a.Kind
		vals[i] = C.uint64_t(a.Bits)
	}
	cname, ckinds := C.CString(kernel), C.CString(string(kinds))
	defer C.free(unsafe.Pointer(cname))
	defer C.free(unsafe.Pointer(ckinds))
	var msg [256]C.char
	shimMu.Lock()
	rc := C.gpuz_shim_launch(cname, ckinds, C.int(grid), C.int(block), C.int(sharedBytes), &vals[0],
		C.int(s.order), C.uint64_t(s.seed), &msg[0], C.int(len(msg)))
	shimMu.Unlock()
	if rc != 0 {
		s.Fail(errors.New(C.GoString(&msg[0])))
	}
}

// locate returns the memory at address p and the bytes from p to the end
// of the allocation holding it, or an error when no allocation holds p.
func (s *Shim) locate(p uintptr) (unsafe.Pointer, int, error) {
	for _, b := range s.allocs {
		if p >= b.ptr && p < b.ptr+uintptr(4*b.n) {
			return unsafe.Add(b.raw, p-uintptr(b.raw)), int(b.ptr + uintptr(4*b.n) - p), nil
		}
	}
	return nil, 0, fmt.Errorf("shim: address %#x is in no allocation", p)
}

// span returns the floats from p to the end of the allocation holding p,
// so that gonum checks every access against the allocation.
func (s *Shim) span(p uintptr) []float32 {
	mem, bytes, err := s.locate(p)
	if err != nil {
		panic(err)
	}
	return unsafe.Slice((*float32)(mem), bytes/4)
}

// Sgemm computes the column-major c = alpha·op(a)·op(b) + beta·c as gonum's
// row-major Sgemm of the transposes: column-major X is row-major Xᵀ, so
// cᵀ = op(b)ᵀ·op(a)ᵀ with the same leading dimensions.
func (s *Shim) Sgemm(transA, transB bool, m, n, k int, alpha float32, a uintptr, lda int, b uintptr, ldb int, beta float32, c uintptr, ldc int) {
	tA, tB := transposes(transA, transB)
	defer func() {
		if r := recover(); r != nil {
			s.Fail(fmt.Errorf("shim: Sgemm(%v, %v, m=%d, n=%d, k=%d, lda=%d, ldb=%d, ldc=%d): %v", transA, transB, m, n, k, lda, ldb, ldc, r))
		}
	}()
	gonum.Implementation{}.Sgemm(tB, tA, n, m, k, alpha, s.span(b), ldb, s.span(a), lda, beta, s.span(c), ldc)
}

// GemmEx computes the column-major c = alpha·op(a)·op(b) + beta·c from
// 16-bit a and b: each operand's allocation from its address is widened
// to float32 (exactly), then multiplied as Sgemm multiplies.
func (s *Shim) GemmEx(f half.Format, transA, transB bool, m, n, k int, alpha float32, a uintptr, lda int, b uintptr, ldb int, beta float32, c uintptr, ldc int) {
	tA, tB := transposes(transA, transB)
	defer func() {
		if r := recover(); r != nil {
			s.Fail(fmt.Errorf("shim: GemmEx(%v, %v, %v, m=%d, n=%d, k=%d, lda=%d, ldb=%d, ldc=%d): %v", f, transA, transB, m, n, k, lda, ldb, ldc, r))
		}
	}()
	gonum.Implementation{}.Sgemm(tB, tA, n, m, k, alpha, s.widened(f, b), ldb, s.widened(f, a), lda, beta, s.span(c), ldc)
}

// transposes returns gonum's transpose flags for transA and transB.
func transposes(transA, transB bool) (tA, tB blas.Transpose) {
	tA, tB = blas.NoTrans, blas.NoTrans
	if transA {
		tA = blas.Trans
	}
	if transB {
		tB = blas.Trans
	}
	return tA, tB
}

// widened returns the 16-bit values of format f from address p to the end
// of its allocation, as float32.
func (s *Shim) widened(f half.Format, p uintptr) []float32 {
	mem, bytes, err := s.locate(p)
	if err != nil {
		panic(err)
	}
	h := unsafe.Slice((*uint16)(mem), bytes/2)
	out := make([]float32, len(h))
	hostmath.HalfToFloat32s(f, out, h)
	return out
}

// access returns the memory of a read or write (what) of bytes at device
// address p, or the launcher's error, or records and returns the error of
// an access outside every allocation.
func (s *Shim) access(what string, p uintptr, bytes int) (unsafe.Pointer, error) {
	if s.err != nil {
		return nil, s.err
	}
	mem, left, err := s.locate(p)
	if err == nil && bytes > left {
		err = fmt.Errorf("shim: %s of %d bytes at %#x runs %d bytes past its allocation", what, bytes, p, bytes-left)
	}
	if err != nil {
		s.Fail(err)
		return nil, err
	}
	return mem, nil
}

// Read copies device memory to the host.
func (s *Shim) Read(dst unsafe.Pointer, src uintptr, bytes int) error {
	mem, err := s.access("read", src, bytes)
	if err != nil {
		return err
	}
	copy(unsafe.Slice((*byte)(dst), bytes), unsafe.Slice((*byte)(mem), bytes))
	return nil
}

// Write copies host memory to the device.
func (s *Shim) Write(dst uintptr, src unsafe.Pointer, bytes int) error {
	mem, err := s.access("write", dst, bytes)
	if err != nil {
		return err
	}
	copy(unsafe.Slice((*byte)(mem), bytes), unsafe.Slice((*byte)(src), bytes))
	return nil
}

// ShimKernels returns the kernel names and parameter kinds compiled into
// the shim, sorted by name.
func ShimKernels() map[string]string {
	buf := make([]C.char, 8192)
	n := int(C.gpuz_shim_kernels(&buf[0], C.int(len(buf))))
	if n >= len(buf) {
		panic("shim: kernel table longer than its buffer")
	}
	out := map[string]string{}
	for _, f := range strings.Fields(C.GoStringN(&buf[0], C.int(n))) {
		name, kinds, _ := strings.Cut(f, ":")
		out[name] = kinds
	}
	return out
}

// isMarker reports whether v is the guard marker.
func isMarker(v float32) bool { return math.Float32bits(v) == GuardMarker }
