// A float32 matrix product of package hostmath in C with AVX-512
// intrinsics, for the attention kernels' per-head products: small (at most
// a few hundred rows, columns and terms), with operands read through any
// strides, and causal, so that the part of the product a triangular mask
// would discard is not computed (gpuz_trigemm_avx512 says whether the CPU
// can run it).
//
//   C[i][j] = alpha · Σ_k A[i][k]·B[k][j] + beta · C[i][j]
//
// for i < m, j < n, k < K, A[i][k] = a[i·rsa + k·csa], B[k][j] =
// b[k·rsb + j·csb] and C row-major with row stride ldc; with beta 0, C is
// not read. tri selects the triangle (see trigemm.go):
//
//   0  none: the whole product
//   1  A lower: A[i][k] is taken as 0 for k > i (row i sums k ≤ i)
//   2  A upper: A[i][k] is taken as 0 for k < i (row i sums k ≥ i)
//   3  C lower: only C[i][j] for j ≤ i are needed; column blocks of 64
//      wholly right of a row block's last row are left untouched, and the
//      entries right of the diagonal inside the blocks computed hold the
//      unmasked product
//
// The rows are taken in blocks of 6 and the columns in panels of 64, so
// that a block's 24 accumulators stay in registers; A is read in place
// (one of its strides must be 1), but for the masked diagonal blocks,
// which are copied into the scratch, and B is packed once per call into
// panels of 64 columns padded with zeros. Each entry's sum runs in an
// order fixed by its position, so results do not depend on how the caller
// spreads its work.
#include <immintrin.h>
#include <stddef.h>

#include "flush.h"

#define GPUZ_MR 6
#define GPUZ_NR 64
// GPUZ_KC is the terms of B a block of rows multiplies at a time (with
// beta 0): 128 rows of a panel, 32 KiB, held in the level-1 cache.
#define GPUZ_KC 128

static int gpuz_trigemm_avx512(void) { return __builtin_cpu_supports("avx512f"); }

// gpuz_trigemm_scratch is the scratch, in floats, that a product of k terms
// and n columns needs: a masked diagonal block of A and the packed B.
static size_t gpuz_trigemm_scratch(int n, int k) {
	return (size_t)GPUZ_MR * k + (size_t)k * ((n + GPUZ_NR - 1) / GPUZ_NR) * GPUZ_NR;
}

#pragma GCC push_options
#pragma GCC target("avx512f,fma")

#define GPUZ_UNROLL _Pragma("GCC unroll 8")

// gpuz_fma_step adds one term k to the block's accumulators: A's 6 values
// av(r) times B's row of 64 at bk.
#define GPUZ_FMA_STEP(av, bk)                                                        \
	do {                                                                             \
		const __m512 b0 = _mm512_loadu_ps(bk), b1 = _mm512_loadu_ps((bk) + 16);     \
		const __m512 b2 = _mm512_loadu_ps((bk) + 32), b3 = _mm512_loadu_ps((bk) + 48); \
		GPUZ_UNROLL for (int r = 0; r < GPUZ_MR; r++) {                              \
			const __m512 x = _mm512_set1_ps(av(r));                                  \
			acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);                           \
			acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);                           \
			acc[r][2] = _mm512_fmadd_ps(x, b2, acc[r][2]);                           \
			acc[r][3] = _mm512_fmadd_ps(x, b3, acc[r][3]);                           \
		}                                                                            \
	} while (0)

// gpuz_trigemm_kernel computes one block of 6 rows and 64 columns: the
// terms kd read from A in place (row-major when rowmajor, A[i][k] at
// a[r·rs + k], else transposed, at a[r + k·cs]) against B's packed rows
// bd, then the terms kp of the packed, masked block ap (k-major, 6 a term)
// against bp, and stores alpha times the sums plus beta times C into the
// block's first mr rows and nr columns.
static inline __attribute__((always_inline)) void gpuz_trigemm_kernel(
    const int rowmajor, const float *a, ptrdiff_t rs, ptrdiff_t cs, int kd, const float *bd, const float *ap,
    int kp, const float *bp, float alpha, float beta, float *c, ptrdiff_t ldc, int mr, int nr, int load) {
	__mmask16 mask[4];
	for (int v = 0; v < 4; v++) {
		const int left = nr - 16 * v;
		mask[v] = left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
	}
	__m512 acc[GPUZ_MR][4];
	GPUZ_UNROLL for (int r = 0; r < GPUZ_MR; r++)
		GPUZ_UNROLL for (int v = 0; v < 4; v++)
			acc[r][v] = load && r < mr ? _mm512_maskz_loadu_ps(mask[v], c + r * ldc + 16 * v) : _mm512_setzero_ps();
	if (rowmajor) {
		const float *a0 = a, *a1 = a + rs, *a2 = a + 2 * rs, *a3 = a + 3 * rs, *a4 = a + 4 * rs, *a5 = a + 5 * rs;
#define GPUZ_AV(r) (r == 0 ? a0[k] : r == 1 ? a1[k] : r == 2 ? a2[k] : r == 3 ? a3[k] : r == 4 ? a4[k] : a5[k])
		for (int k = 0; k < kd; k++)
			GPUZ_FMA_STEP(GPUZ_AV, bd + k * GPUZ_NR);
#undef GPUZ_AV
	} else {
		for (int k = 0; k < kd; k++) {
			const float *ak = a + k * cs;
#define GPUZ_AV(r) ak[r]
			GPUZ_FMA_STEP(GPUZ_AV, bd + k * GPUZ_NR);
#undef GPUZ_AV
		}
	}
	for (int k = 0; k < kp; k++) {
		const float *ak = ap + k * GPUZ_MR;
#define GPUZ_AV(r) ak[r]
		GPUZ_FMA_STEP(GPUZ_AV, bp + k * GPUZ_NR);
#undef GPUZ_AV
	}
	const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
	GPUZ_UNROLL for (int r = 0; r < GPUZ_MR; r++) {
		if (r >= mr)
			break;
		float *cr = c + r * ldc;
		GPUZ_UNROLL for (int v = 0; v < 4; v++) {
			__m512 x = _mm512_mul_ps(va, acc[r][v]);
			if (beta != 0)
				x = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mask[v], cr + 16 * v), x);
			_mm512_mask_storeu_ps(cr + 16 * v, mask[v], x);
		}
	}
}

