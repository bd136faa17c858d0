// 16-bit floating-point kernels of package hostmath in C: float32 ↔ bf16
// and fp16 conversions (AVX-512 where the CPU has it, else scalar C with
// the same rounding as package half), and a bf16 matrix product with
// float32 accumulation on the AVX512_BF16 dot instruction VDPBF16PS.
//
// The product packs op(b) into panels of 64 columns whose k is split into
// pairs, [pair][column][2], and op(a) into panels of 6 rows, [pair][row][2],
// so that one 32-bit broadcast of a row's pair and four 512-bit loads of a
// panel's pair feed 24 VDPBF16PS (6 rows × 64 columns of accumulators).
// k is blocked by GPUZ_KC, columns by GPUZ_NC and rows by GPUZ_MC so that a
// packed block of b stays in L2 while a's panels stream through. Padding
// (odd k, row and column tails) is packed as zeros. VDPBF16PS treats bf16
// subnormal inputs as zero and flushes subnormal results (it ignores MXCSR).
#include <immintrin.h>
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "flush.h"

// ---------------------------------------------------------------- scalar conversions

static inline uint16_t gpuz_bf16_from_f32(float f) {
	uint32_t b;
	memcpy(&b, &f, 4);
	if ((b & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((b >> 16) | 0x40);
	b += 0x7fffu + ((b >> 16) & 1);
	return (uint16_t)(b >> 16);
}

static inline float gpuz_bf16_to_f32(uint16_t h) {
	uint32_t b = (uint32_t)h << 16;
	float f;
	memcpy(&f, &b, 4);
	return f;
}

// ---------------------------------------------------------------- AVX-512 conversions

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,f16c")

static void gpuz_bf16_to_f32_avx512(float *dst, const uint16_t *src, size_t n) {
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(src + i)));
		_mm512_storeu_si512(dst + i, _mm512_slli_epi32(w, 16));
	}
	for (; i < n; i++) dst[i] = gpuz_bf16_to_f32(src[i]);
}

static void gpuz_bf16_from_f32_avx512(uint16_t *dst, const float *src, size_t n) {
	const __m512i abs = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
	const __m512i round = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1), quiet = _mm512_set1_epi32(0x40);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512i b = _mm512_loadu_si512(src + i);
		__mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(b, abs), inf);
		__m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), one);
		__m512i r = _mm512_srli_epi32(_mm512_add_epi32(b, _mm512_add_epi32(round, lsb)), 16);
		r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(b, 16), quiet);
		_mm256_storeu_si256((__m256i *)(dst + i), _mm512_cvtepi32_epi16(r));
	}
	for (; i < n; i++) dst[i] = gpuz_bf16_from_f32(src[i]);
}

// F16C's conversions round to nearest even (imm 0), keep subnormals and
// quiet a NaN keeping its top payload bits, as package half does.
static void gpuz_fp16_to_f32_avx512(float *dst, const uint16_t *src, size_t n) {
	size_t i = 0;
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(src + i))));
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);
		__m256i h = _mm256_maskz_loadu_epi16(m, src + i);
		_mm512_mask_storeu_ps(dst + i, m, _mm512_cvtph_ps(h));
	}
}

static void gpuz_fp16_from_f32_avx512(uint16_t *dst, const float *src, size_t n) {
	size_t i = 0;
	for (; i + 16 <= n; i += 16)
		_mm256_storeu_si256((__m256i *)(dst + i), _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);
		__m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		_mm256_mask_storeu_epi16(dst + i, m, h);
	}
}

#pragma GCC pop_options

static int gpuz_half_avx512(void) {
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}

// ---------------------------------------------------------------- bf16 product

#define GPUZ_MR 6
#define GPUZ_NR 64
#define GPUZ_KC 512
#define GPUZ_NC 512
#define GPUZ_MC 192

static int gpuz_bf16_dot(void) { return __builtin_cpu_supports("avx512bf16"); }

