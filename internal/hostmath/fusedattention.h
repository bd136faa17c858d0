// The float32 fused attention kernels of package hostmath in C, with
// AVX-512 intrinsics and with AVX2 and FMA ones (gpuz_fattn_isa says which
// the CPU can run; the Go kernels of fusedattention.go run elsewhere). They compute what
// FusedAttention and FusedAttentionGrad compute, in blocks of 64 queries
// against blocks of 64 keys, but hold each block of scores transposed,
// keys by queries (Sᵀ = K·Qᵀ), so that the online softmax's maxima, sums
// and rescales run along the queries, 16 to a vector, and no block of keys
// is ever transposed: only the block of queries (and of output gradients)
// is, once for all the key blocks it meets. The scale is folded into that
// transposed block, so the forward and the backward compute the same bits
// of every score.
//
// Every product is one register-blocked kernel, C (+)= A·B for A read in
// place through any strides and B by rows of up to 64 columns: 6 rows by
// 64 columns of C in 24 registers, each entry's sum running over its terms
// in order. Each output element is therefore computed in an order fixed by
// its position, whatever the caller's thread count. exp is softmax.h's.
//
// The AVX2 kernels are the same algorithm on the same blocks with vectors
// of 8: a product's tile is 6 rows by 16 columns in 12 registers, and the
// online softmax runs along the queries 8 at a time. They sum every
// element's terms in the same order as the AVX-512 kernels, but
// softmax.h's two exponentials need not agree to the last bit, so the two
// paths agree within float32 tolerance, not bit for bit; each is
// deterministic on its own.
#include <immintrin.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "flush.h"
#include "softmax.h"

// GPUZ_FA_B is the side of the blocks of queries and keys.
#define GPUZ_FA_B 64
#define GPUZ_FA_MR 6

// gpuz_fattn_isa is the best instruction set of the kernels this CPU runs
// (softmax.h's GPUZ_ISA_…, for gpuz_fattn_fwd and gpuz_fattn_bwd's isa):
// softmax.h's own, whose exponentials the kernels call.
static int gpuz_fattn_isa(void) { return gpuz_softmax_isa(); }

// gpuz_fattn_fwd_scratch and gpuz_fattn_bwd_scratch are the scratch, in
// floats, of a forward task (a block of queries) and of a backward task
// (a pair of a sequence of s positions and a head of dh).
static size_t gpuz_fattn_fwd_scratch(int dh) {
	return (size_t)2 * GPUZ_FA_B * dh + GPUZ_FA_B * GPUZ_FA_B + 3 * GPUZ_FA_B;
}

static size_t gpuz_fattn_bwd_scratch(int s, int dh) {
	size_t padded = (size_t)(s + GPUZ_FA_B - 1) / GPUZ_FA_B * GPUZ_FA_B;
	return padded + (size_t)2 * GPUZ_FA_B * dh + 2 * GPUZ_FA_B * GPUZ_FA_B + GPUZ_FA_B;
}

// gpuz_fa_transpose sets t[j·64 + r] = scale·x[r·ld + j] for r < rows,
// j < dh, and zero for rows ≤ r < 64.
static void gpuz_fa_transpose(float *t, const float *x, ptrdiff_t ld, int rows, int dh, float scale) {
	for (int j = 0; j < dh; j++) {
		float *tj = t + j * GPUZ_FA_B;
		for (int r = 0; r < rows; r++) tj[r] = scale * x[r * ld + j];
		for (int r = rows; r < GPUZ_FA_B; r++) tj[r] = 0;
	}
}

#pragma GCC push_options
#pragma GCC target("avx512f,fma")

#define GPUZ_FA_UNROLL _Pragma("GCC unroll 8")

