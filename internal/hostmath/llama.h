// The float32 kernels of the Llama family in C: SwiGLU and its gradient,
// RMSNorm and its gradients, and the rotary embedding. Each computes every
// element exactly as the Go loops of swiglu.go, rmsnorm.go and rotary.go
// do (the same operations in the same order, FMA contraction off), so the
// results are the Go kernels' bit for bit, bar the subnormals that flush.h
// flushes: TestLlamaFloat32MatchesGo checks it in every instruction set.
//
// SwiGLU's e^−z is exp32's algorithm (softmax.go: Cephes' expf, a
// reduction by ln 2 split in two, a degree-7 polynomial and two power-of-
// two factors), written with AVX-512 and AVX2 intrinsics; the other kernels
// are plain loops that the compiler vectorises, built for AVX-512, AVX2 and
// the baseline. RMSNorm's sums of squares and of ĝ·x̂ run in 16 float64
// lanes (element i into lane i mod 16; a float32 product is exact in
// float64), added up in a fixed order at the end, as rmsLanes does in Go.
#include <immintrin.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "flush.h"

#define GPUZ_LM_SCALAR 0
#define GPUZ_LM_AVX2 1
#define GPUZ_LM_AVX512 2

// The instruction set these kernels pick on this CPU.
static int gpuz_lm_isa(void) {
	if (__builtin_cpu_supports("avx512f")) return GPUZ_LM_AVX512;
	if (__builtin_cpu_supports("avx2")) return GPUZ_LM_AVX2;
	return GPUZ_LM_SCALAR;
}

#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")

#define GPUZ_LM_LOG2E 1.44269504088896341f
#define GPUZ_LM_LN2HI 0.693359375f
#define GPUZ_LM_LN2LO -2.12194440e-4f
#define GPUZ_LM_HI 88.72283f
#define GPUZ_LM_LO -87.33654f

// gpuz_lm_pow2 is 2^k as a float for k in [-126, 127].
static inline float gpuz_lm_pow2(int32_t k) {
	uint32_t b = (uint32_t)(k + 127) << 23;
	float f;
	memcpy(&f, &b, sizeof f);
	return f;
}

// gpuz_lm_exp is exp32 of softmax.go.
static inline float gpuz_lm_exp(float x) {
	if (x != x) return x;
	if (x > GPUZ_LM_HI) return INFINITY;
	if (x < GPUZ_LM_LO) return 0;
	float n = floorf(x * GPUZ_LM_LOG2E + 0.5f);
	float r = x - n * GPUZ_LM_LN2HI - n * GPUZ_LM_LN2LO;
	float p = 1.9875691500e-4f;
	p = p * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	p = p * r * r + r + 1;
	int32_t ni = (int32_t)n, h = ni / 2;
	return p * gpuz_lm_pow2(h) * gpuz_lm_pow2(ni - h);
}

// gpuz_lm_swiglu_el sets *y to silu(z)·up as SwiGLU's Go loop does.
static inline float gpuz_lm_swiglu_el(float z, float up) { return z / (1 + gpuz_lm_exp(-z)) * up; }

// gpuz_lm_swiglu_grad_el sets *dg and *du as SwiGLUGrad's Go loop does.
static inline void gpuz_lm_swiglu_grad_el(float z, float up, float g, float *dg, float *du) {
	float e = gpuz_lm_exp(-z);
	float sig = 1 / (1 + e);
	*dg = g * up * sig * (1 + z * (1 - sig));
	*du = g * (z / (1 + e));
}

static void gpuz_swiglu_scalar(float *y, const float *x, size_t rows, size_t n) {
	for (size_t r = 0; r < rows; r++) {
		const float *gate = x + 2 * r * n, *up = gate + n;
		float *yr = y + r * n;
		for (size_t j = 0; j < n; j++) yr[j] = gpuz_lm_swiglu_el(gate[j], up[j]);
	}
}

static void gpuz_swiglu_grad_scalar(float *dx, const float *x, const float *g, size_t rows, size_t n) {
	for (size_t r = 0; r < rows; r++) {
		const float *gate = x + 2 * r * n, *up = gate + n, *gr = g + r * n;
		float *dg = dx + 2 * r * n, *du = dg + n;
		for (size_t j = 0; j < n; j++) gpuz_lm_swiglu_grad_el(gate[j], up[j], gr[j], dg + j, du + j);
	}
}

// --------------------------------------------------------------- AVX-512

#pragma GCC push_options
#pragma GCC target("avx512f")