// gpuz_pack_b packs op(b)[k0:k1, j0:j1] into panels of GPUZ_NR columns:
// panel q, pair p, column jj, half t at ((q·kp + p)·GPUZ_NR + jj)·2 + t.
static void gpuz_pack_b(uint16_t *dst, const uint16_t *b, size_t ldb, int trans, size_t k0, size_t k1, size_t j0,
                        size_t j1) {
	size_t kp = (k1 - k0 + 1) / 2, panels = (j1 - j0 + GPUZ_NR - 1) / GPUZ_NR;
	memset(dst, 0, panels * kp * GPUZ_NR * 2 * sizeof(uint16_t));
	for (size_t q = 0; q < panels; q++) {
		uint16_t *pq = dst + q * kp * GPUZ_NR * 2;
		size_t jend = j0 + (q + 1) * GPUZ_NR < j1 ? j0 + (q + 1) * GPUZ_NR : j1;
		if (trans) { // op(b)[kk, j] = b[j·ldb + kk]: a column's pairs are adjacent
			for (size_t j = j0 + q * GPUZ_NR; j < jend; j++) {
				const uint16_t *col = b + j * ldb;
				uint16_t *out = pq + (j - j0 - q * GPUZ_NR) * 2;
				size_t kk = k0, p = 0;
				for (; kk + 2 <= k1; kk += 2, p++) memcpy(out + p * GPUZ_NR * 2, col + kk, 4);
				if (kk < k1) out[p * GPUZ_NR * 2] = col[kk];
			}
		} else { // op(b)[kk, j] = b[kk·ldb + j]: two rows interleaved
			size_t jn = jend - j0 - q * GPUZ_NR;
			for (size_t kk = k0, p = 0; kk < k1; kk += 2, p++) {
				const uint16_t *r0 = b + kk * ldb + j0 + q * GPUZ_NR;
				const uint16_t *r1 = kk + 1 < k1 ? r0 + ldb : NULL;
				uint16_t *out = pq + p * GPUZ_NR * 2;
				for (size_t jj = 0; jj < jn; jj++) {
					out[2 * jj] = r0[jj];
					out[2 * jj + 1] = r1 ? r1[jj] : 0;
				}
			}
		}
	}
}

// gpuz_pack_a packs op(a)[i0:i1, k0:k1] into panels of GPUZ_MR rows:
// panel r, pair p, row ii, half t at ((r·kp + p)·GPUZ_MR + ii)·2 + t.
static void gpuz_pack_a(uint16_t *dst, const uint16_t *a, size_t lda, int trans, size_t i0, size_t i1, size_t k0,
                        size_t k1) {
	size_t kp = (k1 - k0 + 1) / 2, panels = (i1 - i0 + GPUZ_MR - 1) / GPUZ_MR;
	memset(dst, 0, panels * kp * GPUZ_MR * 2 * sizeof(uint16_t));
	for (size_t i = i0; i < i1; i++) {
		size_t r = (i - i0) / GPUZ_MR, ii = (i - i0) % GPUZ_MR;
		uint16_t *out = dst + (r * kp * GPUZ_MR + ii) * 2;
		if (trans) { // op(a)[i, kk] = a[kk·lda + i]
			for (size_t kk = k0; kk < k1; kk++) out[((kk - k0) / 2) * GPUZ_MR * 2 + (kk - k0) % 2] = a[kk * lda + i];
		} else {
			const uint16_t *row = a + i * lda;
			size_t kk = k0, p = 0;
			for (; kk + 2 <= k1; kk += 2, p++) memcpy(out + p * GPUZ_MR * 2, row + kk, 4);
			if (kk < k1) out[p * GPUZ_MR * 2] = row[kk];
		}
	}
}

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512bf16")