// gpuz_fa_tile sets (or, with accumulate, adds to) C[i][j] for i < mr ≤ 6
// and j < nr ≤ 64 the sum over k < kn of A[i][k]·B[k][j], A[i][k] at
// a[i·rsa + k·csa], B[k][j] at b[k·ldb + j] and C[i][j] at c[i·ldc + j].
// The rows past mr compute row 0 again, unstored, so that nothing past A
// is read.
static inline __attribute__((always_inline)) void gpuz_fa_tile(int mr, int nr, int kn, const float *a, ptrdiff_t rsa,
                                                               ptrdiff_t csa, const float *b, ptrdiff_t ldb, float *c,
                                                               ptrdiff_t ldc, int accumulate) {
	__mmask16 mask[4];
	for (int v = 0; v < 4; v++) {
		const int left = nr - 16 * v;
		mask[v] = left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
	}
	const float *ar[GPUZ_FA_MR];
	GPUZ_FA_UNROLL for (int r = 0; r < GPUZ_FA_MR; r++) ar[r] = a + (r < mr ? r : 0) * rsa;
	__m512 acc[GPUZ_FA_MR][4];
	GPUZ_FA_UNROLL for (int r = 0; r < GPUZ_FA_MR; r++)
		GPUZ_FA_UNROLL for (int v = 0; v < 4; v++)
			acc[r][v] = accumulate && r < mr ? _mm512_maskz_loadu_ps(mask[v], c + r * ldc + 16 * v) : _mm512_setzero_ps();
	for (int k = 0; k < kn; k++) {
		const float *bk = b + k * ldb;
		const __m512 b0 = _mm512_maskz_loadu_ps(mask[0], bk), b1 = _mm512_maskz_loadu_ps(mask[1], bk + 16);
		const __m512 b2 = _mm512_maskz_loadu_ps(mask[2], bk + 32), b3 = _mm512_maskz_loadu_ps(mask[3], bk + 48);
		const ptrdiff_t ak = k * csa;
		GPUZ_FA_UNROLL for (int r = 0; r < GPUZ_FA_MR; r++) {
			const __m512 x = _mm512_set1_ps(ar[r][ak]);
			acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);
			acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);
			acc[r][2] = _mm512_fmadd_ps(x, b2, acc[r][2]);
			acc[r][3] = _mm512_fmadd_ps(x, b3, acc[r][3]);
		}
	}
	GPUZ_FA_UNROLL for (int r = 0; r < GPUZ_FA_MR; r++) {
		if (r >= mr)
			break;
		GPUZ_FA_UNROLL for (int v = 0; v < 4; v++) _mm512_mask_storeu_ps(c + r * ldc + 16 * v, mask[v], acc[r][v]);
	}
}

// gpuz_fa_gemm is gpuz_fa_tile over an m×n C, in tiles of 6 rows and 64
// columns.
static void gpuz_fa_gemm(int m, int n, int kn, const float *a, ptrdiff_t rsa, ptrdiff_t csa, const float *b,
                         ptrdiff_t ldb, float *c, ptrdiff_t ldc, int accumulate) {
	for (int j0 = 0; j0 < n; j0 += 64) {
		const int nr = n - j0 < 64 ? n - j0 : 64;
		for (int i0 = 0; i0 < m; i0 += GPUZ_FA_MR) {
			const int mr = m - i0 < GPUZ_FA_MR ? m - i0 : GPUZ_FA_MR;
			gpuz_fa_tile(mr, nr, kn, a + i0 * rsa, rsa, csa, b + j0, ldb, c + i0 * ldc + j0, ldc, accumulate);
		}
	}
}

// gpuz_fa_visible is the mask of the queries r0 + j0 + lane (lane < 16)
// that see key c: all when not causal, else those at or past it.
static inline __mmask16 gpuz_fa_visible(int causal, int r0, int j0, int c) {
	if (!causal)
		return 0xFFFF;
	const __m512i lane = _mm512_add_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
	                                      _mm512_set1_epi32(r0 + j0));
	return _mm512_cmp_epi32_mask(lane, _mm512_set1_epi32(c), _MM_CMPINT_NLT);
}

