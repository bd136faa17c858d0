// Row-wise float32 softmax kernels of package hostmath in C: AVX-512 where
// the CPU has it, else AVX2 with FMA, else scalar C. exp is Cephes' expf
// (range reduction by ln 2, degree-7 polynomial), evaluated alike for every
// element of a row, the tail included (masked on AVX-512, padded on AVX2),
// so that a result does not depend on its position in the row. Arguments
// are clamped to [-87.33654, 88.37626]: below, exp is under 1.2e-38 and
// counts as the smallest normal float.
#include <immintrin.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "flush.h"

#define GPUZ_EXP_LO -87.33654f
#define GPUZ_EXP_HI 88.37626f
#define GPUZ_LOG2E 1.44269504088896341f
#define GPUZ_LN2_HI 0.693359375f
#define GPUZ_LN2_LO -2.12194440e-4f
#define GPUZ_P0 1.9875691500e-4f
#define GPUZ_P1 1.3981999507e-3f
#define GPUZ_P2 8.3334519073e-3f
#define GPUZ_P3 4.1665795894e-2f
#define GPUZ_P4 1.6666665459e-1f
#define GPUZ_P5 5.0000001201e-1f

// The number of leading entries of row r (of a block starting at row r0)
// that take part: all n, or when causal the diagonal and what is left of it.
static inline size_t gpuz_limit(size_t r0, size_t r, size_t n, int causal) {
	if (!causal) return n;
	size_t lim = r0 + r + 1;
	return lim < n ? lim : n;
}

// ---------------------------------------------------------------- scalar

static inline float gpuz_exp_scalar(float x) {
	x = fminf(fmaxf(x, GPUZ_EXP_LO), GPUZ_EXP_HI);
	float n = floorf(x * GPUZ_LOG2E + 0.5f);
	float r = x - n * GPUZ_LN2_HI - n * GPUZ_LN2_LO;
	float p = GPUZ_P0;
	p = p * r + GPUZ_P1;
	p = p * r + GPUZ_P2;
	p = p * r + GPUZ_P3;
	p = p * r + GPUZ_P4;
	p = p * r + GPUZ_P5;
	p = p * r * r + r + 1.0f;
	return ldexpf(p, (int)n);
}

static void gpuz_softmax_rows_scalar(float *p, size_t rows, size_t n, size_t ld, size_t r0, int causal) {
	for (size_t r = 0; r < rows; r++) {
		float *row = p + r * ld;
		size_t lim = gpuz_limit(r0, r, n, causal);
		float m = row[0];
		for (size_t i = 1; i < lim; i++) m = fmaxf(m, row[i]);
		float s = 0;
		for (size_t i = 0; i < lim; i++) {
			row[i] = gpuz_exp_scalar(row[i] - m);
			s += row[i];
		}
		float inv = 1.0f / s;
		for (size_t i = 0; i < lim; i++) row[i] *= inv;
		memset(row + lim, 0, (n - lim) * sizeof(float));
	}
}

static void gpuz_softmax_grad_rows_scalar(float *ds, const float *p, const float *dp, size_t rows, size_t n,
                                          size_t ld, size_t r0, int causal) {
	for (size_t r = 0; r < rows; r++) {
		const float *pr = p + r * ld, *gr = dp + r * ld;
		float *out = ds + r * ld;
		size_t lim = gpuz_limit(r0, r, n, causal);
		float dot = 0;
		for (size_t i = 0; i < lim; i++) dot += pr[i] * gr[i];
		for (size_t i = 0; i < lim; i++) out[i] = pr[i] * (gr[i] - dot);
		memset(out + lim, 0, (n - lim) * sizeof(float));
	}
}

static void gpuz_softmax_scaled_rows_scalar(float *dst, const float *x, size_t rows, size_t n, float scale,
                                            double *lse) {
	for (size_t r = 0; r < rows; r++) {
		const float *xr = x + r * n;
		float *d = dst + r * n;
		float m = xr[0];
		for (size_t i = 1; i < n; i++) m = fmaxf(m, xr[i]);
		float s = 0;
		for (size_t i = 0; i < n; i++) {
			d[i] = gpuz_exp_scalar(xr[i] - m);
			s += d[i];
		}
		if (lse) lse[r] = (double)m + log((double)s);
		float k = scale / s;
		for (size_t i = 0; i < n; i++) d[i] *= k;
	}
}

// --------------------------------------------------------------- AVX-512

#pragma GCC push_options
#pragma GCC target("avx512f,fma")

