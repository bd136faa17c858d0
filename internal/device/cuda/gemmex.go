//go:build gpuzcuda

package cuda

/*
#cgo LDFLAGS: -lcublas
#include <stdint.h>
#include <cublas_v2.h>

// gpuz_gemm_ex is cublasGemmEx with a and b of type ab, c float32 and
// float32 compute; the device addresses come as integers so that Go passes
// no pointer it does not own.
static cublasStatus_t gpuz_gemm_ex(cublasHandle_t h, int transA, int transB, int m, int n, int k,
		float alpha, uintptr_t a, int lda, uintptr_t b, int ldb, cudaDataType ab,
		float beta, uintptr_t c, int ldc) {
	return cublasGemmEx(h, transA ? CUBLAS_OP_T : CUBLAS_OP_N, transB ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
		&alpha, (const void *)a, ab, lda, (const void *)b, ab, ldb,
		&beta, (void *)c, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}
*/
import "C"

import (
	"fmt"

	cublas "gorgonia.org/cu/blas"

	"gpuz/internal/half"
)

// gemmExHandle is the cuBLAS handle of GemmEx, which gorgonia.org/cu's
// blas package neither wraps nor lets reach its own handle. It is created
// on the first GemmEx, on the context's thread (so bound to the device's
// context), and issues its work on the NULL stream, the compute stream
// of the kernels and of d.blas's SGEMMs, so that the three run in launch
// order. Runs without 16-bit products never create it, nor the device
// memory cuBLAS keeps for it. Only touched on the context's thread.
type gemmExHandle struct {
	h       C.cublasHandle_t
	created bool
}

// GemmEx runs cuBLAS's column-major GEMM with 16-bit a and b of format f
// (bf16: CUDA_R_16BF, fp16: CUDA_R_16F), float32 c (CUDA_R_32F) and
// float32 sums (CUBLAS_COMPUTE_32F), on the compute stream. As Sgemm's, a
// failure is recorded (Fail) and reported by the next copy.
func (d *Device) GemmEx(f half.Format, transA, transB bool, m, n, k int, alpha float32, a uintptr, lda int, b uintptr, ldb int, beta float32, c uintptr, ldc int) {
	var ab C.cudaDataType
	switch f {
	case half.BF16:
		ab = C.CUDA_R_16BF
	case half.FP16:
		ab = C.CUDA_R_16F
	default:
		d.Fail(fmt.Errorf("cublasGemmEx: unsupported storage format %v", f))
		return
	}
	if err := d.do(func() error {
		if err := d.gemmEx.create(); err != nil {
			return err
		}
		return cublasError(C.gpuz_gemm_ex(d.gemmEx.h, cBool(transA), cBool(transB), C.int(m), C.int(n), C.int(k),
			C.float(alpha), C.uintptr_t(a), C.int(lda), C.uintptr_t(b), C.int(ldb), ab,
			C.float(beta), C.uintptr_t(c), C.int(ldc)))
	}); err != nil {
		d.Fail(fmt.Errorf("cublasGemmEx(%v, m=%d, n=%d, k=%d): %w", f, m, n, k, err))
	}
}

// create makes the handle if it does not exist yet, with the current
// context, and puts it on the NULL stream (cuBLAS's default, set here so
// that the ordering with the kernels does not rest on that default).
func (g *gemmExHandle) create() error {
	if g.created {
		return nil
	}
	var h C.cublasHandle_t
	if err := cublasError(C.cublasCreate(&h)); err != nil {
		return fmt.Errorf("cublasCreate: %w", err)
	}
	if err := cublasError(C.cublasSetStream(h, nil)); err != nil {
		C.cublasDestroy(h)
		return fmt.Errorf("cublasSetStream: %w", err)
	}
	g.h, g.created = h, true
	return nil
}

// destroy frees the handle if it was created; on the context's thread,
// before the context is destroyed.
func (g *gemmExHandle) destroy() error {
	if !g.created {
		return nil
	}
	g.created = false
	if err := cublasError(C.cublasDestroy(g.h)); err != nil {
		return fmt.Errorf("cublasDestroy: %w", err)
	}
	return nil
}

// cublasError is nil for CUBLAS_STATUS_SUCCESS and otherwise the status
// under the name gorgonia.org/cu's blas package gives it, as Sgemm's
// errors carry it; a status that package does not know keeps its number.
func cublasError(s C.cublasStatus_t) error {
	if s == C.CUBLAS_STATUS_SUCCESS {
		return nil
	}
	st := cublas.Status(s)
	if st.String() == "" {
		return fmt.Errorf("cuBLAS status %d", int(s))
	}
	return st
}

// cBool is 1 for true, 0 for false.
func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
