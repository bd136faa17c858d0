// The few-row product y = x·Wᵀ of fewrow.h for bf16 operands, on the
// AVX512_BF16 dot instruction VDPBF16PS (CPUs that have it: bf16.h's
// gpuz_bf16_dot): x is m × k bf16 with m at most 32, W n × k bf16
// row-major, y m × n float32.
//
// As fewrow.h, W is read once, where it lies, and x is held transposed,
// here by pairs of k: xt[p][r] is the 32-bit pair (x[r][2p], x[r][2p+1])
// (zero past k and past m), 16 or 32 lanes (gpuz_fewrow16_pack). One
// 32-bit broadcast of W's pair (W[j][2p], W[j][2p+1]) and VDPBF16PS add
// both products into lane r of acc[j][v]: half as many instructions as the
// float32 kernel, and half the weight bytes. Each sum runs over the pairs
// in order, so results are reproducible. VDPBF16PS treats bf16 subnormal
// inputs as zero and flushes subnormal results (bf16.h).
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "flush.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bf16")

#define GPUZ_FR16_UNROLL _Pragma("GCC unroll 16")

// GPUZ_FR16_J is the most rows of W one block holds.
#define GPUZ_FR16_J 14

// gpuz_fewrow16_pack writes xt[p·lanes + r] = x[r][2p] | x[r][2p+1] << 16
// for r < m (the high half 0 past k) and 0 for m ≤ r < lanes, p < ⌈k/2⌉.
static void gpuz_fewrow16_pack(const uint16_t *x, int m, int k, ptrdiff_t ldx, uint32_t *xt, int lanes) {
	int pairs = (k + 1) / 2;
	for (int p = 0; p < pairs; p++) {
		uint32_t *dst = xt + (ptrdiff_t)p * lanes;
		for (int r = 0; r < m; r++) {
			const uint16_t *row = x + r * ldx;
			uint32_t hi = 2 * p + 1 < k ? row[2 * p + 1] : 0;
			dst[r] = (uint32_t)row[2 * p] | hi << 16;
		}
		for (int r = m; r < lanes; r++)
			dst[r] = 0;
	}
}

// gpuz_fr16_pair returns W's pair at column 2p of row w, the high half 0
// when 2p + 1 is past k (no read beyond the row).
static inline uint32_t gpuz_fr16_pair(const uint16_t *w, int p, int k) {
	if (2 * p + 1 < k) {
		uint32_t v;
		memcpy(&v, w + 2 * p, 4);
		return v;
	}
	return w[2 * p];
}

// gpuz_fewrow16_block computes J columns of y, from W's rows w[0 .. J−1],
// for the m ≤ 16·V rows of x packed in xt.
static inline __attribute__((always_inline)) void gpuz_fewrow16_block(
    const int V, const int J, const uint32_t *xt, int k, const uint16_t *w, ptrdiff_t ldw, float *y, ptrdiff_t ldy,
    int m) {
	__m512 acc[GPUZ_FR16_J][2];
	GPUZ_FR16_UNROLL for (int j = 0; j < J; j++)
		GPUZ_FR16_UNROLL for (int v = 0; v < V; v++)
			acc[j][v] = _mm512_setzero_ps();
	int pairs = (k + 1) / 2, full = k / 2;
	for (int p = 0; p < full; p++) {
		const uint32_t *xp = xt + (ptrdiff_t)p * 16 * V;
		__m512i x0 = _mm512_load_si512(xp), x1 = V > 1 ? _mm512_load_si512(xp + 16) : x0;
		GPUZ_FR16_UNROLL for (int j = 0; j < J; j++) {
			// A broadcast from memory (VPBROADCASTD zmm, m32): a load, no shuffle.
			__m512i b = _mm512_castps_si512(_mm512_set1_ps(*(const float *)(w + j * ldw + 2 * p)));
			acc[j][0] = _mm512_dpbf16_ps(acc[j][0], (__m512bh)x0, (__m512bh)b);
			if (V > 1)
				acc[j][1] = _mm512_dpbf16_ps(acc[j][1], (__m512bh)x1, (__m512bh)b);
		}
	}
	if (pairs > full) { // odd k: the last term alone, its pair's high half 0
		const uint32_t *xp = xt + (ptrdiff_t)full * 16 * V;
		__m512i x0 = _mm512_load_si512(xp), x1 = V > 1 ? _mm512_load_si512(xp + 16) : x0;
		GPUZ_FR16_UNROLL for (int j = 0; j < J; j++) {
			__m512i b = _mm512_set1_epi32((int)gpuz_fr16_pair(w + j * ldw, full, k));
			acc[j][0] = _mm512_dpbf16_ps(acc[j][0], (__m512bh)x0, (__m512bh)b);
			if (V > 1)
				acc[j][1] = _mm512_dpbf16_ps(acc[j][1], (__m512bh)x1, (__m512bh)b);
		}
	}
	// Lane r of acc[j][v] is y[16v + r][j].
	const __m512i rows = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
	                                        _mm512_set1_epi32((int)ldy));
	GPUZ_FR16_UNROLL for (int v = 0; v < V; v++) {
		int left = m - 16 * v;
		__mmask16 mask = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
		GPUZ_FR16_UNROLL for (int j = 0; j < J; j++)
			_mm512_mask_i32scatter_ps(y + 16 * v * ldy + j, mask, rows, acc[j][v], 4);
	}
}