// gpuz_fattn_fwd512 computes the output rows and log-sum-exps of queries
// [r0, r1) of one (sequence, head) pair: q, k and v point at the pair's
// first query, key and value (row stride ld), out at its first output row
// (stride ldo) and lse at its first log-sum-exp; either may be NULL. The
// queries meet keys [0, kend).
static void gpuz_fattn_fwd512(const float *q, const float *k, const float *v, ptrdiff_t ld, int r0, int r1, int kend,
                           int causal, int dh, float scale, float *out, ptrdiff_t ldo, float *lse, float *scratch) {
	GPUZ_FLUSH_SUBNORMALS();
	const int nr = r1 - r0, nv = (nr + 15) / 16;
	float *qt = scratch, *st = qt + GPUZ_FA_B * dh, *acc = st + GPUZ_FA_B * GPUZ_FA_B;
	float *m = acc + GPUZ_FA_B * dh, *l = m + GPUZ_FA_B, *alpha = l + GPUZ_FA_B;
	gpuz_fa_transpose(qt, q + r0 * ld, ld, nr, dh, scale);
	for (int j = 0; j < GPUZ_FA_B; j++) m[j] = -INFINITY, l[j] = 0;
	memset(acc, 0, (size_t)nr * dh * sizeof(float));
	for (int c0 = 0; c0 < kend; c0 += GPUZ_FA_B) {
		const int nc = kend - c0 < GPUZ_FA_B ? kend - c0 : GPUZ_FA_B;
		// Sᵀ: the block's keys by its queries.
		gpuz_fa_gemm(nc, GPUZ_FA_B, dh, k + c0 * ld, ld, 1, qt, GPUZ_FA_B, st, GPUZ_FA_B, 0);
		for (int w = 0; w < nv; w++) {
			const int j0 = 16 * w;
			__m512 mx = _mm512_loadu_ps(m + j0);
			for (int c = 0; c < nc; c++)
				mx = _mm512_mask_max_ps(mx, gpuz_fa_visible(causal, r0, j0, c0 + c), mx,
				                        _mm512_loadu_ps(st + c * GPUZ_FA_B + j0));
			// The running maximum grows: the sum and the partial output so
			// far were taken against the old one. Before the first key,
			// exp(−∞ − max) is gpuz_exp512's smallest normal, times a sum
			// and an output of zero.
			const __m512 old = _mm512_loadu_ps(m + j0);
			const __m512 a = gpuz_exp512(_mm512_sub_ps(old, mx));
			_mm512_storeu_ps(alpha + j0, a);
			_mm512_storeu_ps(m + j0, mx);
			__m512 sum = _mm512_mul_ps(_mm512_loadu_ps(l + j0), a);
			for (int c = 0; c < nc; c++) {
				float *sc = st + c * GPUZ_FA_B + j0;
				const __m512 p = _mm512_maskz_mov_ps(gpuz_fa_visible(causal, r0, j0, c0 + c),
				                                     gpuz_exp512(_mm512_sub_ps(_mm512_loadu_ps(sc), mx)));
				_mm512_storeu_ps(sc, p);
				sum = _mm512_add_ps(sum, p);
			}
			_mm512_storeu_ps(l + j0, sum);
		}
		if (!out)
			continue;
		for (int r = 0; r < nr; r++) {
			const __m512 a = _mm512_set1_ps(alpha[r]);
			float *ar = acc + r * dh;
			int j = 0;
			for (; j + 16 <= dh; j += 16) _mm512_storeu_ps(ar + j, _mm512_mul_ps(_mm512_loadu_ps(ar + j), a));
			if (j < dh) {
				const __mmask16 t = gpuz_tail16((size_t)(dh - j));
				_mm512_mask_storeu_ps(ar + j, t, _mm512_mul_ps(_mm512_maskz_loadu_ps(t, ar + j), a));
			}
		}
		// acc += P·V, P[r][c] at st[c·64 + r].
		gpuz_fa_gemm(nr, dh, nc, st, 1, GPUZ_FA_B, v + c0 * ld, ld, acc, dh, 1);
	}
	for (int r = 0; r < nr; r++) {
		if (lse)
			lse[r0 + r] = (float)((double)m[r] + log((double)l[r]));
		if (out) {
			const float inv = 1.0f / l[r];
			float *o = out + (r0 + r) * ldo;
			const float *ar = acc + r * dh;
			for (int j = 0; j < dh; j++) o[j] = ar[j] * inv;
		}
	}
}