static void gpuz_trigemm_rows(const float *a, ptrdiff_t rs, ptrdiff_t cs, int kd, const float *bd, const float *ap,
                              int kp, const float *bp, float alpha, float beta, float *c, ptrdiff_t ldc, int mr,
                              int nr, int load) {
	gpuz_trigemm_kernel(1, a, rs, cs, kd, bd, ap, kp, bp, alpha, beta, c, ldc, mr, nr, load);
}

static void gpuz_trigemm_cols(const float *a, ptrdiff_t rs, ptrdiff_t cs, int kd, const float *bd, const float *ap,
                              int kp, const float *bp, float alpha, float beta, float *c, ptrdiff_t ldc, int mr,
                              int nr, int load) {
	gpuz_trigemm_kernel(0, a, rs, cs, kd, bd, ap, kp, bp, alpha, beta, c, ldc, mr, nr, load);
}

// gpuz_trigemm_pack copies A's rows [i0, i0 + mr) and terms [k0, k1) into
// ap, k-major, 6 values a term: zero in the rows past mr and where tri
// masks the term.
static void gpuz_trigemm_pack(int tri, const float *a, ptrdiff_t rsa, ptrdiff_t csa, int i0, int mr, int k0, int k1,
                              float *ap) {
	for (int kk = k0; kk < k1; kk++) {
		float *dst = ap + (kk - k0) * GPUZ_MR;
		for (int r = 0; r < GPUZ_MR; r++) {
			const int i = i0 + r;
			const int keep = r < mr && !(tri == 1 && kk > i) && !(tri == 2 && kk < i);
			dst[r] = keep ? a[i * rsa + kk * csa] : 0;
		}
	}
}

