// The products by a quantized weight of package hostmath in C (quant.go):
// y = x·Wᵀ and dx = g·W for W [n, k] stored in one of ggml's block kinds,
// Q8_0, Q4_0, Q4_K or Q6_K, quantized along its rows of k (ggml-common.h's
// block_q8_0, block_q4_0, block_q4_K, block_q6_K; internal/quant's DequantizeRow is
// the reference decoding), or in bitsandbytes' NF4 with double
// quantization (quant.NF4Layout; its blocks of 64 run over the flattened
// weight, and with k a multiple of 64 a row is whole blocks). The weight is never widened whole: its blocks
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
// into one FMA (one rounding where the reference makes two), Q6_K
// d·sc·(q − 32) (exact: d·sc rounded, then one product, as the reference
// computes it; a sub-block of 32 spans two scales), NF4
// level[c]·absmax (the block's absmax rebuilt from its 8-bit code, its
// group's absmax and the offset, which the compiler may fuse into one
// FMA). Each sum runs
// in an order fixed by the shape (the sub-blocks in turn, a lane per
// position), so results do not depend on the threads.
//
// Each kernel is built for AVX-512 (16 lanes) and AVX2 (8 lanes) from the
// one template in quantkern.h; gpuz_quant_isa says which this CPU runs. A
// CPU without AVX2, FMA and F16C runs quant.go's Go loops.
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "flush.h"

#define GPUZ_Q_GO 0
#define GPUZ_Q_AVX2 1
#define GPUZ_Q_AVX512 2

// The kinds, as quant.Kind numbers them.
#define GPUZ_Q8_0 3
#define GPUZ_Q4_0 4
#define GPUZ_Q4_K 5
#define GPUZ_Q6_K 6
#define GPUZ_NF4 7

// The bytes of a block of each kind: 32 weights for Q8_0 and Q4_0, 256 for
// Q4_K and Q6_K.
#define GPUZ_Q8_0_BYTES 34
#define GPUZ_Q4_0_BYTES 18
#define GPUZ_Q4_K_BYTES 144
#define GPUZ_Q6_K_BYTES 210

// gpuz_q_nf4 is what NF4's decoding reads beside a row's codes: the
// weight's codes from its first (codes), its blocks' 8-bit absmax codes
// (qabs), its groups' float32 absmaxes (gabs, unaligned), the offset, the
// 16 NF4 levels and the 256 values of the dynamic code.
struct gpuz_q_nf4 {
	const uint8_t *codes, *qabs, *gabs;
	float offset;
	const float *levels, *code;
};

// gpuz_q_nf4_absmax is the absmax of the NF4 block that sub-block s of the
// row of codes at row lies in, as NF4Layout.BlockAbsmax rebuilds it.
static inline float gpuz_q_nf4_absmax(const struct gpuz_q_nf4 *nf, const uint8_t *row, int s) {
	const ptrdiff_t b = ((row - nf->codes) * 2 + 32 * (ptrdiff_t)s) / 64;
	float g;
	memcpy(&g, nf->gabs + 4 * (b / 256), 4);
	const float a = nf->code[nf->qabs[b]] * g;
	return a + nf->offset;
}

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