// gpuz_fattn_bwd512 computes one pair's gradients: dq (row stride ld) of its
// queries, and its shares dk and dv (row strides ldk, ldv) of its key and
// value gradients, all set, not added to; q, k, v, o, g and lse as
// gpuz_fattn_fwd512 takes them, g the output gradient, gl (NULL: zero) the
// gradient of the pair's log-sum-exps, which D = rowsum(g ⊙ o) − gl takes
// in.
static void gpuz_fattn_bwd512(float *dq, float *dk, ptrdiff_t ldk, float *dv, ptrdiff_t ldv, const float *q,
                           const float *k, const float *v, ptrdiff_t ld, const float *o, const float *g,
                           ptrdiff_t ldo, const float *lse, const float *gl, int s, int dh, int causal, float scale,
                           float *scratch) {
	GPUZ_FLUSH_SUBNORMALS();
	const int padded = (s + GPUZ_FA_B - 1) / GPUZ_FA_B * GPUZ_FA_B;
	float *dd = scratch, *qt = dd + padded, *gt = qt + GPUZ_FA_B * dh, *pt = gt + GPUZ_FA_B * dh;
	float *dst = pt + GPUZ_FA_B * GPUZ_FA_B, *lb = dst + GPUZ_FA_B * GPUZ_FA_B;
	for (int r = 0; r < padded; r++) {
		if (r >= s) {
			dd[r] = 0;
			continue;
		}
		const float *gr = g + r * ldo, *orow = o + r * ldo;
		float sum = 0;
		for (int j = 0; j < dh; j++) sum += gr[j] * orow[j];
		dd[r] = gl ? sum - gl[r] : sum;
		memset(dq + r * ld, 0, (size_t)dh * sizeof(float));
		memset(dk + r * ldk, 0, (size_t)dh * sizeof(float));
		memset(dv + r * ldv, 0, (size_t)dh * sizeof(float));
	}
	const __m512 vscale = _mm512_set1_ps(scale);
	for (int r0 = 0; r0 < s; r0 += GPUZ_FA_B) {
		const int r1 = r0 + GPUZ_FA_B < s ? r0 + GPUZ_FA_B : s, nr = r1 - r0, nv = (nr + 15) / 16;
		const int kend = causal ? r1 : s;
		gpuz_fa_transpose(qt, q + r0 * ld, ld, nr, dh, scale);
		gpuz_fa_transpose(gt, g + r0 * ldo, ldo, nr, dh, 1);
		for (int j = 0; j < GPUZ_FA_B; j++) lb[j] = j < nr ? lse[r0 + j] : 0;
		for (int c0 = 0; c0 < kend; c0 += GPUZ_FA_B) {
			const int nc = kend - c0 < GPUZ_FA_B ? kend - c0 : GPUZ_FA_B;
			gpuz_fa_gemm(nc, GPUZ_FA_B, dh, k + c0 * ld, ld, 1, qt, GPUZ_FA_B, pt, GPUZ_FA_B, 0);
			gpuz_fa_gemm(nc, GPUZ_FA_B, dh, v + c0 * ld, ld, 1, gt, GPUZ_FA_B, dst, GPUZ_FA_B, 0);
			for (int c = 0; c < nc; c++) {
				for (int w = 0; w < nv; w++) {
					const int j0 = 16 * w;
					float *pc = pt + c * GPUZ_FA_B + j0, *dc = dst + c * GPUZ_FA_B + j0;
					const __m512 p = _mm512_maskz_mov_ps(
					    gpuz_fa_visible(causal, r0, j0, c0 + c),
					    gpuz_exp512(_mm512_sub_ps(_mm512_loadu_ps(pc), _mm512_loadu_ps(lb + j0))));
					_mm512_storeu_ps(pc, p);
					const __m512 dp = _mm512_sub_ps(_mm512_loadu_ps(dc), _mm512_loadu_ps(dd + r0 + j0));
					_mm512_storeu_ps(dc, _mm512_mul_ps(_mm512_mul_ps(vscale, p), dp));
				}
			}
			// dV += Pᵀ·G, dQ += dS·K, dK += dSᵀ·Q; P[r][c] at pt[c·64 + r].
			gpuz_fa_gemm(nc, dh, nr, pt, GPUZ_FA_B, 1, g + r0 * ldo, ldo, dv + c0 * ldv, ldv, 1);
			gpuz_fa_gemm(nr, dh, nc, dst, 1, GPUZ_FA_B, k + c0 * ld, ld, dq + r0 * ld, ld, 1);
			gpuz_fa_gemm(nc, dh, nr, dst, GPUZ_FA_B, 1, q + r0 * ld, ld, dk + c0 * ldk, ldk, 1);
		}
	}
}

