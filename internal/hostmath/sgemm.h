// The general float32 matrix product of package hostmath in C with
// AVX-512 intrinsics (gpuz_sgemm_avx512 says whether the CPU can run it),
// in the structure of GotoBLAS and BLIS:
//
//   C[i][j] = alpha · Σ_k A[i][k]·B[k][j] + beta · C[i][j]
//
// for i < m, j < n, k < K, A[i][k] = a[i·lda + k] (or a[k·lda + i]
// transposed), B[k][j] = b[k·ldb + j] (or b[j·ldb + k]) and C row-major
// with row stride ldc; with beta 0, C is not read.
//
// The terms are taken in blocks of GPUZ_SG_KC. B is packed once per call
// (gpuz_sgemm_pack_b, in parallel by the caller) into panels of GPUZ_SG_NR
// columns, each a block's terms by NR columns, zero-padded; the caller
// then splits C into tiles (gpuz_sgemm_tile), and a tile packs GPUZ_SG_MR
// rows of A at a time for one block of terms (k-major, MR values a term,
// zero-padded), which stay in L1 while the micro-kernel runs them against
// the block's panels of B, streamed from L2:
//
//   acc[r][v] += broadcast(A[i+r][k]) · B[k][j+16v .. j+16v+15]
//
// MR = 12 rows by NV = 2 vectors: 24 accumulators, two B vectors and one
// broadcast in the 32 vector registers, 24 FMAs per 14 loads. The first
// block of terms stores alpha·sum + beta·C, the later ones add alpha·sum:
// each entry's sum runs in an order fixed by its position (the blocks in
// turn, the terms of a block in turn), whatever the tiles and threads.
#include <immintrin.h>
#include <stddef.h>

#include "flush.h"

#ifndef GPUZ_SG_MR
#define GPUZ_SG_MR 12
#endif
#ifndef GPUZ_SG_NV
#define GPUZ_SG_NV 2
#endif
#define GPUZ_SG_NR (16 * GPUZ_SG_NV)
#ifndef GPUZ_SG_KC
#define GPUZ_SG_KC 256
#endif

// GPUZ_SG_PF is how many terms ahead the packing of a row-major B or a
// transposed A fetches.
#ifndef GPUZ_SG_PF
#define GPUZ_SG_PF 8
#endif

static int gpuz_sgemm_avx512(void) { return __builtin_cpu_supports("avx512f"); }

#pragma GCC push_options
#pragma GCC target("avx512f,fma")

#define GPUZ_SG_UNROLL _Pragma("GCC unroll 16")

// gpuz_sg_mask is the mask of the first left of 16 lanes (all for left ≥
// 16, none for left ≤ 0).
static inline __mmask16 gpuz_sg_mask(int left) {
	return left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
}

// gpuz_sgemm_pack_b packs B's terms [k0, k0 + kc) and columns [j0, j0 +
// nc) into dst: panel p (columns j0 + NR·p on) at dst + p·kc·NR, its
// term kk's NR values at kk·NR, zero in the last panel's columns past nc.
static void gpuz_sgemm_pack_b(int trans, const float *b, ptrdiff_t ldb, int k0, int kc, int j0, int nc, float *dst) {
	if (!trans) {
		// B[k][j] = b[k·ldb + j]: each term's row read in turn, whole.
		for (int kk = 0; kk < kc; kk++) {
			const float *src = b + (ptrdiff_t)(k0 + kk) * ldb + j0;
			for (int p = 0; p * GPUZ_SG_NR < nc; p++) {
				float *d = dst + (ptrdiff_t)p * kc * GPUZ_SG_NR + kk * GPUZ_SG_NR;
				const int left = nc - p * GPUZ_SG_NR;
				// Rows far apart defeat the hardware's prefetch: fetch the
				// row a few terms ahead.
				GPUZ_SG_UNROLL for (int v = 0; v < GPUZ_SG_NV; v++)
					_mm_prefetch((const char *)(src + GPUZ_SG_PF * ldb + p * GPUZ_SG_NR + 16 * v), _MM_HINT_T0);
				GPUZ_SG_UNROLL for (int v = 0; v < GPUZ_SG_NV; v++)
					_mm512_store_ps(d + 16 * v, _mm512_maskz_loadu_ps(gpuz_sg_mask(left - 16 * v),
					                                                    src + p * GPUZ_SG_NR + 16 * v));
			}
		}
		return;
	}
	// B[k][j] = b[j·ldb + k]: 16 columns at a time, transposed through a
	// gather of 16 rows of b.
	const __m512i idx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
	                                       _mm512_set1_epi32((int)ldb));
	for (int p = 0; p * GPUZ_SG_NR < nc; p++) {
		float *d = dst + (ptrdiff_t)p * kc * GPUZ_SG_NR;
		for (int v = 0; v < GPUZ_SG_NV; v++) {
			const int j = p * GPUZ_SG_NR + 16 * v;
			const __mmask16 m = gpuz_sg_mask(nc - j);
			const float *src = b + (ptrdiff_t)(j0 + j) * ldb + k0;
			for (int kk = 0; kk < kc; kk++)
				_mm512_store_ps(d + kk * GPUZ_SG_NR + 16 * v,
				                _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, src + kk, 4));
		}
	}
}

