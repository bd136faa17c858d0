// The products by a quantized weight of package hostmath in C (quant.go):
// y = x·Wᵀ and dx = g·W for W [n, k] stored in one of ggml's block kinds,
// Q8_0, Q4_0 or Q4_K, quantized along its rows of k (ggml-common.h's
// block_q8_0, block_q4_0, block_q4_K; internal/quant's DequantizeRow is
// the reference decoding). The weight is never widened whole: its blocks
// are decoded into float32 vector registers, 32 weights (a "sub-block") at
// a time, where they are used:
//
//   - gpuz_quant_dot: y's columns [j0, j1) for m ≤ 4 rows of x (a decode
//     step), two rows of W at a time, each sub-block FMA'd with x's rows
//     into 16- or 8-lane accumulators added up at the end of the row;
//   - gpuz_quant_gw: dx's columns [32·s0, 32·s1) for m ≤ 4 rows of g,
//     over W's rows in order, each sub-block decoded and added, times g's
//     entry, into dx's rows (which stay in L1);
//   - gpuz_quant_tile: rows × 32·(s1 − s0) weights of W decoded into a
//     float32 tile, which the many-row product hands to the SGEMM's
//     micro-kernel (sgemm.h) a block of terms at a time.
//
// A sub-block s of a row decodes as DequantizeRow does: Q8_0 d·q, Q4_0
// d·(q − 8) (both exact as the reference computes them: one rounding of
// the same product), Q4_K d·sc·q − dmin·m with d·sc and dmin·m rounded as
// the reference rounds them and the last product and difference fused
// into one FMA (one rounding where the reference makes two). Each sum runs
// in an order fixed by the shape (the sub-blocks in turn, a lane per
// position), so results do not depend on the threads.
//
// Each kernel is built for AVX-512 (16 lanes) and AVX2 (8 lanes) from the
// one template in quantkern.h; gpuz_quant_isa says which this CPU runs. A
// CPU without AVX2, FMA and F16C runs quant.go's Go loops.
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "flush.h"

#define GPUZ_Q_GO 0
#define GPUZ_Q_AVX2 1
#define GPUZ_Q_AVX512 2

// The kinds, as quant.Kind numbers them.
#define GPUZ_Q8_0 3
#define GPUZ_Q4_0 4
#define GPUZ_Q4_K 5

// The bytes of a block of each kind: 32 weights for Q8_0 and Q4_0, 256 for
// Q4_K.
#define GPUZ_Q8_0_BYTES 34
#define GPUZ_Q4_0_BYTES 18
#define GPUZ_Q4_K_BYTES 144

// gpuz_quant_isa is the instruction set these kernels run on this CPU.
static int gpuz_quant_isa(void) {
	if (!__builtin_cpu_supports("f16c") || !__builtin_cpu_supports("fma")) return GPUZ_Q_GO;
	if (__builtin_cpu_supports("avx512f")) return GPUZ_Q_AVX512;
	if (__builtin_cpu_supports("avx2")) return GPUZ_Q_AVX2;
	return GPUZ_Q_GO;
}

// gpuz_q4k_scale_min sets *d and *n to sub-block j's (0 to 7) scale d·sc
// and offset dmin·m of the Q4_K super-block b (ggml's get_scale_min_k4
// reads the 6-bit sc and m from its twelve scale bytes).
__attribute__((target("f16c"))) static inline void gpuz_q4k_scale_min(const uint8_t *b, int j, float *d, float *n) {
	const uint8_t *q = b + 4;
	uint8_t sc, m;
	if (j < 4) {
		sc = q[j] & 63;
		m = q[j + 4] & 63;
	} else {
		sc = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
		m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
	}
	*d = _cvtsh_ss(*(const uint16_t *)b) * (float)sc;
	*n = _cvtsh_ss(*(const uint16_t *)(b + 2)) * (float)m;
}

// ------------------------------------------------------------ AVX-512

#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma,f16c")