#pragma GCC pop_options

// ------------------------------------------------------------- AVX2 + FMA

#pragma GCC push_options
#pragma GCC target("avx2,fma")

// gpuz_fa_lanes8 is the mask of the lanes below left (none at or below 0,
// all from 8).
static inline __m256i gpuz_fa_lanes8(int left) {
	return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// gpuz_fa_tile8 is gpuz_fa_tile for nr ≤ 16 columns of C, in two vectors
// of 8 a row; full says nr is 16, so that no load or store is masked.
static inline __attribute__((always_inline)) void gpuz_fa_tile8(int mr, int nr, int kn, const float *a,
                                                                ptrdiff_t rsa, ptrdiff_t csa, const float *b,
                                                                ptrdiff_t ldb, float *c, ptrdiff_t ldc, int accumulate,
                                                                int full) {
	const __m256i m0 = gpuz_fa_lanes8(nr), m1 = gpuz_fa_lanes8(nr - 8);
	const float *ar[GPUZ_FA_MR];
	GPUZ_FA_UNROLL for (int r = 0; r < GPUZ_FA_MR; r++) ar[r] = a + (r < mr ? r : 0) * rsa;
	__m256 acc[GPUZ_FA_MR][2];
	GPUZ_FA_UNROLL for (int r = 0; r < GPUZ_FA_MR; r++) {
		if (accumulate && r < mr) {
			acc[r][0] = full ? _mm256_loadu_ps(c + r * ldc) : _mm256_maskload_ps(c + r * ldc, m0);
			acc[r][1] = full ? _mm256_loadu_ps(c + r * ldc + 8) : _mm256_maskload_ps(c + r * ldc + 8, m1);
		} else {
			acc[r][0] = acc[r][1] = _mm256_setzero_ps();
		}
	}
	for (int k = 0; k < kn; k++) {
		const float *bk = b + k * ldb;
		const __m256 b0 = full ? _mm256_loadu_ps(bk) : _mm256_maskload_ps(bk, m0);
		const __m256 b1 = full ? _mm256_loadu_ps(bk + 8) : _mm256_maskload_ps(bk + 8, m1);
		const ptrdiff_t ak = k * csa;
		GPUZ_FA_UNROLL for (int r = 0; r < GPUZ_FA_MR; r++) {
			const __m256 x = _mm256_broadcast_ss(ar[r] + ak);
			acc[r][0] = _mm256_fmadd_ps(x, b0, acc[r][0]);
			acc[r][1] = _mm256_fmadd_ps(x, b1, acc[r][1]);
		}
	}
	GPUZ_FA_UNROLL for (int r = 0; r < GPUZ_FA_MR; r++) {
		if (r >= mr)
			break;
		if (full) {
			_mm256_storeu_ps(c + r * ldc, acc[r][0]);
			_mm256_storeu_ps(c + r * ldc + 8, acc[r][1]);
		} else {
			_mm256_maskstore_ps(c + r * ldc, m0, acc[r][0]);
			_mm256_maskstore_ps(c + r * ldc + 8, m1, acc[r][1]);
		}
	}
}

// gpuz_fa_gemm8 is gpuz_fa_gemm with gpuz_fa_tile8's tiles of 6 rows and
// 16 columns.
static void gpuz_fa_gemm8(int m, int n, int kn, const float *a, ptrdiff_t rsa, ptrdiff_t csa, const float *b,
                          ptrdiff_t ldb, float *c, ptrdiff_t ldc, int accumulate) {
	for (int j0 = 0; j0 < n; j0 += 16) {
		const int nr = n - j0 < 16 ? n - j0 : 16;
		for (int i0 = 0; i0 < m; i0 += GPUZ_FA_MR) {
			const int mr = m - i0 < GPUZ_FA_MR ? m - i0 : GPUZ_FA_MR;
			if (nr == 16)
				gpuz_fa_tile8(mr, 16, kn, a + i0 * rsa, rsa, csa, b + j0, ldb, c + i0 * ldc + j0, ldc, accumulate, 1);
			else
				gpuz_fa_tile8(mr, nr, kn, a + i0 * rsa, rsa, csa, b + j0, ldb, c + i0 * ldc + j0, ldc, accumulate, 0);
		}
	}
}

// gpuz_fa_visible8 is gpuz_fa_visible for the 8 queries r0 + j0 + lane:
// all lanes set when not causal, else those at or past key c.
static inline __m256 gpuz_fa_visible8(int causal, int r0, int j0, int c) {
	if (!causal)
		return _mm256_castsi256_ps(_mm256_set1_epi32(-1));
	const __m256i lane = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(r0 + j0));
	return _mm256_castsi256_ps(_mm256_cmpgt_epi32(lane, _mm256_set1_epi32(c - 1)));
}