static inline __m512 gpuz_exp512(__m512 x) {
	x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(GPUZ_EXP_LO)), _mm512_set1_ps(GPUZ_EXP_HI));
	__m512 n = _mm512_roundscale_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(GPUZ_LOG2E), _mm512_set1_ps(0.5f)),
	                                _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
	__m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(GPUZ_LN2_HI), x);
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(GPUZ_LN2_LO), r);
	__m512 p = _mm512_set1_ps(GPUZ_P0);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(GPUZ_P1));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(GPUZ_P2));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(GPUZ_P3));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(GPUZ_P4));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(GPUZ_P5));
	p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
	return _mm512_scalef_ps(p, n);
}

static inline __mmask16 gpuz_tail16(size_t left) { return (__mmask16)((1u << left) - 1u); }

static inline float gpuz_max512(const float *x, size_t n) {
	__m512 m = _mm512_set1_ps(-INFINITY);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) m = _mm512_max_ps(m, _mm512_loadu_ps(x + i));
	if (i < n) m = _mm512_max_ps(m, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), gpuz_tail16(n - i), x + i));
	return _mm512_reduce_max_ps(m);
}

// dst[i] = exp(x[i] − shift) for i < n; returns the sum.
static inline float gpuz_exp_sum512(float *dst, const float *x, size_t n, float shift) {
	__m512 s = _mm512_setzero_ps(), sh = _mm512_set1_ps(shift);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 e = gpuz_exp512(_mm512_sub_ps(_mm512_loadu_ps(x + i), sh));
		_mm512_storeu_ps(dst + i, e);
		s = _mm512_add_ps(s, e);
	}
	if (i < n) {
		__mmask16 k = gpuz_tail16(n - i);
		__m512 e = gpuz_exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), sh));
		_mm512_mask_storeu_ps(dst + i, k, e);
		s = _mm512_mask_add_ps(s, k, s, e);
	}
	return _mm512_reduce_add_ps(s);
}

static inline void gpuz_scale512(float *x, size_t n, float k) {
	__m512 kv = _mm512_set1_ps(k);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), kv));
	if (i < n) {
		__mmask16 m = gpuz_tail16(n - i);
		_mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), kv));
	}
}

static void gpuz_softmax_rows_avx512(float *p, size_t rows, size_t n, size_t ld, size_t r0, int causal) {
	for (size_t r = 0; r < rows; r++) {
		float *row = p + r * ld;
		size_t lim = gpuz_limit(r0, r, n, causal);
		float s = gpuz_exp_sum512(row, row, lim, gpuz_max512(row, lim));
		gpuz_scale512(row, lim, 1.0f / s);
		memset(row + lim, 0, (n - lim) * sizeof(float));
	}
}

static void gpuz_softmax_grad_rows_avx512(float *ds, const float *p, const float *dp, size_t rows, size_t n,
                                          size_t ld, size_t r0, int causal) {
	for (size_t r = 0; r < rows; r++) {
		const float *pr = p + r * ld, *gr = dp + r * ld;
		float *out = ds + r * ld;
		size_t lim = gpuz_limit(r0, r, n, causal);
		__m512 acc = _mm512_setzero_ps();
		size_t i = 0;
		for (; i + 16 <= lim; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(pr + i), _mm512_loadu_ps(gr + i), acc);
		__mmask16 k = gpuz_tail16(lim - i);
		if (i < lim) acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, pr + i), _mm512_maskz_loadu_ps(k, gr + i), acc);
		__m512 dot = _mm512_set1_ps(_mm512_reduce_add_ps(acc));
		for (i = 0; i + 16 <= lim; i += 16)
			_mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_loadu_ps(pr + i), _mm512_sub_ps(_mm512_loadu_ps(gr + i), dot)));
		if (i < lim)
			_mm512_mask_storeu_ps(out + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, pr + i),
			                                                _mm512_sub_ps(_mm512_maskz_loadu_ps(k, gr + i), dot)));
		memset(out + lim, 0, (n - lim) * sizeof(float));
	}
}

static void gpuz_softmax_scaled_rows_avx512(float *dst, const float *x, size_t rows, size_t n, float scale,
                                            double *lse) {
	for (size_t r = 0; r < rows; r++) {
		float m = gpuz_max512(x + r * n, n);
		float s = gpuz_exp_sum512(dst + r * n, x + r * n, n, m);
		if (lse) lse[r] = (double)m + log((double)s);
		gpuz_scale512(dst + r * n, n, scale / s);
	}
}

#pragma GCC pop_options

