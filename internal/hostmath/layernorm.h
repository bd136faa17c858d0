// The float32 LayerNorm kernels of package hostmath in C with AVX-512, for
// CPUs that have it (the Go loops serve the others). Each row's mean and
// biased variance are two passes of 16-lane float sums; the weight
// gradient accumulates in double.
#include <immintrin.h>
#include <math.h>
#include <stddef.h>

#include "flush.h"

#pragma GCC push_options
#pragma GCC target("avx512f,fma")

static inline __mmask16 gpuz_ln_tail(size_t left) { return (__mmask16)((1u << left) - 1u); }

// gpuz_ln_mask selects the lanes of the 16 columns from i of a row of n.
static inline __mmask16 gpuz_ln_mask(size_t n, size_t i) {
	return n - i >= 16 ? (__mmask16)0xFFFF : gpuz_ln_tail(n - i);
}

// gpuz_ln_stats sets every lane of *mean to the row's mean and of *rstd to
// 1/√(var + eps).
static inline void gpuz_ln_stats(const float *x, size_t n, float eps, __m512 *mean, __m512 *rstd) {
	__m512 s = _mm512_setzero_ps();
	size_t i = 0;
	for (; i + 16 <= n; i += 16) s = _mm512_add_ps(s, _mm512_loadu_ps(x + i));
	if (i < n) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(gpuz_ln_tail(n - i), x + i));
	float m = _mm512_reduce_add_ps(s) / (float)n;
	__m512 mv = _mm512_set1_ps(m), ss = _mm512_setzero_ps();
	for (i = 0; i + 16 <= n; i += 16) {
		__m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + i), mv);
		ss = _mm512_fmadd_ps(d, d, ss);
	}
	if (i < n) {
		__mmask16 k = gpuz_ln_tail(n - i);
		__m512 d = _mm512_maskz_sub_ps(k, _mm512_maskz_loadu_ps(k, x + i), mv);
		ss = _mm512_fmadd_ps(d, d, ss);
	}
	*mean = mv;
	*rstd = _mm512_set1_ps(1.0f / sqrtf(_mm512_reduce_add_ps(ss) / (float)n + eps));
}

// gpuz_ln_xhat is x̂ = (x − mean)·rstd of the lanes of k from x, the others
// (−mean)·rstd.
static inline __m512 gpuz_ln_xhat(const float *x, __mmask16 k, __m512 mean, __m512 rstd) {
	return _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x), mean), rstd);
}

static void gpuz_layernorm_f32(float *y, const float *x, const float *gamma, const float *beta, size_t rows,
                               size_t n, float eps) {
	GPUZ_FLUSH_SUBNORMALS();
	for (size_t r = 0; r < rows; r++) {
		const float *xr = x + r * n;
		float *yr = y + r * n;
		__m512 mv, rv;
		gpuz_ln_stats(xr, n, eps, &mv, &rv);
		for (size_t i = 0; i < n; i += 16) {
			__mmask16 k = gpuz_ln_mask(n, i);
			__m512 v = _mm512_fmadd_ps(gpuz_ln_xhat(xr + i, k, mv, rv), _mm512_maskz_loadu_ps(k, gamma + i),
			                           _mm512_maskz_loadu_ps(k, beta + i));
			_mm512_mask_storeu_ps(yr + i, k, v);
		}
	}
}

static void gpuz_layernorm_input_grad_f32(float *dx, const float *x, const float *gamma, const float *g, size_t rows,
                                          size_t n, float eps) {
	GPUZ_FLUSH_SUBNORMALS();
	for (size_t r = 0; r < rows; r++) {
		const float *xr = x + r * n, *gr = g + r * n;
		float *dr = dx + r * n;
		__m512 mv, rv;
		gpuz_ln_stats(xr, n, eps, &mv, &rv);
		__m512 sg = _mm512_setzero_ps(), sgx = _mm512_setzero_ps();
		for (size_t i = 0; i < n; i += 16) {
			__mmask16 k = gpuz_ln_mask(n, i);
			__m512 gh = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, gr + i), _mm512_maskz_loadu_ps(k, gamma + i));
			__m512 xh = _mm512_maskz_mul_ps(k, _mm512_sub_ps(_mm512_maskz_loadu_ps(k, xr + i), mv), rv);
			sg = _mm512_add_ps(sg, gh);
			sgx = _mm512_fmadd_ps(gh, xh, sgx);
		}
		__m512 mg = _mm512_set1_ps(_mm512_reduce_add_ps(sg) / (float)n);
		__m512 mgx = _mm512_set1_ps(_mm512_reduce_add_ps(sgx) / (float)n);
		for (size_t i = 0; i < n; i += 16) {
			__mmask16 k = gpuz_ln_mask(n, i);
			__m512 gh = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, gr + i), _mm512_maskz_loadu_ps(k, gamma + i));
			__m512 xh = gpuz_ln_xhat(xr + i, k, mv, rv);
			__m512 v = _mm512_mul_ps(_mm512_sub_ps(_mm512_sub_ps(gh, mg), _mm512_mul_ps(xh, mgx)), rv);
			_mm512_mask_storeu_ps(dr + i, k, v);
		}
	}
}

// gpuz_layernorm_weight_grad_f32 adds Σ_rows g ⊙ x̂ into acc[0..n).
static void gpuz_layernorm_weight_grad_f32(double *acc, const float *x, const float *g, size_t rows, size_t n,
                                           float eps) {
	GPUZ_FLUSH_SUBNORMALS();
	for (size_t r = 0; r < rows; r++) {
		const float *xr = x + r * n, *gr = g + r * n;
		__m512 mv, rv;
		gpuz_ln_stats(xr, n, eps, &mv, &rv);
		for (size_t i = 0; i < n; i += 16) {
			__mmask16 k = gpuz_ln_mask(n, i);
			__m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, gr + i), gpuz_ln_xhat(xr + i, k, mv, rv));
			__mmask8 lo = (__mmask8)(k & 0xFF), hi = (__mmask8)(k >> 8);
			__m512d a0 = _mm512_maskz_loadu_pd(lo, acc + i);
			_mm512_mask_storeu_pd(acc + i, lo, _mm512_add_pd(a0, _mm512_cvtps_pd(_mm512_castps512_ps256(v))));
			__m512d a1 = _mm512_maskz_loadu_pd(hi, acc + i + 8);
			__m256 vhi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
			_mm512_mask_storeu_pd(acc + i + 8, hi, _mm512_add_pd(a1, _mm512_cvtps_pd(vhi)));
		}
	}
}

#pragma GCC pop_options

// gpuz_layernorm_avx512 reports whether the CPU runs these kernels.
static int gpuz_layernorm_avx512(void) { return __builtin_cpu_supports("avx512f"); }