// gpuz_q6k_codes sets *q0 and *q1 to the 6-bit codes less 32 (int8, −32
// to 31) of sub-block s's 32 weights (16 each) in the Q6_K super-block b,
// and *d0 and *d1 to the d·sc of their sub-blocks of 16 (ggml's
// dequantize_row_q6_K; quant's q6kCode): the sub-block is quarter t of half
// h, its low nibbles the low (t < 2) or high nibbles of ql's 32 bytes from
// 64h + 32·(t mod 2), its top two bits bits 2t and 2t+1 of qh's 32 bytes
// from 32h.
__attribute__((target("f16c"))) static inline void gpuz_q6k_codes(const uint8_t *b, int s, __m128i *q0,
                                                                       __m128i *q1, float *d0, float *d1) {
	const int h = (s >> 2) & 1, t = s & 3;
	const uint8_t *ql = b + 64 * h + 32 * (t & 1), *qh = b + 128 + 32 * h;
	const __m128i low = _mm_set1_epi8(0x0F), three = _mm_set1_epi8(3), thirtytwo = _mm_set1_epi8(32);
	const __m128i nib = _mm_cvtsi32_si128(4 * (t >> 1)), two = _mm_cvtsi32_si128(2 * t);
	for (int i = 0; i < 2; i++) {
		const __m128i lo = _mm_and_si128(_mm_srl_epi16(_mm_loadu_si128((const __m128i *)(ql + 16 * i)), nib), low);
		const __m128i hi = _mm_and_si128(_mm_srl_epi16(_mm_loadu_si128((const __m128i *)(qh + 16 * i)), two), three);
		const __m128i q = _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), thirtytwo);
		if (i == 0)
			*q0 = q;
		else
			*q1 = q;
	}
	const float d = _cvtsh_ss(*(const uint16_t *)(b + 208));
	const int8_t *sc = (const int8_t *)(b + 192 + 8 * h + 2 * t);
	*d0 = d * (float)sc[0];
	*d1 = d * (float)sc[1];
}

// ------------------------------------------------------------ AVX-512

#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma,f16c")

// gpuz_q_decode_avx512 sets v[0] and v[1] to sub-block s (weights 32·s to
// 32·s + 31) of the row at row, stored in kind.
static inline __attribute__((always_inline)) void gpuz_q_decode_avx512(const int kind,
                                                                      const struct gpuz_q_nf4 *nf,
                                                                      const uint8_t *row, int s, __m512 v[2]) {
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
	} else if (kind == GPUZ_NF4) {
		// Byte l holds weight 2l's code in its high nibble and weight
		// 2l + 1's in its low one: interleaved, they index the levels.
		const __m512 a = _mm512_set1_ps(gpuz_q_nf4_absmax(nf, row, s)), levels = _mm512_loadu_ps(nf->levels);
		const __m128i q = _mm_loadu_si128((const __m128i *)(row + 16 * (ptrdiff_t)s));
		const __m128i hi = _mm_and_si128(_mm_srli_epi16(q, 4), low), lo = _mm_and_si128(q, low);
		v[0] = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(hi, lo)), levels), a);
		v[1] = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm_unpackhi_epi8(hi, lo)), levels), a);
	} else if (kind == GPUZ_Q6_K) {
		__m128i q0, q1;
		float d0, d1;
		gpuz_q6k_codes(row + (ptrdiff_t)(s >> 3) * GPUZ_Q6_K_BYTES, s & 7, &q0, &q1, &d0, &d1);
		v[0] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q0)), _mm512_set1_ps(d0));
		v[1] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q1)), _mm512_set1_ps(d1));
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
static inline __attribute__((always_inline)) void gpuz_q_decode_avx2(const int kind, const struct gpuz_q_nf4 *nf,
                                                                    const uint8_t *row, int s, __m256 v[4]) {
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
	} else if (kind == GPUZ_NF4) {
		// As AVX-512's, the 16 levels in two vectors of 8, picked by the
		// code's bit 3.
		const __m256 a = _mm256_set1_ps(gpuz_q_nf4_absmax(nf, row, s));
		const __m256 lev0 = _mm256_loadu_ps(nf->levels), lev1 = _mm256_loadu_ps(nf->levels + 8);
		const __m128i q = _mm_loadu_si128((const __m128i *)(row + 16 * (ptrdiff_t)s));
		const __m128i hi = _mm_and_si128(_mm_srli_epi16(q, 4), low), lo = _mm_and_si128(q, low);
		const __m128i c[2] = {_mm_unpacklo_epi8(hi, lo), _mm_unpackhi_epi8(hi, lo)};
		for (int i = 0; i < 4; i++) {
			const __m256i idx = _mm256_cvtepu8_epi32(i & 1 ? _mm_srli_si128(c[i >> 1], 8) : c[i >> 1]);
			const __m256 pick = _mm256_blendv_ps(_mm256_permutevar8x32_ps(lev0, idx),
			                                     _mm256_permutevar8x32_ps(lev1, idx),
			                                     _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)));
			v[i] = _mm256_mul_ps(pick, a);
		}
	} else if (kind == GPUZ_Q6_K) {
		__m128i q0, q1;
		float d0, d1;
		gpuz_q6k_codes(row + (ptrdiff_t)(s >> 3) * GPUZ_Q6_K_BYTES, s & 7, &q0, &q1, &d0, &d1);
		const __m256 vd0 = _mm256_set1_ps(d0), vd1 = _mm256_set1_ps(d1);
		v[0] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q0)), vd0);
		v[1] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q0, 8))), vd0);
		v[2] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q1)), vd1);
		v[3] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q1, 8))), vd1);
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