static inline __m512 gpuz_lm_exp512(__m512 x) {
	__mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
	__mmask16 hi = _mm512_cmp_ps_mask(x, _mm512_set1_ps(GPUZ_LM_HI), _CMP_GT_OQ);
	__mmask16 lo = _mm512_cmp_ps_mask(x, _mm512_set1_ps(GPUZ_LM_LO), _CMP_LT_OQ);
	__m512 xc = _mm512_mask_blend_ps(nan | hi | lo, x, _mm512_setzero_ps());
	__m512 n = _mm512_roundscale_ps(
	    _mm512_add_ps(_mm512_mul_ps(xc, _mm512_set1_ps(GPUZ_LM_LOG2E)), _mm512_set1_ps(0.5f)),
	    _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
	__m512 r = _mm512_sub_ps(xc, _mm512_mul_ps(n, _mm512_set1_ps(GPUZ_LM_LN2HI)));
	r = _mm512_sub_ps(r, _mm512_mul_ps(n, _mm512_set1_ps(GPUZ_LM_LN2LO)));
	__m512 p = _mm512_set1_ps(1.9875691500e-4f);
	p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.3981999507e-3f));
	p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(8.3334519073e-3f));
	p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(4.1665795894e-2f));
	p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.6666665459e-1f));
	p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(5.0000001201e-1f));
	p = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(p, r), r), r), _mm512_set1_ps(1.0f));
	__m512i ni = _mm512_cvttps_epi32(n);
	__m512i h = _mm512_srai_epi32(_mm512_add_epi32(ni, _mm512_srli_epi32(ni, 31)), 1);
	__m512i bias = _mm512_set1_epi32(127);
	__m512 f1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(h, bias), 23));
	__m512 f2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_sub_epi32(ni, h), bias), 23));
	__m512 v = _mm512_mul_ps(_mm512_mul_ps(p, f1), f2);
	v = _mm512_mask_blend_ps(lo, v, _mm512_setzero_ps());
	v = _mm512_mask_blend_ps(hi, v, _mm512_set1_ps(INFINITY));
	return _mm512_mask_blend_ps(nan, v, x);
}

static inline __mmask16 gpuz_lm_mask16(size_t n, size_t j) {
	return n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1u);
}

static void gpuz_swiglu_avx512(float *y, const float *x, size_t rows, size_t n) {
	const __m512 one = _mm512_set1_ps(1.0f);
	for (size_t r = 0; r < rows; r++) {
		const float *gate = x + 2 * r * n, *up = gate + n;
		float *yr = y + r * n;
		for (size_t j = 0; j < n; j += 16) {
			__mmask16 k = gpuz_lm_mask16(n, j);
			__m512 z = _mm512_maskz_loadu_ps(k, gate + j);
			__m512 e = gpuz_lm_exp512(_mm512_sub_ps(_mm512_setzero_ps(), z));
			__m512 v = _mm512_mul_ps(_mm512_div_ps(z, _mm512_add_ps(one, e)), _mm512_maskz_loadu_ps(k, up + j));
			_mm512_mask_storeu_ps(yr + j, k, v);
		}
	}
}

static void gpuz_swiglu_grad_avx512(float *dx, const float *x, const float *g, size_t rows, size_t n) {
	const __m512 one = _mm512_set1_ps(1.0f);
	for (size_t r = 0; r < rows; r++) {
		const float *gate = x + 2 * r * n, *up = gate + n, *gr = g + r * n;
		float *dg = dx + 2 * r * n, *du = dg + n;
		for (size_t j = 0; j < n; j += 16) {
			__mmask16 k = gpuz_lm_mask16(n, j);
			__m512 z = _mm512_maskz_loadu_ps(k, gate + j), u = _mm512_maskz_loadu_ps(k, up + j);
			__m512 gv = _mm512_maskz_loadu_ps(k, gr + j);
			__m512 e1 = _mm512_add_ps(one, gpuz_lm_exp512(_mm512_sub_ps(_mm512_setzero_ps(), z)));
			__m512 sig = _mm512_div_ps(one, e1);
			__m512 t = _mm512_add_ps(one, _mm512_mul_ps(z, _mm512_sub_ps(one, sig)));
			_mm512_mask_storeu_ps(dg + j, k, _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(gv, u), sig), t));
			_mm512_mask_storeu_ps(du + j, k, _mm512_mul_ps(gv, _mm512_div_ps(z, e1)));
		}
	}
}

#pragma GCC pop_options

// ------------------------------------------------------------------ AVX2

#pragma GCC push_options
#pragma GCC target("avx2")

