// The float32 sum and sum of squares of package hostmath in C: AVX-512
// loops where the CPU has AVX-512F, scalar loops elsewhere, all
// accumulating in double in an order fixed by n alone.
#include <immintrin.h>
#include <stddef.h>

#include "flush.h"

// gpuz_term is v in double, or its square when squares is nonzero.
static inline double gpuz_term(float v, int squares) { return squares ? (double)v * v : v; }

// gpuz_sum_terms is the sum in double of x's elements (of their squares
// when squares is nonzero): element i into accumulator i mod 4 up to the
// last whole four, the rest into the first, the four added pairwise at the
// end. Each caller passes squares as a constant, and the function is
// always inlined, so that each caller's loop tests nothing.
__attribute__((always_inline)) static inline double gpuz_sum_terms(const float *x, size_t n, int squares) {
	double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	size_t i = 0;
	for (; i + 4 <= n; i += 4) {
		s0 += gpuz_term(x[i], squares);
		s1 += gpuz_term(x[i + 1], squares);
		s2 += gpuz_term(x[i + 2], squares);
		s3 += gpuz_term(x[i + 3], squares);
	}
	for (; i < n; i++)
		s0 += gpuz_term(x[i], squares);
	return (s0 + s1) + (s2 + s3);
}

static double gpuz_sumsq_scalar(const float *x, size_t n) { return gpuz_sum_terms(x, n, 1); }

static double gpuz_sum_scalar(const float *x, size_t n) { return gpuz_sum_terms(x, n, 0); }

// gpuz_term512 is a plus x (plus x's squares, fused, when squares is
// nonzero).
__attribute__((target("avx512f,fma"), always_inline)) static inline __m512d gpuz_term512(__m512d a, __m512d x,
                                                                                        int squares) {
	return squares ? _mm512_fmadd_pd(x, x, a) : _mm512_add_pd(a, x);
}

// gpuz_sum_terms512 is gpuz_sum_terms with AVX-512: four 8-lane double
// accumulators, 32 floats a step, their lanes added up, then the rest by
// the scalar loop. Always inlined with squares a constant, as
// gpuz_sum_terms.
__attribute__((target("avx512f,fma"), always_inline)) static inline double gpuz_sum_terms512(const float *x, size_t n,
                                                                                            int squares) {
	__m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		__m512d x0 = _mm512_cvtps_pd(_mm256_loadu_ps(x + i)), x1 = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8));
		__m512d x2 = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 16)), x3 = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 24));
		a0 = gpuz_term512(a0, x0, squares);
		a1 = gpuz_term512(a1, x1, squares);
		a2 = gpuz_term512(a2, x2, squares);
		a3 = gpuz_term512(a3, x3, squares);
	}
	double s = _mm512_reduce_add_pd(_mm512_add_pd(_mm512_add_pd(a0, a1), _mm512_add_pd(a2, a3)));
	return s + (squares ? gpuz_sumsq_scalar(x + i, n - i) : gpuz_sum_scalar(x + i, n - i));
}

__attribute__((target("avx512f,fma")))
static double gpuz_sumsq_avx512(const float *x, size_t n) { return gpuz_sum_terms512(x, n, 1); }

__attribute__((target("avx512f,fma")))
static double gpuz_sum_avx512(const float *x, size_t n) { return gpuz_sum_terms512(x, n, 0); }

static double gpuz_sumsq_f32(const float *x, size_t n) {
	GPUZ_FLUSH_SUBNORMALS();
	return __builtin_cpu_supports("avx512f") ? gpuz_sumsq_avx512(x, n) : gpuz_sumsq_scalar(x, n);
}

static double gpuz_sum_f32(const float *x, size_t n) {
	GPUZ_FLUSH_SUBNORMALS();
	return __builtin_cpu_supports("avx512f") ? gpuz_sum_avx512(x, n) : gpuz_sum_scalar(x, n);
}