// gpuz_fattn_fwd256 is gpuz_fattn_fwd512 in AVX2.
static void gpuz_fattn_fwd256(const float *q, const float *k, const float *v, ptrdiff_t ld, int r0, int r1, int kend,
                              int causal, int dh, float scale, float *out, ptrdiff_t ldo, float *lse, float *scratch) {
	GPUZ_FLUSH_SUBNORMALS();
	const int nr = r1 - r0, nv = (nr + 7) / 8;
	float *qt = scratch, *st = qt + GPUZ_FA_B * dh, *acc = st + GPUZ_FA_B * GPUZ_FA_B;
	float *m = acc + GPUZ_FA_B * dh, *l = m + GPUZ_FA_B, *alpha = l + GPUZ_FA_B;
	gpuz_fa_transpose(qt, q + r0 * ld, ld, nr, dh, scale);
	for (int j = 0; j < GPUZ_FA_B; j++) m[j] = -INFINITY, l[j] = 0;
	memset(acc, 0, (size_t)nr * dh * sizeof(float));
	const __m256i tail = gpuz_fa_lanes8(dh % 8);
	for (int c0 = 0; c0 < kend; c0 += GPUZ_FA_B) {
		const int nc = kend - c0 < GPUZ_FA_B ? kend - c0 : GPUZ_FA_B;
		// Sᵀ: the block's keys by its queries.
		gpuz_fa_gemm8(nc, GPUZ_FA_B, dh, k + c0 * ld, ld, 1, qt, GPUZ_FA_B, st, GPUZ_FA_B, 0);
		for (int w = 0; w < nv; w++) {
			const int j0 = 8 * w;
			__m256 mx = _mm256_loadu_ps(m + j0);
			for (int c = 0; c < nc; c++)
				mx = _mm256_blendv_ps(mx, _mm256_max_ps(mx, _mm256_loadu_ps(st + c * GPUZ_FA_B + j0)),
				                      gpuz_fa_visible8(causal, r0, j0, c0 + c));
			// The running maximum grows: the sum and the partial output so
			// far were taken against the old one (see gpuz_fattn_fwd512).
			const __m256 old = _mm256_loadu_ps(m + j0);
			const __m256 a = gpuz_exp256(_mm256_sub_ps(old, mx));
			_mm256_storeu_ps(alpha + j0, a);
			_mm256_storeu_ps(m + j0, mx);
			__m256 sum = _mm256_mul_ps(_mm256_loadu_ps(l + j0), a);
			for (int c = 0; c < nc; c++) {
				float *sc = st + c * GPUZ_FA_B + j0;
				const __m256 p = _mm256_and_ps(gpuz_fa_visible8(causal, r0, j0, c0 + c),
				                               gpuz_exp256(_mm256_sub_ps(_mm256_loadu_ps(sc), mx)));
				_mm256_storeu_ps(sc, p);
				sum = _mm256_add_ps(sum, p);
			}
			_mm256_storeu_ps(l + j0, sum);
		}
		if (!out)
			continue;
		for (int r = 0; r < nr; r++) {
			const __m256 a = _mm256_set1_ps(alpha[r]);
			float *ar = acc + r * dh;
			int j = 0;
			for (; j + 8 <= dh; j += 8) _mm256_storeu_ps(ar + j, _mm256_mul_ps(_mm256_loadu_ps(ar + j), a));
			if (j < dh)
				_mm256_maskstore_ps(ar + j, tail, _mm256_mul_ps(_mm256_maskload_ps(ar + j, tail), a));
		}
		// acc += P·V, P[r][c] at st[c·64 + r].
		gpuz_fa_gemm8(nr, dh, nc, st, 1, GPUZ_FA_B, v + c0 * ld, ld, acc, dh, 1);
	}
	for (int r = 0; r < nr; r++) {
		if (lse)
			lse[r0 + r] = (float)((double)m[r] + log((double)l[r]));
		if (out) {
			const float inv = 1.0f / l[r];
			float *o = out + (r0 + r) * ldo;
			const float *ar = acc + r * dh;
			for (int j = 0; j < dh; j++) o[j] = ar[j] * inv;
		}
	}
}