static inline __m256 gpuz_lm_exp256(__m256 x) {
	__m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
	__m256 hi = _mm256_cmp_ps(x, _mm256_set1_ps(GPUZ_LM_HI), _CMP_GT_OQ);
	__m256 lo = _mm256_cmp_ps(x, _mm256_set1_ps(GPUZ_LM_LO), _CMP_LT_OQ);
	__m256 xc = _mm256_andnot_ps(_mm256_or_ps(nan, _mm256_or_ps(hi, lo)), x);
	__m256 n = _mm256_floor_ps(_mm256_add_ps(_mm256_mul_ps(xc, _mm256_set1_ps(GPUZ_LM_LOG2E)), _mm256_set1_ps(0.5f)));
	__m256 r = _mm256_sub_ps(xc, _mm256_mul_ps(n, _mm256_set1_ps(GPUZ_LM_LN2HI)));
	r = _mm256_sub_ps(r, _mm256_mul_ps(n, _mm256_set1_ps(GPUZ_LM_LN2LO)));
	__m256 p = _mm256_set1_ps(1.9875691500e-4f);
	p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.3981999507e-3f));
	p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(8.3334519073e-3f));
	p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(4.1665795894e-2f));
	p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.6666665459e-1f));
	p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(5.0000001201e-1f));
	p = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(p, r), r), r), _mm256_set1_ps(1.0f));
	__m256i ni = _mm256_cvttps_epi32(n);
	__m256i h = _mm256_srai_epi32(_mm256_add_epi32(ni, _mm256_srli_epi32(ni, 31)), 1);
	__m256i bias = _mm256_set1_epi32(127);
	__m256 f1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, bias), 23));
	__m256 f2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, h), bias), 23));
	__m256 v = _mm256_mul_ps(_mm256_mul_ps(p, f1), f2);
	v = _mm256_andnot_ps(lo, v);
	v = _mm256_blendv_ps(v, _mm256_set1_ps(INFINITY), hi);
	return _mm256_blendv_ps(v, x, nan);
}

static void gpuz_swiglu_avx2(float *y, const float *x, size_t rows, size_t n) {
	const __m256 one = _mm256_set1_ps(1.0f);
	for (size_t r = 0; r < rows; r++) {
		const float *gate = x + 2 * r * n, *up = gate + n;
		float *yr = y + r * n;
		size_t j = 0;
		for (; j + 8 <= n; j += 8) {
			__m256 z = _mm256_loadu_ps(gate + j);
			__m256 e = gpuz_lm_exp256(_mm256_sub_ps(_mm256_setzero_ps(), z));
			_mm256_storeu_ps(yr + j, _mm256_mul_ps(_mm256_div_ps(z, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + j)));
		}
		for (; j < n; j++) yr[j] = gpuz_lm_swiglu_el(gate[j], up[j]);
	}
}

static void gpuz_swiglu_grad_avx2(float *dx, const float *x, const float *g, size_t rows, size_t n) {
	const __m256 one = _mm256_set1_ps(1.0f);
	for (size_t r = 0; r < rows; r++) {
		const float *gate = x + 2 * r * n, *up = gate + n, *gr = g + r * n;
		float *dg = dx + 2 * r * n, *du = dg + n;
		size_t j = 0;
		for (; j + 8 <= n; j += 8) {
			__m256 z = _mm256_loadu_ps(gate + j), u = _mm256_loadu_ps(up + j), gv = _mm256_loadu_ps(gr + j);
			__m256 e1 = _mm256_add_ps(one, gpuz_lm_exp256(_mm256_sub_ps(_mm256_setzero_ps(), z)));
			__m256 sig = _mm256_div_ps(one, e1);
			__m256 t = _mm256_add_ps(one, _mm256_mul_ps(z, _mm256_sub_ps(one, sig)));
			_mm256_storeu_ps(dg + j, _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(gv, u), sig), t));
			_mm256_storeu_ps(du + j, _mm256_mul_ps(gv, _mm256_div_ps(z, e1)));
		}
		for (; j < n; j++) gpuz_lm_swiglu_grad_el(gate[j], up[j], gr[j], dg + j, du + j);
	}
}

#pragma GCC pop_options

// gpuz_swiglu_f32 is SwiGLU over rows of x [rows, 2n] into y [rows, n].
static void gpuz_swiglu_f32(int isa, float *y, const float *x, size_t rows, size_t n) {
	GPUZ_FLUSH_SUBNORMALS();
	if (isa == GPUZ_LM_AVX512)
		gpuz_swiglu_avx512(y, x, rows, n);
	else if (isa == GPUZ_LM_AVX2)
		gpuz_swiglu_avx2(y, x, rows, n);
	else
		gpuz_swiglu_scalar(y, x, rows, n);
}