// gpuz_q_decode_avx512 sets v[0] and v[1] to sub-block s (weights 32·s to
// 32·s + 31) of the row at row, stored in kind.
static inline __attribute__((always_inline)) void gpuz_q_decode_avx512(const int kind, const uint8_t *row, int s,
                                                                      __m512 v[2]) {
	const __m128i low = _mm_set1_epi8(0x0F);
	if (kind == GPUZ_Q8_0) {
		const uint8_t *b = row + (ptrdiff_t)s * GPUZ_Q8_0_BYTES;
		const __m512 d = _mm512_set1_ps(_cvtsh_ss(*(const uint16_t *)b));
		v[0] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b + 2)))), d);
		v[1] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b + 18)))), d);
	} else if (kind == GPUZ_Q4_0) {
		// Byte l holds weight l in its low nibble and weight l + 16 in its
		// high one, each offset by 8.
		const uint8_t *b = row + (ptrdiff_t)s * GPUZ_Q4_0_BYTES;
		const __m512 d = _mm512_set1_ps(_cvtsh_ss(*(const uint16_t *)b));
		const __m128i q = _mm_loadu_si128((const __m128i *)(b + 2)), eight = _mm_set1_epi8(8);
		const __m128i lo = _mm_sub_epi8(_mm_and_si128(q, low), eight);
		const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), low), eight);
		v[0] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo)), d);
		v[1] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi)), d);
	} else {
		// Super-block s/8 holds sub-blocks 2c and 2c + 1 in the low and
		// high nibbles of its chunk c of 32 bytes.
		const uint8_t *b = row + (ptrdiff_t)(s >> 3) * GPUZ_Q4_K_BYTES;
		const int j = s & 7;
		float d, n;
		gpuz_q4k_scale_min(b, j, &d, &n);
		const uint8_t *q = b + 16 + 32 * (j >> 1);
		__m128i q0 = _mm_loadu_si128((const __m128i *)q), q1 = _mm_loadu_si128((const __m128i *)(q + 16));
		if (j & 1) {
			q0 = _mm_srli_epi16(q0, 4);
			q1 = _mm_srli_epi16(q1, 4);
		}
		q0 = _mm_and_si128(q0, low);
		q1 = _mm_and_si128(q1, low);
		const __m512 vd = _mm512_set1_ps(d), vn = _mm512_set1_ps(n);
		v[0] = _mm512_fmsub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(q0)), vd, vn);
		v[1] = _mm512_fmsub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(q1)), vd, vn);
	}
}

#define GPUZ_QK(name) name##_avx512
#define GPUZ_QK_VEC __m512
#define GPUZ_QK_NV 2
#define GPUZ_QK_LANES 16
#define GPUZ_QK_ZERO() _mm512_setzero_ps()
#define GPUZ_QK_SET1(a) _mm512_set1_ps(a)
#define GPUZ_QK_LOADU(p) _mm512_loadu_ps(p)
#define GPUZ_QK_STOREU(p, v) _mm512_storeu_ps(p, v)
#define GPUZ_QK_FMADD(a, b, c) _mm512_fmadd_ps(a, b, c)
#define GPUZ_QK_ADD(a, b) _mm512_add_ps(a, b)
#define GPUZ_QK_SUM(v) _mm512_reduce_add_ps(v)
#define GPUZ_QK_DECODE gpuz_q_decode_avx512
#include "quantkern.h"

#pragma GCC pop_options

// -------------------------------------------------------------- AVX2

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

// gpuz_q_sum_avx2 adds up the 8 lanes of v: the high half onto the low,
// then pairs, then the last two.
static inline float gpuz_q_sum_avx2(__m256 v) {
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

// gpuz_q_decode_avx2 sets v[0] to v[3] to sub-block s of the row at row,
// stored in kind (as gpuz_q_decode_avx512, 8 lanes a vector).
static inline __attribute__((always_inline)) void gpuz_q_decode_avx2(const int kind, const uint8_t *row, int s,
                                                                    __m256 v[4]) {
	const __m128i low = _mm_set1_epi8(0x0F);
	if (kind == GPUZ_Q8_0) {
		const uint8_t *b = row + (ptrdiff_t)s * GPUZ_Q8_0_BYTES;
		const __m256 d = _mm256_set1_ps(_cvtsh_ss(*(const uint16_t *)b));
		for (int i = 0; i < 4; i++)
			v[i] = _mm256_mul_ps(
			    _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b + 2 + 8 * i)))), d);
	} else if (kind == GPUZ_Q4_0) {
		const uint8_t *b = row + (ptrdiff_t)s * GPUZ_Q4_0_BYTES;
		const __m256 d = _mm256_set1_ps(_cvtsh_ss(*(const uint16_t *)b));
		const __m128i q = _mm_loadu_si128((const __m128i *)(b + 2)), eight = _mm_set1_epi8(8);
		const __m128i lo = _mm_sub_epi8(_mm_and_si128(q, low), eight);
		const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), low), eight);
		v[0] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), d);
		v[1] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8))), d);
		v[2] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi)), d);
		v[3] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))), d);
	} else {
		const uint8_t *b = row + (ptrdiff_t)(s >> 3) * GPUZ_Q4_K_BYTES;
		const int j = s & 7;
		float d, n;
		gpuz_q4k_scale_min(b, j, &d, &n);
		const uint8_t *q = b + 16 + 32 * (j >> 1);
		__m128i q0 = _mm_loadu_si128((const __m128i *)q), q1 = _mm_loadu_si128((const __m128i *)(q + 16));
		if (j & 1) {
			q0 = _mm_srli_epi16(q0, 4);
			q1 = _mm_srli_epi16(q1, 4);
		}
		q0 = _mm_and_si128(q0, low);
		q1 = _mm_and_si128(q1, low);
		const __m256 vd = _mm256_set1_ps(d), vn = _mm256_set1_ps(n);
		v[0] = _mm256_fmsub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q0)), vd, vn);
		v[1] = _mm256_fmsub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(q0, 8))), vd, vn);
		v[2] = _mm256_fmsub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q1)), vd, vn);
		v[3] = _mm256_fmsub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(q1, 8))), vd, vn);
	}
}