// gpuz_trigemm computes the product described at the top of this file;
// scratch holds gpuz_trigemm_scratch(n, k) floats. Each block of 6 rows
// reads A in place over the terms every row sums, and packs, masked, the
// terms on the diagonal (tri 1 and 2) or all of them in the last block
// when it has fewer than 6 rows.
static void gpuz_trigemm(int tri, int m, int n, int k, float alpha, const float *a, ptrdiff_t rsa, ptrdiff_t csa,
                         const float *b, ptrdiff_t rsb, ptrdiff_t csb, float beta, float *c, ptrdiff_t ldc,
                         float *scratch) {
	GPUZ_FLUSH_SUBNORMALS();
	if (m <= 0 || n <= 0)
		return;
	float *ap = scratch, *bp = scratch + (size_t)GPUZ_MR * k;
	const int panels = (n + GPUZ_NR - 1) / GPUZ_NR;
	// B in panels of 64 columns, each k rows of 64, zero-padded.
	for (int p = 0; p < panels; p++) {
		float *dst = bp + (size_t)p * k * GPUZ_NR;
		const int j0 = p * GPUZ_NR, nj = n - j0 < GPUZ_NR ? n - j0 : GPUZ_NR;
		if (csb == 1)
			for (int kk = 0; kk < k; kk++)
				for (int v = 0; v < 4; v++) {
					const int left = nj - 16 * v;
					const __mmask16 mv = left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
					_mm512_storeu_ps(dst + kk * GPUZ_NR + 16 * v, _mm512_maskz_loadu_ps(mv, b + kk * rsb + j0 + 16 * v));
				}
		else if ((long long)n * csb + (long long)k * rsb < (1LL << 31) && csb > 0 && rsb > 0) {
			// B's columns are rows in memory: gathered 16 at a time (the
			// scalar copy below took an eighth of the scores' product).
			for (int v = 0; v < 4; v++) {
				const int left = nj - 16 * v;
				const __mmask16 mv = left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
				const __m512i idx = _mm512_mullo_epi32(
				    _mm512_add_epi32(_mm512_set1_epi32(j0 + 16 * v),
				                     _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)),
				    _mm512_set1_epi32((int)csb));
				for (int kk = 0; kk < k; kk++)
					_mm512_storeu_ps(dst + kk * GPUZ_NR + 16 * v,
					                 _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mv, idx, b + kk * rsb, 4));
			}
		} else
			for (int j = 0; j < GPUZ_NR; j++) {
				if (j < nj) {
					const float *src = b + (j0 + j) * csb;
					for (int kk = 0; kk < k; kk++)
						dst[kk * GPUZ_NR + j] = src[kk * rsb];
				} else
					for (int kk = 0; kk < k; kk++)
						dst[kk * GPUZ_NR + j] = 0;
			}
	}
	typedef void (*kernel_fn)(const float *, ptrdiff_t, ptrdiff_t, int, const float *, const float *, int,
	                          const float *, float, float, float *, ptrdiff_t, int, int, int);
	const kernel_fn kernel = csa == 1 ? gpuz_trigemm_rows : gpuz_trigemm_cols;
	// Panels outermost, then blocks of GPUZ_KC terms, then the blocks of 6
	// rows: the part of B that the rows multiply stays in the level-1 cache
	// (a whole panel of 512 terms is 128 KiB, and read from the level-2 cache
	// at every block of rows the kernel ran at half its speed). With beta 0
	// a block's partial sums go through C unscaled between term blocks, the
	// last scaling them: the sums are those of one pass over the terms in
	// the same order. With beta nonzero the terms are taken in one block.
	const int kc = beta == 0 ? GPUZ_KC : (k > 0 ? k : 1);
	for (int p = 0; p < panels; p++) {
		const int j0 = p * GPUZ_NR, nr = n - j0 < GPUZ_NR ? n - j0 : GPUZ_NR;
		const float *panel = bp + (size_t)p * k * GPUZ_NR;
		// One pass when k is 0, so that C is still written.
		for (int kb0 = 0; kb0 < k || kb0 == 0; kb0 += kc) {
			const int kb1 = k - kb0 < kc ? k : kb0 + kc;
			for (int i0 = 0; i0 < m; i0 += GPUZ_MR) {
				const int mr = m - i0 < GPUZ_MR ? m - i0 : GPUZ_MR;
				if (tri == 3 && i0 + mr - 1 < j0)
					continue; // the block's rows need no column of this panel
				// Terms read in place [d0, d1), packed [p0, p1); all the
				// block's terms [t0, t1).
				int d0 = 0, d1 = k, p0 = 0, p1 = 0;
				if (mr < GPUZ_MR) {
					d1 = 0;
					p0 = tri == 2 ? (i0 < k ? i0 : k) : 0;
					p1 = tri == 1 ? (i0 + mr < k ? i0 + mr : k) : k;
				} else if (tri == 1) {
					d1 = i0 < k ? i0 : k;
					p0 = d1;
					p1 = i0 + mr < k ? i0 + mr : k;
				} else if (tri == 2) {
					p0 = i0 < k ? i0 : k;
					p1 = i0 + mr < k ? i0 + mr : k;
					d0 = p1;
				}
				int t0 = k, t1 = 0;
				if (d1 > d0) {
					t0 = d0;
					t1 = d1;
				}
				if (p1 > p0) {
					t0 = p0 < t0 ? p0 : t0;
					t1 = p1 > t1 ? p1 : t1;
				}
				// A block without terms is written once: alpha·0 + beta·C.
				const int empty = t1 <= t0;
				if (!empty && (t1 <= kb0 || t0 >= kb1))
					continue; // none of the block's terms in this block of terms
				const int first = empty ? kb0 == 0 : kb0 <= t0;
				const int last = empty ? kb0 == 0 : t1 <= kb1;
				if (empty && !first)
					continue;
				// This term block's share of each range.
				const int e0 = d0 > kb0 ? d0 : kb0, e1 = d1 < kb1 ? d1 : kb1;
				const int q0 = p0 > kb0 ? p0 : kb0, q1 = p1 < kb1 ? p1 : kb1;
				const int kd = e1 > e0 ? e1 - e0 : 0, kp = q1 > q0 ? q1 - q0 : 0;
				if (kp > 0)
					gpuz_trigemm_pack(tri, a, rsa, csa, i0, mr, q0, q1, ap);
				kernel(a + i0 * rsa + (kd > 0 ? e0 : 0) * csa, rsa, csa, kd, panel + (size_t)(kd > 0 ? e0 : 0) * GPUZ_NR,
				       ap, kp, panel + (size_t)(kp > 0 ? q0 : 0) * GPUZ_NR, last ? alpha : 1, last ? beta : 0,
				       c + i0 * ldc + j0, ldc, mr, nr, !first);
			}
		}
	}
}

#pragma GCC pop_options