// gpuz_sgemm_pack_a packs A's rows [i0, i0 + mr) and terms [k0, k0 + kc)
// of a row-major A (A[i][k] = a[i·lda + k]) into dst: term kk's MR values
// at kk·MR, zero in rows mr to MR − 1.
static void gpuz_sgemm_pack_a(const float *a, ptrdiff_t lda, int i0, int mr, int k0, int kc, float *dst) {
	// A[i][k] = a[i·lda + k]: 16 terms of each row at a time, scattered.
	int kk = 0;
	for (; kk + 16 <= kc; kk += 16) {
		__m512 rows[GPUZ_SG_MR];
		GPUZ_SG_UNROLL for (int r = 0; r < GPUZ_SG_MR; r++)
			rows[r] = r < mr ? _mm512_loadu_ps(a + (ptrdiff_t)(i0 + r) * lda + k0 + kk) : _mm512_setzero_ps();
		float *d = dst + kk * GPUZ_SG_MR;
		GPUZ_SG_UNROLL for (int r = 0; r < GPUZ_SG_MR; r++) {
			const __m512i idx = _mm512_add_epi32(
			    _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
			                       _mm512_set1_epi32(GPUZ_SG_MR)),
			    _mm512_set1_epi32(r));
			_mm512_i32scatter_ps(d, idx, rows[r], 4);
		}
	}
	for (; kk < kc; kk++)
		for (int r = 0; r < GPUZ_SG_MR; r++)
			dst[kk * GPUZ_SG_MR + r] = r < mr ? a[(ptrdiff_t)(i0 + r) * lda + k0 + kk] : 0;
}

// gpuz_sgemm_pack_a_block packs A's rows [i0, i1) and terms [k0, k0 + kc)
// into dst, MR rows at a time: rows i0 + MR·p on at dst + p·MR·kc, as
// gpuz_sgemm_pack_a lays them out. A transposed (A[i][k] = a[k·lda + i])
// is read a term at a time, each term's rows of the block contiguous; the
// terms are far apart, and the hardware's prefetch does not follow them:
// the term a few ahead is fetched.
static void gpuz_sgemm_pack_a_block(int trans, const float *a, ptrdiff_t lda, int i0, int i1, int k0, int kc,
                                    float *dst) {
	if (!trans) {
		for (int i = i0; i < i1; i += GPUZ_SG_MR)
			gpuz_sgemm_pack_a(a, lda, i, i1 - i < GPUZ_SG_MR ? i1 - i : GPUZ_SG_MR, k0, kc,
			                  dst + (ptrdiff_t)(i - i0) * kc);
		return;
	}
	for (int kk = 0; kk < kc; kk++) {
		const float *src = a + (ptrdiff_t)(k0 + kk) * lda;
		for (int i = i0; i < i1; i += 16)
			_mm_prefetch((const char *)(src + GPUZ_SG_PF * lda + i), _MM_HINT_T0);
		_mm_prefetch((const char *)(src + GPUZ_SG_PF * lda + i1 - 1), _MM_HINT_T0);
		for (int i = i0; i < i1; i += GPUZ_SG_MR) {
			float *d = dst + (ptrdiff_t)(i - i0) * kc + kk * GPUZ_SG_MR;
			const int mr = i1 - i;
#if GPUZ_SG_MR > 16
			_mm512_storeu_ps(d, _mm512_maskz_loadu_ps(gpuz_sg_mask(mr), src + i));
			_mm512_mask_storeu_ps(d + 16, gpuz_sg_mask(GPUZ_SG_MR - 16), _mm512_maskz_loadu_ps(gpuz_sg_mask(mr - 16), src + i + 16));
#else
			_mm512_mask_storeu_ps(d, gpuz_sg_mask(GPUZ_SG_MR), _mm512_maskz_loadu_ps(gpuz_sg_mask(mr), src + i));
#endif
		}
	}
}