// gpuz_swiglu_grad_f32 is SwiGLUGrad over rows of x [rows, 2n] and g
// [rows, n] into dx [rows, 2n].
static void gpuz_swiglu_grad_f32(int isa, float *dx, const float *x, const float *g, size_t rows, size_t n) {
	GPUZ_FLUSH_SUBNORMALS();
	if (isa == GPUZ_LM_AVX512)
		gpuz_swiglu_grad_avx512(dx, x, g, rows, n);
	else if (isa == GPUZ_LM_AVX2)
		gpuz_swiglu_grad_avx2(dx, x, g, rows, n);
	else
		gpuz_swiglu_grad_scalar(dx, x, g, rows, n);
}

// ----------------------------------------------- plain loops, built thrice

// GPUZ_LM defines three copies of the kernel NAME with the parameters
// PARAMS and the body that follows (variadic, for its commas): one built
// for AVX-512, one for AVX2, one for the baseline. GPUZ_LM_ENTRY defines
// gpuz_NAME_f32(isa, PARAMS…), which flushes subnormals and runs the copy
// of isa with ARGS.
#define GPUZ_LM(NAME, PARAMS, ARGS, ...)                                                           \
	__attribute__((target("avx512f"))) static void gpuz_##NAME##_avx512 PARAMS __VA_ARGS__        \
	__attribute__((target("avx2"))) static void gpuz_##NAME##_avx2 PARAMS __VA_ARGS__             \
	static void gpuz_##NAME##_base PARAMS __VA_ARGS__

#define GPUZ_LM_ENTRY(NAME, PARAMS, ARGS)                                                          \
	static void gpuz_##NAME##_f32 PARAMS {                                                        \
		GPUZ_FLUSH_SUBNORMALS();                                                                   \
		if (isa == GPUZ_LM_AVX512)                                                                 \
			gpuz_##NAME##_avx512 ARGS;                                                             \
		else if (isa == GPUZ_LM_AVX2)                                                              \
			gpuz_##NAME##_avx2 ARGS;                                                               \
		else                                                                                       \
			gpuz_##NAME##_base ARGS;                                                               \
	}

#define GPUZ_LM_LANES 16

// gpuz_lm_lanes_sum adds the 16 lanes as rmsLanes does: pairwise, lane i
// with lane i+8, then i+4, i+2, i+1.
static inline double gpuz_lm_lanes_sum(double *l) {
	for (int w = GPUZ_LM_LANES / 2; w >= 1; w /= 2)
		for (int i = 0; i < w; i++) l[i] += l[i + w];
	return l[0];
}

// GPUZ_LM_RSTD sets the float rstd to 1/√(mean(xr²) + eps) over the n
// values of xr, as rmsRstd does.
#define GPUZ_LM_RSTD(rstd, xr, n, eps)                                                               \
	do {                                                                                           \
		double l_[GPUZ_LM_LANES] = {0};                                                            \
		size_t i_ = 0;                                                                             \
		for (; i_ + GPUZ_LM_LANES <= (n); i_ += GPUZ_LM_LANES)                                     \
			for (int j_ = 0; j_ < GPUZ_LM_LANES; j_++)                                             \
				l_[j_] += (double)(xr)[i_ + j_] * (double)(xr)[i_ + j_];                           \
		for (int j_ = 0; i_ + j_ < (n); j_++) l_[j_] += (double)(xr)[i_ + j_] * (double)(xr)[i_ + j_]; \
		(rstd) = (float)(1 / sqrt(gpuz_lm_lanes_sum(l_) / (double)(n) + (eps)));                   \
	} while (0)

// rstd[r] = 1/√(mean(x_r²) + eps) for each of the rows of n columns.
GPUZ_LM(rms_rstd, (float *rstd, const float *x, size_t rows, size_t n, double eps), (rstd, x, rows, n, eps), {
	for (size_t r = 0; r < rows; r++) GPUZ_LM_RSTD(rstd[r], x + r * n, n, eps);
})

// y = weight ⊙ (x·rstd) row by row.
GPUZ_LM(rmsnorm, (float *y, const float *x, const float *w, size_t rows, size_t n, double eps),
        (y, x, w, rows, n, eps), {
	for (size_t r = 0; r < rows; r++) {
		const float *xr = x + r * n;
		float *yr = y + r * n, rstd;
		GPUZ_LM_RSTD(rstd, xr, n, eps);
		for (size_t i = 0; i < n; i++) yr[i] = w[i] * (xr[i] * rstd);
	}
})