// gpuz_bf16_tile computes a GPUZ_MR × GPUZ_NR tile over kp pairs and writes
// its mr × nr corner to c: c = alpha·acc + beta·c when first (c not read
// when beta is 0), else c += alpha·acc.
static void gpuz_bf16_tile(size_t kp, const uint16_t *pa, const uint16_t *pb, float *c, size_t ldc, size_t mr,
                           size_t nr, float alpha, float beta, int first) {
	__m512 acc[GPUZ_MR][4];
	for (int r = 0; r < GPUZ_MR; r++)
		for (int q = 0; q < 4; q++) acc[r][q] = _mm512_setzero_ps();
	const int32_t *a32 = (const int32_t *)pa;
	for (size_t p = 0; p < kp; p++) {
		const uint16_t *bp = pb + p * GPUZ_NR * 2;
		__m512bh b0 = (__m512bh)_mm512_loadu_si512(bp), b1 = (__m512bh)_mm512_loadu_si512(bp + 32);
		__m512bh b2 = (__m512bh)_mm512_loadu_si512(bp + 64), b3 = (__m512bh)_mm512_loadu_si512(bp + 96);
		for (int r = 0; r < GPUZ_MR; r++) {
			__m512bh av = (__m512bh)_mm512_set1_epi32(a32[p * GPUZ_MR + r]);
			acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
			acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
			acc[r][2] = _mm512_dpbf16_ps(acc[r][2], av, b2);
			acc[r][3] = _mm512_dpbf16_ps(acc[r][3], av, b3);
		}
	}
	const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
	for (size_t r = 0; r < mr; r++) {
		float *row = c + r * ldc;
		for (size_t q = 0; q < 4 && q * 16 < nr; q++) {
			size_t left = nr - q * 16;
			__mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
			__m512 v = _mm512_mul_ps(va, acc[r][q]);
			if (!first || beta != 0) {
				__m512 old = _mm512_maskz_loadu_ps(m, row + q * 16);
				v = first ? _mm512_add_ps(v, _mm512_mul_ps(vb, old)) : _mm512_add_ps(v, old);
			}
			_mm512_mask_storeu_ps(row + q * 16, m, v);
		}
	}
}

#pragma GCC pop_options

// gpuz_gemm_bf16 computes rows [i0, i1) and columns [j0, j1) of
// c = alpha·op(a)·op(b) + beta·c, op(a) m×k and op(b) k×n row-major bf16,
// on a CPU with AVX512_BF16; k = 0 is left to the caller. It returns 0, or -1 when it cannot allocate
// its packing buffers (c unchanged).
static int gpuz_gemm_bf16(int transA, int transB, size_t k, float alpha, const uint16_t *a, size_t lda,
                          const uint16_t *b, size_t ldb, float beta, float *c, size_t ldc, size_t i0, size_t i1,
                          size_t j0, size_t j1) {
	GPUZ_FLUSH_SUBNORMALS();
	if (i0 >= i1 || j0 >= j1 || k == 0) return 0;
	size_t kpMax = (GPUZ_KC + 1) / 2;
	uint16_t *pb = aligned_alloc(64, kpMax * GPUZ_NC * 2 * sizeof(uint16_t));
	uint16_t *pa = aligned_alloc(64, kpMax * (GPUZ_MC + GPUZ_MR) * 2 * sizeof(uint16_t));
	if (!pb || !pa) {
		free(pb);
		free(pa);
		return -1;
	}
	for (size_t jc = j0; jc < j1; jc += GPUZ_NC) {
		size_t jend = jc + GPUZ_NC < j1 ? jc + GPUZ_NC : j1;
		for (size_t pc = 0; pc < k; pc += GPUZ_KC) {
			size_t kend = pc + GPUZ_KC < k ? pc + GPUZ_KC : k, kp = (kend - pc + 1) / 2;
			gpuz_pack_b(pb, b, ldb, transB, pc, kend, jc, jend);
			for (size_t ic = i0; ic < i1; ic += GPUZ_MC) {
				size_t iend = ic + GPUZ_MC < i1 ? ic + GPUZ_MC : i1;
				gpuz_pack_a(pa, a, lda, transA, ic, iend, pc, kend);
				for (size_t jr = jc; jr < jend; jr += GPUZ_NR) {
					const uint16_t *bp = pb + (jr - jc) / GPUZ_NR * kp * GPUZ_NR * 2;
					size_t nr = jend - jr < GPUZ_NR ? jend - jr : GPUZ_NR;
					for (size_t ir = ic; ir < iend; ir += GPUZ_MR) {
						size_t mr = iend - ir < GPUZ_MR ? iend - ir : GPUZ_MR;
						gpuz_bf16_tile(kp, pa + (ir - ic) / GPUZ_MR * kp * GPUZ_MR * 2, bp, c + ir * ldc + jr, ldc,
						               mr, nr, alpha, beta, pc == 0);
					}
				}
			}
		}
	}
	free(pb);
	free(pa);
	return 0;
}