// ------------------------------------------------------------- AVX2 + FMA

#pragma GCC push_options
#pragma GCC target("avx2,fma")

static inline __m256 gpuz_exp256(__m256 x) {
	x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(GPUZ_EXP_LO)), _mm256_set1_ps(GPUZ_EXP_HI));
	__m256 n = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(GPUZ_LOG2E), _mm256_set1_ps(0.5f)));
	__m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(GPUZ_LN2_HI), x);
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(GPUZ_LN2_LO), r);
	__m256 p = _mm256_set1_ps(GPUZ_P0);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(GPUZ_P1));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(GPUZ_P2));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(GPUZ_P3));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(GPUZ_P4));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(GPUZ_P5));
	p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
	// 2ⁿ in two factors keeps both exponents in range at the clamps.
	__m256i ni = _mm256_cvtps_epi32(n);
	__m256i h = _mm256_srai_epi32(ni, 1);
	__m256 a = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, _mm256_set1_epi32(127)), 23));
	__m256 b = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, h), _mm256_set1_epi32(127)), 23));
	return _mm256_mul_ps(_mm256_mul_ps(p, a), b);
}

static inline float gpuz_hsum256(__m256 v) {
	float t[8];
	_mm256_storeu_ps(t, v);
	return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

static inline float gpuz_hmax256(__m256 v) {
	float t[8];
	_mm256_storeu_ps(t, v);
	float m = t[0];
	for (int i = 1; i < 8; i++) m = fmaxf(m, t[i]);
	return m;
}

// load8 reads left < 8 elements into a vector padded with fill.
static inline __m256 gpuz_load_tail256(const float *x, size_t left, float fill) {
	float t[8];
	for (size_t i = 0; i < 8; i++) t[i] = i < left ? x[i] : fill;
	return _mm256_loadu_ps(t);
}

static inline void gpuz_store_tail256(float *x, size_t left, __m256 v) {
	float t[8];
	_mm256_storeu_ps(t, v);
	memcpy(x, t, left * sizeof(float));
}

static inline float gpuz_max256(const float *x, size_t n) {
	__m256 m = _mm256_set1_ps(-INFINITY);
	size_t i = 0;
	for (; i + 8 <= n; i += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));
	if (i < n) m = _mm256_max_ps(m, gpuz_load_tail256(x + i, n - i, -INFINITY));
	return gpuz_hmax256(m);
}

static inline float gpuz_exp_sum256(float *dst, const float *x, size_t n, float shift) {
	__m256 s = _mm256_setzero_ps(), sh = _mm256_set1_ps(shift);
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 e = gpuz_exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), sh));
		_mm256_storeu_ps(dst + i, e);
		s = _mm256_add_ps(s, e);
	}
	float total = gpuz_hsum256(s);
	if (i < n) {
		float t[8];
		_mm256_storeu_ps(t, gpuz_exp256(_mm256_sub_ps(gpuz_load_tail256(x + i, n - i, 0), sh)));
		for (size_t j = 0; j < n - i; j++) {
			dst[i + j] = t[j];
			total += t[j];
		}
	}
	return total;
}

static inline void gpuz_scale256(float *x, size_t n, float k) {
	__m256 kv = _mm256_set1_ps(k);
	size_t i = 0;
	for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), kv));
	if (i < n) gpuz_store_tail256(x + i, n - i, _mm256_mul_ps(gpuz_load_tail256(x + i, n - i, 0), kv));
}

static void gpuz_softmax_rows_avx2(float *p, size_t rows, size_t n, size_t ld, size_t r0, int causal) {
	for (size_t r = 0; r < rows; r++) {
		float *row = p + r * ld;
		size_t lim = gpuz_limit(r0, r, n, causal);
		float s = gpuz_exp_sum256(row, row, lim, gpuz_max256(row, lim));
		gpuz_scale256(row, lim, 1.0f / s);
		memset(row + lim, 0, (n - lim) * sizeof(float));
	}
}