#define GPUZ_QK(name) name##_avx2
#define GPUZ_QK_VEC __m256
#define GPUZ_QK_NV 4
#define GPUZ_QK_LANES 8
#define GPUZ_QK_ZERO() _mm256_setzero_ps()
#define GPUZ_QK_SET1(a) _mm256_set1_ps(a)
#define GPUZ_QK_LOADU(p) _mm256_loadu_ps(p)
#define GPUZ_QK_STOREU(p, v) _mm256_storeu_ps(p, v)
#define GPUZ_QK_FMADD(a, b, c) _mm256_fmadd_ps(a, b, c)
#define GPUZ_QK_ADD(a, b) _mm256_add_ps(a, b)
#define GPUZ_QK_SUM(v) gpuz_q_sum_avx2(v)
#define GPUZ_QK_DECODE gpuz_q_decode_avx2
#include "quantkern.h"

#pragma GCC pop_options

// ------------------------------------------------------ entry points

// gpuz_quant_dot sets y[r·ldy + j] = Σ_p x[r·k + p]·W[j][p] for r < m ≤ 4
// and j0 ≤ j < j1, W's rows rb bytes apart from w.
static void gpuz_quant_dot(int isa, int kind, const float *x, int m, int k, const uint8_t *w, ptrdiff_t rb, int j0,
                           int j1, float *y, ptrdiff_t ldy) {
	GPUZ_FLUSH_SUBNORMALS();
	if (isa == GPUZ_Q_AVX512)
		gpuz_q_dot_avx512(kind, x, m, k, w, rb, j0, j1, y, ldy);
	else
		gpuz_q_dot_avx2(kind, x, m, k, w, rb, j0, j1, y, ldy);
}

// gpuz_quant_gw sets dx[r·ldx + p] = Σ_j g[r·n + j]·W[j][p] for r < m ≤ 4,
// j < n and 32·s0 ≤ p < 32·s1.
static void gpuz_quant_gw(int isa, int kind, const float *g, int m, int n, const uint8_t *w, ptrdiff_t rb, int s0,
                          int s1, float *dx, ptrdiff_t ldx) {
	GPUZ_FLUSH_SUBNORMALS();
	if (isa == GPUZ_Q_AVX512)
		gpuz_q_gw_avx512(kind, g, m, n, w, rb, s0, s1, dx, ldx);
	else
		gpuz_q_gw_avx2(kind, g, m, n, w, rb, s0, s1, dx, ldx);
}

// gpuz_quant_tile sets dst[r·ldd + p − 32·s0] = W[r][p] for r < rows and
// 32·s0 ≤ p < 32·s1.
static void gpuz_quant_tile(int isa, int kind, const uint8_t *w, ptrdiff_t rb, int rows, int s0, int s1, float *dst,
                            ptrdiff_t ldd) {
	GPUZ_FLUSH_SUBNORMALS();
	if (isa == GPUZ_Q_AVX512)
		gpuz_q_tile_avx512(kind, w, rb, rows, s0, s1, dst, ldd);
	else
		gpuz_q_tile_avx2(kind, w, rb, rows, s0, s1, dst, ldd);
}