// GPUZ_Q_NF4_PARAMS are the entry points' last parameters, NF4's beside
// its codes (gpuz_q_nf4; NULL and 0 for the other kinds), and
// GPUZ_Q_NF4_STRUCT gathers them with w, the codes, into nf.
#define GPUZ_Q_NF4_PARAMS const uint8_t *qabs, const uint8_t *gabs, float offset, const float *levels, const float *code
#define GPUZ_Q_NF4_STRUCT const struct gpuz_q_nf4 nf = {w, qabs, gabs, offset, levels, code}

// gpuz_quant_dot sets y[r·ldy + j] = Σ_p x[r·k + p]·W[j][p] for r < m ≤ 4
// and j0 ≤ j < j1, W's rows rb bytes apart from w.
static void gpuz_quant_dot(int isa, int kind, const float *x, int m, int k, const uint8_t *w, ptrdiff_t rb, int j0,
                           int j1, float *y, ptrdiff_t ldy, GPUZ_Q_NF4_PARAMS) {
	GPUZ_FLUSH_SUBNORMALS();
	GPUZ_Q_NF4_STRUCT;
	if (isa == GPUZ_Q_AVX512)
		gpuz_q_dot_avx512(kind, &nf, x, m, k, w, rb, j0, j1, y, ldy);
	else
		gpuz_q_dot_avx2(kind, &nf, x, m, k, w, rb, j0, j1, y, ldy);
}

// gpuz_quant_gw sets dx[r·ldx + p] = Σ_j g[r·n + j]·W[j][p] for r < m ≤ 4,
// j < n and 32·s0 ≤ p < 32·s1.
static void gpuz_quant_gw(int isa, int kind, const float *g, int m, int n, const uint8_t *w, ptrdiff_t rb, int s0,
                          int s1, float *dx, ptrdiff_t ldx, GPUZ_Q_NF4_PARAMS) {
	GPUZ_FLUSH_SUBNORMALS();
	GPUZ_Q_NF4_STRUCT;
	if (isa == GPUZ_Q_AVX512)
		gpuz_q_gw_avx512(kind, &nf, g, m, n, w, rb, s0, s1, dx, ldx);
	else
		gpuz_q_gw_avx2(kind, &nf, g, m, n, w, rb, s0, s1, dx, ldx);
}

// gpuz_quant_tile sets dst[r·ldd + p − 32·s0] = W[r0 + r][p] for r < rows
// and 32·s0 ≤ p < 32·s1.
static void gpuz_quant_tile(int isa, int kind, const uint8_t *w, ptrdiff_t rb, int r0, int rows, int s0, int s1,
                            float *dst, ptrdiff_t ldd, GPUZ_Q_NF4_PARAMS) {
	GPUZ_FLUSH_SUBNORMALS();
	GPUZ_Q_NF4_STRUCT;
	if (isa == GPUZ_Q_AVX512)
		gpuz_q_tile_avx512(kind, &nf, w + r0 * rb, rb, rows, s0, s1, dst, ldd);
	else
		gpuz_q_tile_avx2(kind, &nf, w + r0 * rb, rb, rows, s0, s1, dst, ldd);
}