static void gpuz_softmax_grad_rows_avx2(float *ds, const float *p, const float *dp, size_t rows, size_t n,
                                        size_t ld, size_t r0, int causal) {
	for (size_t r = 0; r < rows; r++) {
		const float *pr = p + r * ld, *gr = dp + r * ld;
		float *out = ds + r * ld;
		size_t lim = gpuz_limit(r0, r, n, causal);
		__m256 acc = _mm256_setzero_ps();
		size_t i = 0;
		for (; i + 8 <= lim; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(pr + i), _mm256_loadu_ps(gr + i), acc);
		if (i < lim)
			acc = _mm256_fmadd_ps(gpuz_load_tail256(pr + i, lim - i, 0), gpuz_load_tail256(gr + i, lim - i, 0), acc);
		__m256 dot = _mm256_set1_ps(gpuz_hsum256(acc));
		for (i = 0; i + 8 <= lim; i += 8)
			_mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(pr + i), _mm256_sub_ps(_mm256_loadu_ps(gr + i), dot)));
		if (i < lim)
			gpuz_store_tail256(out + i, lim - i,
			                   _mm256_mul_ps(gpuz_load_tail256(pr + i, lim - i, 0),
			                                 _mm256_sub_ps(gpuz_load_tail256(gr + i, lim - i, 0), dot)));
		memset(out + lim, 0, (n - lim) * sizeof(float));
	}
}

static void gpuz_softmax_scaled_rows_avx2(float *dst, const float *x, size_t rows, size_t n, float scale,
                                          double *lse) {
	for (size_t r = 0; r < rows; r++) {
		float m = gpuz_max256(x + r * n, n);
		float s = gpuz_exp_sum256(dst + r * n, x + r * n, n, m);
		if (lse) lse[r] = (double)m + log((double)s);
		gpuz_scale256(dst + r * n, n, scale / s);
	}
}

#pragma GCC pop_options

// ------------------------------------------------------------- dispatch

// Instruction sets, best last; gpuz_softmax_isa picks the best the CPU has.
// fusedattention.h and kvcache.h, which call these exponentials, choose
// by the same names.
enum { GPUZ_ISA_SCALAR, GPUZ_ISA_AVX2, GPUZ_ISA_AVX512 };

static int gpuz_softmax_isa(void) {
	if (__builtin_cpu_supports("avx512f")) return GPUZ_ISA_AVX512;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return GPUZ_ISA_AVX2;
	return GPUZ_ISA_SCALAR;
}

// gpuz_softmax_rows_f32 sets each of rows rows (stride ld) of p, the first
// being row r0 of its matrix, to the softmax of its leading entries (all n,
// or those up to the diagonal when causal) and the rest of its n entries
// to zero.
static void gpuz_softmax_rows_f32(int isa, float *p, size_t rows, size_t n, size_t ld, size_t r0, int causal) {
	GPUZ_FLUSH_SUBNORMALS();
	switch (isa) {
	case GPUZ_ISA_AVX512: gpuz_softmax_rows_avx512(p, rows, n, ld, r0, causal); break;
	case GPUZ_ISA_AVX2: gpuz_softmax_rows_avx2(p, rows, n, ld, r0, causal); break;
	default: gpuz_softmax_rows_scalar(p, rows, n, ld, r0, causal);
	}
}

// gpuz_softmax_grad_rows_f32 sets ds = p ⊙ (dp − rowsum(p ⊙ dp)) over the
// same leading entries as gpuz_softmax_rows_f32, and the rest to zero.
static void gpuz_softmax_grad_rows_f32(int isa, float *ds, const float *p, const float *dp, size_t rows, size_t n,
                                       size_t ld, size_t r0, int causal) {
	GPUZ_FLUSH_SUBNORMALS();
	switch (isa) {
	case GPUZ_ISA_AVX512: gpuz_softmax_grad_rows_avx512(ds, p, dp, rows, n, ld, r0, causal); break;
	case GPUZ_ISA_AVX2: gpuz_softmax_grad_rows_avx2(ds, p, dp, rows, n, ld, r0, causal); break;
	default: gpuz_softmax_grad_rows_scalar(ds, p, dp, rows, n, ld, r0, causal);
	}
}

// gpuz_softmax_scaled_rows_f32 sets each of rows contiguous rows of n
// entries of dst to scale·softmax of the matching row of x and, when lse is
// not NULL, lse[r] to the row's log-sum-exp.
static void gpuz_softmax_scaled_rows_f32(int isa, float *dst, const float *x, size_t rows, size_t n, float scale,
                                         double *lse) {
	GPUZ_FLUSH_SUBNORMALS();
	switch (isa) {
	case GPUZ_ISA_AVX512: gpuz_softmax_scaled_rows_avx512(dst, x, rows, n, scale, lse); break;
	case GPUZ_ISA_AVX2: gpuz_softmax_scaled_rows_avx2(dst, x, rows, n, scale, lse); break;
	default: gpuz_softmax_scaled_rows_scalar(dst, x, rows, n, scale, lse);
	}
}
