// flush.h: gpuz's host kernels run with subnormal float32 (and float64)
// values flushed to zero: MXCSR's FTZ bit (a subnormal result is written as
// zero) and DAZ bit (a subnormal input is read as zero). On x86 a subnormal
// operand or result costs a microcode assist of a hundred cycles or more
// per instruction, and the deep linear model's gradients and Adam's second
// moments reach that range in training: a product of them measured 25–90×
// slower than of normal values. The values lost are below 2^-126 ≈ 1.2e-38,
// whose contribution to any sum a float32 can hold is nothing; TensorFlow
// runs its CPU kernels the same way, PyTorch offers it as
// torch.set_flush_denormal(True).
//
// MXCSR is per thread and Go moves goroutines between threads, so each
// kernel entry point called from Go sets the bits for its own duration and
// restores the caller's register on every return (GPUZ_FLUSH_SUBNORMALS,
// through the cleanup attribute): Go code never runs with them set.
#ifndef GPUZ_FLUSH_H
#define GPUZ_FLUSH_H

#include <immintrin.h>

// gpuz_csr_flush sets FTZ and DAZ and returns MXCSR as it was.
static inline unsigned int gpuz_csr_flush(void) {
	unsigned int csr = _mm_getcsr();
	_mm_setcsr(csr | _MM_FLUSH_ZERO_ON | _MM_DENORMALS_ZERO_ON);
	return csr;
}

// gpuz_csr_restore puts back the MXCSR that gpuz_csr_flush returned.
static inline void gpuz_csr_restore(unsigned int *csr) { _mm_setcsr(*csr); }

// GPUZ_FLUSH_SUBNORMALS flushes subnormals until the enclosing block ends.
#define GPUZ_FLUSH_SUBNORMALS() \
	unsigned int gpuz_csr_ __attribute__((cleanup(gpuz_csr_restore), unused)) = gpuz_csr_flush()

#endif
