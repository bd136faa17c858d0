// The float32 Adam update of package hostmath in C: an AVX-512 loop where
// the CPU has AVX-512F, an AVX2 loop where it has AVX2, a scalar loop
// elsewhere. All do adamGo's arithmetic, operation for operation, with no
// fused multiply-add (the avx2 target does not enable FMA, and the avx512f
// one, which does, is compiled with fp-contract off), so every result
// rounds as in Go.
//
// The vector loop is written with intrinsics because cgo does not accept
// -fno-math-errno, without which the compiler keeps sqrtf scalar.
#include <immintrin.h>
#include <math.h>
#include <stddef.h>

#include "flush.h"

typedef struct {
	float scale, beta1, beta2, one_minus_beta1, one_minus_beta2, step_size, correction2_sqrt, eps;
} gpuz_adam_constants;

static void gpuz_adam_scalar(float *p, const float *g, float *m, float *v, size_t n,
                             const gpuz_adam_constants *c) {
	for (size_t i = 0; i < n; i++) {
		float gi = g[i] * c->scale;
		float mi = m[i] * c->beta1 + gi * c->one_minus_beta1;
		float vi = v[i] * c->beta2 + gi * gi * c->one_minus_beta2;
		m[i] = mi;
		v[i] = vi;
		float denom = sqrtf(vi) / c->correction2_sqrt + c->eps;
		p[i] -= c->step_size * (mi / denom);
	}
}

__attribute__((target("avx2")))
static void gpuz_adam_avx2(float *p, const float *g, float *m, float *v, size_t n,
                           const gpuz_adam_constants *c) {
	const __m256 scale = _mm256_set1_ps(c->scale);
	const __m256 beta1 = _mm256_set1_ps(c->beta1), beta2 = _mm256_set1_ps(c->beta2);
	const __m256 omb1 = _mm256_set1_ps(c->one_minus_beta1), omb2 = _mm256_set1_ps(c->one_minus_beta2);
	const __m256 step = _mm256_set1_ps(c->step_size), corr = _mm256_set1_ps(c->correction2_sqrt);
	const __m256 eps = _mm256_set1_ps(c->eps);
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 gi = _mm256_mul_ps(_mm256_loadu_ps(g + i), scale);
		__m256 mi = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(m + i), beta1), _mm256_mul_ps(gi, omb1));
		__m256 vi = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(v + i), beta2),
		                          _mm256_mul_ps(_mm256_mul_ps(gi, gi), omb2));
		_mm256_storeu_ps(m + i, mi);
		_mm256_storeu_ps(v + i, vi);
		__m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), corr), eps);
		__m256 pi = _mm256_sub_ps(_mm256_loadu_ps(p + i), _mm256_mul_ps(step, _mm256_div_ps(mi, denom)));
		_mm256_storeu_ps(p + i, pi);
	}
	gpuz_adam_scalar(p + i, g + i, m + i, v + i, n - i, c);
}

__attribute__((target("avx512f"), optimize("fp-contract=off")))
static void gpuz_adam_avx512(float *p, const float *g, float *m, float *v, size_t n,
                             const gpuz_adam_constants *c) {
	const __m512 scale = _mm512_set1_ps(c->scale);
	const __m512 beta1 = _mm512_set1_ps(c->beta1), beta2 = _mm512_set1_ps(c->beta2);
	const __m512 omb1 = _mm512_set1_ps(c->one_minus_beta1), omb2 = _mm512_set1_ps(c->one_minus_beta2);
	const __m512 step = _mm512_set1_ps(c->step_size), corr = _mm512_set1_ps(c->correction2_sqrt);
	const __m512 eps = _mm512_set1_ps(c->eps);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 gi = _mm512_mul_ps(_mm512_loadu_ps(g + i), scale);
		__m512 mi = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(m + i), beta1), _mm512_mul_ps(gi, omb1));
		__m512 vi = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(v + i), beta2),
		                          _mm512_mul_ps(_mm512_mul_ps(gi, gi), omb2));
		_mm512_storeu_ps(m + i, mi);
		_mm512_storeu_ps(v + i, vi);
		__m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vi), corr), eps);
		__m512 pi = _mm512_sub_ps(_mm512_loadu_ps(p + i), _mm512_mul_ps(step, _mm512_div_ps(mi, denom)));
		_mm512_storeu_ps(p + i, pi);
	}
	gpuz_adam_scalar(p + i, g + i, m + i, v + i, n - i, c);
}

// The loops gpuz_adam_f32 can run: the widest the CPU has, or one named
// (the tests run each the CPU can).
enum { GPUZ_ADAM_WIDEST, GPUZ_ADAM_SCALAR, GPUZ_ADAM_AVX2, GPUZ_ADAM_AVX512 };

static void gpuz_adam_f32(float *p, const float *g, float *m, float *v, size_t n,
                          gpuz_adam_constants c, int path) {
	GPUZ_FLUSH_SUBNORMALS();
	if (path == GPUZ_ADAM_WIDEST)
		path = __builtin_cpu_supports("avx512f") ? GPUZ_ADAM_AVX512
		       : __builtin_cpu_supports("avx2") ? GPUZ_ADAM_AVX2
		                                         : GPUZ_ADAM_SCALAR;
	switch (path) {
	case GPUZ_ADAM_AVX512:
		gpuz_adam_avx512(p, g, m, v, n, &c);
		break;
	case GPUZ_ADAM_AVX2:
		gpuz_adam_avx2(p, g, m, v, n, &c);
		break;
	default:
		gpuz_adam_scalar(p, g, m, v, n, &c);
	}
}