// gpuz_sgemm_micro runs the kc terms of the packed rows ap against the
// packed panel bp and stores the block's first mr rows and nr columns at
// c: alpha·sum + beta·C when first (C unread when beta is 0), else C +
// alpha·sum.
static void gpuz_sgemm_micro(int kc, const float *ap, const float *bp, float *c, ptrdiff_t ldc, int mr, int nr,
                             float alpha, float beta, int first) {
	__m512 acc[GPUZ_SG_MR][GPUZ_SG_NV];
	GPUZ_SG_UNROLL for (int r = 0; r < GPUZ_SG_MR; r++)
		GPUZ_SG_UNROLL for (int v = 0; v < GPUZ_SG_NV; v++)
			acc[r][v] = _mm512_setzero_ps();
	for (int kk = 0; kk < kc; kk++) {
		__m512 bv[GPUZ_SG_NV];
		GPUZ_SG_UNROLL for (int v = 0; v < GPUZ_SG_NV; v++)
			bv[v] = _mm512_load_ps(bp + kk * GPUZ_SG_NR + 16 * v);
		GPUZ_SG_UNROLL for (int r = 0; r < GPUZ_SG_MR; r++) {
			const __m512 x = _mm512_set1_ps(ap[kk * GPUZ_SG_MR + r]);
			GPUZ_SG_UNROLL for (int v = 0; v < GPUZ_SG_NV; v++)
				acc[r][v] = _mm512_fmadd_ps(x, bv[v], acc[r][v]);
		}
	}
	__mmask16 mask[GPUZ_SG_NV];
	GPUZ_SG_UNROLL for (int v = 0; v < GPUZ_SG_NV; v++)
		mask[v] = gpuz_sg_mask(nr - 16 * v);
	const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(first ? beta : 1);
	const int load = !first || beta != 0;
	GPUZ_SG_UNROLL for (int r = 0; r < GPUZ_SG_MR; r++) {
		if (r >= mr)
			break;
		float *cr = c + r * ldc;
		GPUZ_SG_UNROLL for (int v = 0; v < GPUZ_SG_NV; v++) {
			__m512 x = _mm512_mul_ps(va, acc[r][v]);
			if (load)
				x = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mask[v], cr + 16 * v), x);
			_mm512_mask_storeu_ps(cr + 16 * v, mask[v], x);
		}
	}
}

// gpuz_sgemm_tile computes C's rows [i0, i1) and columns [j0, j1) (j0 a
// multiple of NR). When bp is not NULL it holds B packed whole: the block
// of terms from k0 at bp + k0·np·NR, with np = ⌈n/NR⌉ panels, its panel p
// at kc·NR·p in it. Else the tile packs each block of terms of its columns
// of B into bt (KC·(j1 − j0 rounded up to NR) floats, 64-byte aligned)
// itself. ap holds KC·(i1 − i0 rounded up to MR) floats. The tile runs the
// blocks of terms in turn; in each, it packs its rows of A into ap, and
// then each MR of them, which stay in L1 meanwhile, run against the
// block's panels of the tile's columns, which stay in L2 (the caller keeps
// the tile small enough).
static void gpuz_sgemm_tile(int transA, int transB, int n, int k, float alpha, const float *a, ptrdiff_t lda,
                            const float *b, ptrdiff_t ldb, const float *bp, float *bt, float beta, float *c,
                            ptrdiff_t ldc, int i0, int i1, int j0, int j1, float *ap) {
	GPUZ_FLUSH_SUBNORMALS();
	const ptrdiff_t np = (n + GPUZ_SG_NR - 1) / GPUZ_SG_NR;
	for (int k0 = 0; k0 < k; k0 += GPUZ_SG_KC) {
		const int kc = k - k0 < GPUZ_SG_KC ? k - k0 : GPUZ_SG_KC;
		const float *block = bt;
		if (bp)
			block = bp + (ptrdiff_t)k0 * np * GPUZ_SG_NR + (ptrdiff_t)(j0 / GPUZ_SG_NR) * kc * GPUZ_SG_NR;
		else
			gpuz_sgemm_pack_b(transB, b, ldb, k0, kc, j0, j1 - j0, bt);
		gpuz_sgemm_pack_a_block(transA, a, lda, i0, i1, k0, kc, ap);
		for (int i = i0; i < i1; i += GPUZ_SG_MR) {
			const int mr = i1 - i < GPUZ_SG_MR ? i1 - i : GPUZ_SG_MR;
			for (int j = j0; j < j1; j += GPUZ_SG_NR) {
				const int nr = j1 - j < GPUZ_SG_NR ? j1 - j : GPUZ_SG_NR;
				gpuz_sgemm_micro(kc, ap + (ptrdiff_t)(i - i0) * kc, block + (ptrdiff_t)((j - j0) / GPUZ_SG_NR) * kc * GPUZ_SG_NR,
				                 c + (ptrdiff_t)i * ldc + j, ldc, mr, nr, alpha, beta, k0 == 0);
			}
		}
	}
}

#pragma GCC pop_options