// gpuz_fattn_bwd256 is gpuz_fattn_bwd512 in AVX2.
static void gpuz_fattn_bwd256(float *dq, float *dk, ptrdiff_t ldk, float *dv, ptrdiff_t ldv, const float *q,
                              const float *k, const float *v, ptrdiff_t ld, const float *o, const float *g,
                              ptrdiff_t ldo, const float *lse, const float *gl, int s, int dh, int causal, float scale,
                              float *scratch) {
	GPUZ_FLUSH_SUBNORMALS();
	const int padded = (s + GPUZ_FA_B - 1) / GPUZ_FA_B * GPUZ_FA_B;
	float *dd = scratch, *qt = dd + padded, *gt = qt + GPUZ_FA_B * dh, *pt = gt + GPUZ_FA_B * dh;
	float *dst = pt + GPUZ_FA_B * GPUZ_FA_B, *lb = dst + GPUZ_FA_B * GPUZ_FA_B;
	for (int r = 0; r < padded; r++) {
		if (r >= s) {
			dd[r] = 0;
			continue;
		}
		const float *gr = g + r * ldo, *orow = o + r * ldo;
		float sum = 0;
		for (int j = 0; j < dh; j++) sum += gr[j] * orow[j];
		dd[r] = gl ? sum - gl[r] : sum;
		memset(dq + r * ld, 0, (size_t)dh * sizeof(float));
		memset(dk + r * ldk, 0, (size_t)dh * sizeof(float));
		memset(dv + r * ldv, 0, (size_t)dh * sizeof(float));
	}
	const __m256 vscale = _mm256_set1_ps(scale);
	for (int r0 = 0; r0 < s; r0 += GPUZ_FA_B) {
		const int r1 = r0 + GPUZ_FA_B < s ? r0 + GPUZ_FA_B : s, nr = r1 - r0, nv = (nr + 7) / 8;
		const int kend = causal ? r1 : s;
		gpuz_fa_transpose(qt, q + r0 * ld, ld, nr, dh, scale);
		gpuz_fa_transpose(gt, g + r0 * ldo, ldo, nr, dh, 1);
		for (int j = 0; j < GPUZ_FA_B; j++) lb[j] = j < nr ? lse[r0 + j] : 0;
		for (int c0 = 0; c0 < kend; c0 += GPUZ_FA_B) {
			const int nc = kend - c0 < GPUZ_FA_B ? kend - c0 : GPUZ_FA_B;
			gpuz_fa_gemm8(nc, GPUZ_FA_B, dh, k + c0 * ld, ld, 1, qt, GPUZ_FA_B, pt, GPUZ_FA_B, 0);
			gpuz_fa_gemm8(nc, GPUZ_FA_B, dh, v + c0 * ld, ld, 1, gt, GPUZ_FA_B, dst, GPUZ_FA_B, 0);
			for (int c = 0; c < nc; c++) {
				for (int w = 0; w < nv; w++) {
					const int j0 = 8 * w;
					float *pc = pt + c * GPUZ_FA_B + j0, *dc = dst + c * GPUZ_FA_B + j0;
					const __m256 p = _mm256_and_ps(
					    gpuz_fa_visible8(causal, r0, j0, c0 + c),
					    gpuz_exp256(_mm256_sub_ps(_mm256_loadu_ps(pc), _mm256_loadu_ps(lb + j0))));
					_mm256_storeu_ps(pc, p);
					const __m256 dp = _mm256_sub_ps(_mm256_loadu_ps(dc), _mm256_loadu_ps(dd + r0 + j0));
					_mm256_storeu_ps(dc, _mm256_mul_ps(_mm256_mul_ps(vscale, p), dp));
				}
			}
			// dV += Pᵀ·G, dQ += dS·K, dK += dSᵀ·Q; P[r][c] at pt[c·64 + r].
			gpuz_fa_gemm8(nc, dh, nr, pt, GPUZ_FA_B, 1, g + r0 * ldo, ldo, dv + c0 * ldv, ldv, 1);
			gpuz_fa_gemm8(nr, dh, nc, dst, 1, GPUZ_FA_B, k + c0 * ld, ld, dq + r0 * ld, ld, 1);
			gpuz_fa_gemm8(nc, dh, nr, dst, GPUZ_FA_B, 1, q + r0 * ld, ld, dk + c0 * ldk, ldk, 1);
		}
	}
}