// dx = (ĝ − x̂·mean(ĝ ⊙ x̂))·rstd row by row, ĝ = g ⊙ weight.
GPUZ_LM(rmsnorm_input_grad,
        (float *dx, const float *x, const float *w, const float *g, size_t rows, size_t n, double eps),
        (dx, x, w, g, rows, n, eps), {
	for (size_t r = 0; r < rows; r++) {
		const float *xr = x + r * n, *gr = g + r * n;
		float *dr = dx + r * n, rstd;
		GPUZ_LM_RSTD(rstd, xr, n, eps);
		double l[GPUZ_LM_LANES] = {0};
		size_t i = 0;
		for (; i + GPUZ_LM_LANES <= n; i += GPUZ_LM_LANES)
			for (int j = 0; j < GPUZ_LM_LANES; j++)
				l[j] += (double)(gr[i + j] * w[i + j]) * (double)(xr[i + j] * rstd);
		for (int j = 0; i + j < n; j++) l[j] += (double)(gr[i + j] * w[i + j]) * (double)(xr[i + j] * rstd);
		float mgx = (float)(gpuz_lm_lanes_sum(l) / (double)n);
		for (i = 0; i < n; i++) dr[i] = (gr[i] * w[i] - (xr[i] * rstd) * mgx) * rstd;
	}
})

// acc[c − c0] += Σ_r g[r][c]·(x[r][c]·rstd[r]) for the columns c of
// [c0, c1), rows of ld columns added in order.
GPUZ_LM(rmsnorm_weight_grad,
        (double *acc, const float *x, const float *g, const float *rstd, size_t rows, size_t ld, size_t c0,
         size_t c1),
        (acc, x, g, rstd, rows, ld, c0, c1), {
	for (size_t r = 0; r < rows; r++) {
		const float *xr = x + r * ld + c0, *gr = g + r * ld + c0;
		float s = rstd[r];
		for (size_t i = 0; i < c1 - c0; i++) acc[i] += (double)(gr[i] * (xr[i] * s));
	}
})

// Rotary (or with inverse its gradient) over rows [r0, r0 + rows) of
// width columns, the row's position (row mod seq); cos and sin are
// [seq, hd/2]. See rotate in rotary.go.
GPUZ_LM(rotary,
        (float *y, const float *x, const float *cs, const float *sn, size_t rows, size_t r0, size_t heads,
         size_t hd, size_t seq, size_t width, int inverse),
        (y, x, cs, sn, rows, r0, heads, hd, seq, width, inverse), {
	size_t half = hd / 2, rotated = heads * hd;
	for (size_t r = 0; r < rows; r++) {
		size_t pos = (r0 + r) % seq;
		const float *c = cs + pos * half, *s = sn + pos * half, *xr = x + r * width;
		float *yr = y + r * width;
		for (size_t h = 0; h < rotated; h += hd) {
			const float *x1 = xr + h, *x2 = xr + h + half;
			float *y1 = yr + h, *y2 = yr + h + half;
			if (inverse) {
				for (size_t j = 0; j < half; j++) {
					float sj = -s[j];
					y1[j] = x1[j] * c[j] + (-x2[j]) * sj;
					y2[j] = x2[j] * c[j] + x1[j] * sj;
				}
			} else {
				for (size_t j = 0; j < half; j++) {
					y1[j] = x1[j] * c[j] + (-x2[j]) * s[j];
					y2[j] = x2[j] * c[j] + x1[j] * s[j];
				}
			}
		}
		memmove(yr + rotated, xr + rotated, (width - rotated) * sizeof(float));
	}
})

GPUZ_LM_ENTRY(rms_rstd, (int isa, float *rstd, const float *x, size_t rows, size_t n, double eps),
              (rstd, x, rows, n, eps))
GPUZ_LM_ENTRY(rmsnorm, (int isa, float *y, const float *x, const float *w, size_t rows, size_t n, double eps),
              (y, x, w, rows, n, eps))
GPUZ_LM_ENTRY(rmsnorm_input_grad,
              (int isa, float *dx, const float *x, const float *w, const float *g, size_t rows, size_t n,
               double eps),
              (dx, x, w, g, rows, n, eps))
GPUZ_LM_ENTRY(rmsnorm_weight_grad,
              (int isa, double *acc, const float *x, const float *g, const float *rstd, size_t rows, size_t ld,
               size_t c0, size_t c1),
              (acc, x, g, rstd, rows, ld, c0, c1))
GPUZ_LM_ENTRY(rotary,
              (int isa, float *y, const float *x, const float *cs, const float *sn, size_t rows, size_t r0,
               size_t heads, size_t hd, size_t seq, size_t width, int inverse),
              (y, x, cs, sn, rows, r0, heads, hd, seq, width, inverse))

#pragma GCC pop_options