// gpuz_fr16_V_J is gpuz_fewrow16_block for V vectors and J rows of W.
#define GPUZ_FR16(V, J)                                                                                       \
	static void gpuz_fr16_##V##_##J(const uint32_t *xt, int k, const uint16_t *w, ptrdiff_t ldw, float *y,   \
	                                ptrdiff_t ldy, int m) {                                                 \
		gpuz_fewrow16_block(V, J, xt, k, w, ldw, y, ldy, m);                                                  \
	}
#define GPUZ_FR16_V(V)                                                                                        \
	GPUZ_FR16(V, 1) GPUZ_FR16(V, 2) GPUZ_FR16(V, 3) GPUZ_FR16(V, 4) GPUZ_FR16(V, 5) GPUZ_FR16(V, 6)           \
	GPUZ_FR16(V, 7) GPUZ_FR16(V, 8) GPUZ_FR16(V, 9) GPUZ_FR16(V, 10) GPUZ_FR16(V, 11) GPUZ_FR16(V, 12)        \
	GPUZ_FR16(V, 13) GPUZ_FR16(V, 14)
GPUZ_FR16_V(1)
GPUZ_FR16_V(2)
#undef GPUZ_FR16_V
#undef GPUZ_FR16

// gpuz_fewrow16_nt computes columns [j0, j1) of y = x·Wᵀ for the m ≤ 16·V
// rows of x packed in xt (lanes = 16·V). ldy·16 must fit an int.
static void gpuz_fewrow16_nt(const uint32_t *xt, int V, int m, int k, const uint16_t *w, ptrdiff_t ldw, int j0,
                             int j1, float *y, ptrdiff_t ldy) {
	GPUZ_FLUSH_SUBNORMALS();
	typedef void (*fr_fn)(const uint32_t *, int, const uint16_t *, ptrdiff_t, float *, ptrdiff_t, int);
#define GPUZ_FR16_NAMES(V)                                                                                    \
	gpuz_fr16_##V##_1, gpuz_fr16_##V##_2, gpuz_fr16_##V##_3, gpuz_fr16_##V##_4, gpuz_fr16_##V##_5,            \
	    gpuz_fr16_##V##_6, gpuz_fr16_##V##_7, gpuz_fr16_##V##_8, gpuz_fr16_##V##_9, gpuz_fr16_##V##_10,       \
	    gpuz_fr16_##V##_11, gpuz_fr16_##V##_12, gpuz_fr16_##V##_13, gpuz_fr16_##V##_14
	static const fr_fn fns[2][GPUZ_FR16_J] = {{GPUZ_FR16_NAMES(1)}, {GPUZ_FR16_NAMES(2)}};
#undef GPUZ_FR16_NAMES
	for (int j = j0; j < j1; j += GPUZ_FR16_J) {
		int jb = j1 - j < GPUZ_FR16_J ? j1 - j : GPUZ_FR16_J;
		fns[V - 1][jb - 1](xt, k, w + j * ldw, ldw, y + j, ldy, m);
	}
}

#pragma GCC pop_options