#pragma GCC pop_options

// gpuz_fattn_fwd is gpuz_fattn_fwd512 (isa GPUZ_ISA_AVX512) or
// gpuz_fattn_fwd256 (GPUZ_ISA_AVX2).
static void gpuz_fattn_fwd(int isa, const float *q, const float *k, const float *v, ptrdiff_t ld, int r0, int r1,
                           int kend, int causal, int dh, float scale, float *out, ptrdiff_t ldo, float *lse,
                           float *scratch) {
	if (isa == GPUZ_ISA_AVX512)
		gpuz_fattn_fwd512(q, k, v, ld, r0, r1, kend, causal, dh, scale, out, ldo, lse, scratch);
	else
		gpuz_fattn_fwd256(q, k, v, ld, r0, r1, kend, causal, dh, scale, out, ldo, lse, scratch);
}

// gpuz_fattn_bwd is gpuz_fattn_bwd512 (isa GPUZ_ISA_AVX512) or
// gpuz_fattn_bwd256 (GPUZ_ISA_AVX2).
static void gpuz_fattn_bwd(int isa, float *dq, float *dk, ptrdiff_t ldk, float *dv, ptrdiff_t ldv, const float *q,
                           const float *k, const float *v, ptrdiff_t ld, const float *o, const float *g,
                           ptrdiff_t ldo, const float *lse, const float *gl, int s, int dh, int causal, float scale,
                           float *scratch) {
	if (isa == GPUZ_ISA_AVX512)
		gpuz_fattn_bwd512(dq, dk, ldk, dv, ldv, q, k, v, ld, o, g, ldo, lse, gl, s, dh, causal, scale, scratch);
	else
		gpuz_fattn_bwd256(dq, dk, ldk, dv, ldv, q, k, v, ld, o, g, ldo, lse, gl, s, dh, causal, scale, scratch);
}
