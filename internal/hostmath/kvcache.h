// The key-value cache attention of package hostmath in C, with AVX-512
// intrinsics and with AVX2, FMA and F16C ones (gpuz_kv_isa says which the
// CPU runs; the Go kernel of kvcache.go runs elsewhere), for a cache of
// float32, bf16 or fp16 keys and values (the kind, GPUZ_KV_F32 …): the
// queries, scores, sums and outputs are float32, a 16-bit key or value
// widened to float32 in registers as it is loaded (exactly), so that a
// 16-bit cache is read at 2 bytes an element. A task is a block
// of up to GPUZ_KV_RB query rows of one (sequence, key and value head) pair
// against one split of the cache's positions: the rows are the pair's
// group's query heads for each new token, token by token (row r is head
// r mod g of new token r / g), so that in decode (one new token) a block
// holds the whole group and each key and value of the split is read from
// memory once for all of the group's heads. The block walks its split
// GPUZ_KV_KB keys at a time: the keys' scores for every row (dot products
// over the head's width, scaled), an online softmax per row (a running
// maximum and sum; the partial output rescaled when the maximum grows), and
// the probabilities' sum of the values into the rows' partial outputs,
// GPUZ_KV_KB values a column vector at a time. A split's partial outputs,
// maxima and sums are merged by gpuz_kv_merge, or, when the cache is one
// split, divided by the sums at the task's end.
//
// Every element is computed in an order fixed by its position and the
// split size, whatever the caller's thread count. Each dot product runs in
// vector lanes added up at the end, so the C kernels agree with the Go
// kernel to float32 rounding, not bit for bit; the AVX2 and AVX-512 kernels
// differ in those lanes and in softmax.h's exponentials, and agree with
// each other to the same tolerance.
#include <immintrin.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "flush.h"
#include "softmax.h"

// GPUZ_KV_RB is the most query rows of a task; GPUZ_KV_KB the keys a block
// of scores takes (one AVX-512 vector, two AVX2 ones).
#define GPUZ_KV_RB 8
#define GPUZ_KV_KB 16

// The kinds of a cache's elements, for gpuz_kv_attend's kind: float32,
// bf16 and fp16 (the 16-bit ones packed, two to 4 bytes).
#define GPUZ_KV_F32 0
#define GPUZ_KV_BF16 1
#define GPUZ_KV_FP16 2

// gpuz_kv_isa is the best instruction set of the kernels this CPU runs
// (softmax.h's GPUZ_ISA_…, for gpuz_kv_attend's isa): softmax.h's own,
// whose exponentials the kernels call, but AVX2 only with F16C too, which
// widens the 16-bit caches.
static int gpuz_kv_isa(void) {
	int isa = gpuz_softmax_isa();
	return isa == GPUZ_ISA_AVX2 && !__builtin_cpu_supports("f16c") ? GPUZ_ISA_SCALAR : isa;
}

// gpuz_kv_at returns the address of element i of a cache of kind whose
// first element is at p.
static inline const void *gpuz_kv_at(const void *p, ptrdiff_t i, int kind) {
	return (const char *)p + i * (kind == GPUZ_KV_F32 ? 4 : 2);
}

// gpuz_kv_rows sets, for the rows r0 … r1−1 of a pair, the address of each
// row's query (q is the group's first head's query of the first new token,
// ldq the stride of the new tokens, dh the head's width) and the end of the
// positions it sees (start + its token + 1), and returns the largest end.
static inline int gpuz_kv_rows(const float **qr, int *lim, const float *q, ptrdiff_t ldq, int g, int r0, int r1,
                               int start, int dh) {
	int most = 0;
	for (int r = r0; r < r1; r++) {
		qr[r - r0] = q + (ptrdiff_t)(r / g) * ldq + (ptrdiff_t)(r % g) * dh;
		lim[r - r0] = start + r / g + 1;
		most = lim[r - r0] > most ? lim[r - r0] : most;
	}
	return most;
}

// GPUZ_KV_BY_ROWS calls BODY with the row count (1 to GPUZ_KV_RB), the
// head's width DH and the cache's kind KIND constants.
#define GPUZ_KV_CALL(BODY, KIND, NR, DH) BODY(q, ldq, g, r0, NR, start, k, v, t0, t1, DH, scale, acc, mx, l, KIND)
#define GPUZ_KV_BY_ROWS(BODY, KIND, DH)                                                                        \
	switch (r1 - r0) {                                                                                         \
	case 1: GPUZ_KV_CALL(BODY, KIND, 1, DH); break;                                                            \
	case 2: GPUZ_KV_CALL(BODY, KIND, 2, DH); break;                                                            \
	case 3: GPUZ_KV_CALL(BODY, KIND, 3, DH); break;                                                            \
	case 4: GPUZ_KV_CALL(BODY, KIND, 4, DH); break;                                                            \
	case 5: GPUZ_KV_CALL(BODY, KIND, 5, DH); break;                                                            \
	case 6: GPUZ_KV_CALL(BODY, KIND, 6, DH); break;                                                            \
	case 7: GPUZ_KV_CALL(BODY, KIND, 7, DH); break;                                                            \
	default: GPUZ_KV_CALL(BODY, KIND, 8, DH);                                                                  \
	}

// GPUZ_KV_TASK defines NAME, which runs BODY on rows r0 … r1−1 of a cache
// of kind KIND, compiled for each row count and for heads of 64 and 128,
// so that the loops over the rows and the head's columns unroll and the
// partial outputs stay in registers (with both known a decode step reads
// three times as fast).
#define GPUZ_KV_TASK(NAME, BODY, KIND)                                                                         \
	static void NAME(const float *q, ptrdiff_t ldq, int g, int r0, int r1, int start, const void *k,          \
	                 const void *v, int t0, int t1, int dh, float scale, float *acc, float *mx, float *l) {    \
		switch (dh) {                                                                                          \
		case 64: GPUZ_KV_BY_ROWS(BODY, KIND, 64); break;                                                       \
		case 128: GPUZ_KV_BY_ROWS(BODY, KIND, 128); break;                                                     \
		default: GPUZ_KV_BY_ROWS(BODY, KIND, dh);                                                              \
		}                                                                                                      \
	}

// ---------------------------------------------------------------- AVX-512

#pragma GCC push_options
#pragma GCC target("avx512f,fma")

static inline __mmask16 gpuz_kv_mask16(int left) {
	return left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
}

// gpuz_kv_widen512 widens 16 16-bit values of kind to float32s.
static inline __m512 gpuz_kv_widen512(__m256i h, int kind) {
	if (kind == GPUZ_KV_BF16)
		return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
	return _mm512_cvtph_ps(h);
}

// gpuz_kv_load512 loads elements j … j+15 of a row p of kind as float32s.
static inline __m512 gpuz_kv_load512(const void *p, int j, int kind) {
	if (kind == GPUZ_KV_F32)
		return _mm512_loadu_ps((const float *)p + j);
	return gpuz_kv_widen512(_mm256_loadu_si256((const __m256i *)((const unsigned short *)p + j)), kind);
}

// gpuz_kv_loadn512 is gpuz_kv_load512 of the first left elements (at least
// one), the other lanes 0, reading no element past them.
static inline __m512 gpuz_kv_loadn512(const void *p, int j, int left, int kind) {
	if (kind == GPUZ_KV_F32)
		return _mm512_maskz_loadu_ps(gpuz_kv_mask16(left), (const float *)p + j);
	if (left >= 16)
		return gpuz_kv_load512(p, j, kind);
	unsigned short h[16] = {0};
	memcpy(h, (const unsigned short *)p + j, sizeof(unsigned short) * (size_t)left);
	return gpuz_kv_widen512(_mm256_loadu_si256((const __m256i *)h), kind);
}

// gpuz_kv_dot512 is the dot product of a and the row b of kind over dh, in
// 16 lanes.
static inline float gpuz_kv_dot512(const float *a, const void *b, int dh, int kind) {
	__m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
	int j = 0;
	for (; j + 32 <= dh; j += 32) {
		s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + j), gpuz_kv_load512(b, j, kind), s0);
		s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + j + 16), gpuz_kv_load512(b, j + 16, kind), s1);
	}
	for (; j < dh; j += 16) {
		const __mmask16 m = gpuz_kv_mask16(dh - j);
		s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + j), gpuz_kv_loadn512(b, j, dh - j, kind), s0);
	}
	return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

// gpuz_kv_fold512 folds the block's scores sc (nk of them, the first n
// visible) into a row's running maximum mx and sum l: it overwrites sc with
// the probabilities against the new maximum (0 for keys the row does not
// see) and returns the factor the row's partial output must be multiplied
// by, 1 when the maximum did not grow.
static inline float gpuz_kv_fold512(float *sc, int nk, int n, float *mx, float *l) {
	if (n <= 0) {
		_mm512_storeu_ps(sc, _mm512_setzero_ps());
		return 1;
	}
	const __mmask16 vis = gpuz_kv_mask16(n < nk ? n : nk);
	const __m512 s = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), vis, sc);
	const float bm = _mm512_reduce_max_ps(s);
	const float m = bm > *mx ? bm : *mx;
	const float alpha = m == *mx ? 1 : gpuz_exp_scalar(*mx - m);
	const __m512 p = _mm512_maskz_mov_ps(vis, gpuz_exp512(_mm512_sub_ps(s, _mm512_set1_ps(m))));
	_mm512_storeu_ps(sc, p);
	*mx = m;
	*l = *l * alpha + _mm512_reduce_add_ps(p);
	return alpha;
}

// gpuz_kv_body512 runs rows r0 … r0+nr−1 (at most GPUZ_KV_RB) of a pair
// against positions t0 … t1−1 of its keys k and values v
// ([positions, dh], elements of kind): it sets acc [nr, dh] to the rows'
// unnormalised partial outputs and mx, l to their maxima and sums (−∞ and
// 0 for a row that sees none of the split).
static inline __attribute__((always_inline)) void gpuz_kv_body512(const float *q, ptrdiff_t ldq, int g, int r0,
                                                                 const int nr, int start, const void *k,
                                                                 const void *v, int t0, int t1, const int dh,
                                                                 float scale, float *acc, float *mx, float *l,
                                                                 const int kind) {
	const float *qr[GPUZ_KV_RB];
	int lim[GPUZ_KV_RB];
	const int most = gpuz_kv_rows(qr, lim, q, ldq, g, r0, r0 + nr, start, dh);
	const int end = t1 < most ? t1 : most;
	for (int r = 0; r < nr; r++) mx[r] = -INFINITY, l[r] = 0;
	memset(acc, 0, sizeof(float) * (size_t)nr * dh);
	float sc[GPUZ_KV_RB][GPUZ_KV_KB] __attribute__((aligned(64)));
	float alpha[GPUZ_KV_RB];
	for (int tb = t0; tb < end; tb += GPUZ_KV_KB) {
		const int nk = end - tb < GPUZ_KV_KB ? end - tb : GPUZ_KV_KB;
		for (int i = 0; i < nk; i++) {
			const void *ki = gpuz_kv_at(k, (ptrdiff_t)(tb + i) * dh, kind);
			for (int r = 0; r < nr; r++) sc[r][i] = scale * gpuz_kv_dot512(qr[r], ki, dh, kind);
		}
		for (int r = 0; r < nr; r++) alpha[r] = gpuz_kv_fold512(sc[r], nk, lim[r] - tb, &mx[r], &l[r]);
		for (int j = 0; j < dh; j += 16) {
			const __mmask16 cm = gpuz_kv_mask16(dh - j);
			__m512 a[GPUZ_KV_RB];
			for (int r = 0; r < nr; r++)
				a[r] = _mm512_mul_ps(_mm512_maskz_loadu_ps(cm, acc + r * dh + j), _mm512_set1_ps(alpha[r]));
			for (int i = 0; i < nk; i++) {
				const __m512 vi = gpuz_kv_loadn512(gpuz_kv_at(v, (ptrdiff_t)(tb + i) * dh, kind), j, dh - j, kind);
				for (int r = 0; r < nr; r++) a[r] = _mm512_fmadd_ps(_mm512_set1_ps(sc[r][i]), vi, a[r]);
			}
			for (int r = 0; r < nr; r++) _mm512_mask_storeu_ps(acc + r * dh + j, cm, a[r]);
		}
	}
}

// gpuz_kv_task512_f32, _bf16 and _fp16 run gpuz_kv_body512 on a cache of
// each kind (GPUZ_KV_TASK).
GPUZ_KV_TASK(gpuz_kv_task512_f32, gpuz_kv_body512, GPUZ_KV_F32)
GPUZ_KV_TASK(gpuz_kv_task512_bf16, gpuz_kv_body512, GPUZ_KV_BF16)
GPUZ_KV_TASK(gpuz_kv_task512_fp16, gpuz_kv_body512, GPUZ_KV_FP16)

#pragma GCC pop_options

// ------------------------------------------------------------- AVX2 + FMA

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

// gpuz_kv_mask8 is the mask of AVX2's masked loads and stores for the
// first left of 8 lanes.
static inline __m256i gpuz_kv_mask8(int left) {
	const __m256i lane = _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0);
	return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), lane);
}

static inline float gpuz_kv_hsum256(__m256 v) {
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

// gpuz_kv_widen256 widens 8 16-bit values of kind to float32s.
static inline __m256 gpuz_kv_widen256(__m128i h, int kind) {
	if (kind == GPUZ_KV_BF16)
		return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
	return _mm256_cvtph_ps(h);
}

// gpuz_kv_load256 loads elements j … j+7 of a row p of kind as float32s.
static inline __m256 gpuz_kv_load256(const void *p, int j, int kind) {
	if (kind == GPUZ_KV_F32)
		return _mm256_loadu_ps((const float *)p + j);
	return gpuz_kv_widen256(_mm_loadu_si128((const __m128i *)((const unsigned short *)p + j)), kind);
}

// gpuz_kv_loadn256 is gpuz_kv_load256 of the first left elements (at least
// one), the other lanes 0, reading no element past them.
static inline __m256 gpuz_kv_loadn256(const void *p, int j, int left, int kind) {
	if (kind == GPUZ_KV_F32)
		return _mm256_maskload_ps((const float *)p + j, gpuz_kv_mask8(left));
	if (left >= 8)
		return gpuz_kv_load256(p, j, kind);
	unsigned short h[8] = {0};
	memcpy(h, (const unsigned short *)p + j, sizeof(unsigned short) * (size_t)left);
	return gpuz_kv_widen256(_mm_loadu_si128((const __m128i *)h), kind);
}

// gpuz_kv_dot256 is the dot product of a and the row b of kind over dh, in
// 8 lanes.
static inline float gpuz_kv_dot256(const float *a, const void *b, int dh, int kind) {
	__m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
	int j = 0;
	for (; j + 16 <= dh; j += 16) {
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j), gpuz_kv_load256(b, j, kind), s0);
		s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j + 8), gpuz_kv_load256(b, j + 8, kind), s1);
	}
	for (; j < dh; j += 8) {
		const __m256i m = gpuz_kv_mask8(dh - j);
		s0 = _mm256_fmadd_ps(_mm256_maskload_ps(a + j, m), gpuz_kv_loadn256(b, j, dh - j, kind), s0);
	}
	return gpuz_kv_hsum256(_mm256_add_ps(s0, s1));
}

// gpuz_kv_fold256 is gpuz_kv_fold512 on two vectors of scores.
static inline float gpuz_kv_fold256(float *sc, int nk, int n, float *mx, float *l) {
	if (n <= 0) {
		_mm256_storeu_ps(sc, _mm256_setzero_ps());
		_mm256_storeu_ps(sc + 8, _mm256_setzero_ps());
		return 1;
	}
	const int vis = n < nk ? n : nk;
	const __m256 ninf = _mm256_set1_ps(-INFINITY);
	const __m256 m0 = _mm256_castsi256_ps(gpuz_kv_mask8(vis)), m1 = _mm256_castsi256_ps(gpuz_kv_mask8(vis - 8));
	const __m256 s0 = _mm256_blendv_ps(ninf, _mm256_loadu_ps(sc), m0);
	const __m256 s1 = _mm256_blendv_ps(ninf, _mm256_loadu_ps(sc + 8), m1);
	__m256 b = _mm256_max_ps(s0, s1);
	__m128 h = _mm_max_ps(_mm256_castps256_ps128(b), _mm256_extractf128_ps(b, 1));
	h = _mm_max_ps(h, _mm_movehl_ps(h, h));
	h = _mm_max_ss(h, _mm_movehdup_ps(h));
	const float bm = _mm_cvtss_f32(h);
	const float m = bm > *mx ? bm : *mx;
	const float alpha = m == *mx ? 1 : gpuz_exp_scalar(*mx - m);
	const __m256 mv = _mm256_set1_ps(m);
	const __m256 p0 = _mm256_and_ps(m0, gpuz_exp256(_mm256_sub_ps(s0, mv)));
	const __m256 p1 = _mm256_and_ps(m1, gpuz_exp256(_mm256_sub_ps(s1, mv)));
	_mm256_storeu_ps(sc, p0);
	_mm256_storeu_ps(sc + 8, p1);
	*mx = m;
	*l = *l * alpha + gpuz_kv_hsum256(_mm256_add_ps(p0, p1));
	return alpha;
}

// gpuz_kv_body256 is gpuz_kv_body512 with AVX2 vectors.
static inline __attribute__((always_inline)) void gpuz_kv_body256(const float *q, ptrdiff_t ldq, int g, int r0,
                                                                 const int nr, int start, const void *k,
                                                                 const void *v, int t0, int t1, const int dh,
                                                                 float scale, float *acc, float *mx, float *l,
                                                                 const int kind) {
	const float *qr[GPUZ_KV_RB];
	int lim[GPUZ_KV_RB];
	const int most = gpuz_kv_rows(qr, lim, q, ldq, g, r0, r0 + nr, start, dh);
	const int end = t1 < most ? t1 : most;
	for (int r = 0; r < nr; r++) mx[r] = -INFINITY, l[r] = 0;
	memset(acc, 0, sizeof(float) * (size_t)nr * dh);
	float sc[GPUZ_KV_RB][GPUZ_KV_KB] __attribute__((aligned(32)));
	float alpha[GPUZ_KV_RB];
	for (int tb = t0; tb < end; tb += GPUZ_KV_KB) {
		const int nk = end - tb < GPUZ_KV_KB ? end - tb : GPUZ_KV_KB;
		for (int i = 0; i < nk; i++) {
			const void *ki = gpuz_kv_at(k, (ptrdiff_t)(tb + i) * dh, kind);
			for (int r = 0; r < nr; r++) sc[r][i] = scale * gpuz_kv_dot256(qr[r], ki, dh, kind);
		}
		for (int r = 0; r < nr; r++) alpha[r] = gpuz_kv_fold256(sc[r], nk, lim[r] - tb, &mx[r], &l[r]);
		for (int j = 0; j < dh; j += 8) {
			const __m256i cm = gpuz_kv_mask8(dh - j);
			__m256 a[GPUZ_KV_RB];
			for (int r = 0; r < nr; r++)
				a[r] = _mm256_mul_ps(_mm256_maskload_ps(acc + r * dh + j, cm), _mm256_set1_ps(alpha[r]));
			for (int i = 0; i < nk; i++) {
				const __m256 vi = gpuz_kv_loadn256(gpuz_kv_at(v, (ptrdiff_t)(tb + i) * dh, kind), j, dh - j, kind);
				for (int r = 0; r < nr; r++) a[r] = _mm256_fmadd_ps(_mm256_set1_ps(sc[r][i]), vi, a[r]);
			}
			for (int r = 0; r < nr; r++) _mm256_maskstore_ps(acc + r * dh + j, cm, a[r]);
		}
	}
}

// gpuz_kv_task256_f32, _bf16 and _fp16 run gpuz_kv_body256 on a cache of
// each kind (GPUZ_KV_TASK).
GPUZ_KV_TASK(gpuz_kv_task256_f32, gpuz_kv_body256, GPUZ_KV_F32)
GPUZ_KV_TASK(gpuz_kv_task256_bf16, gpuz_kv_body256, GPUZ_KV_BF16)
GPUZ_KV_TASK(gpuz_kv_task256_fp16, gpuz_kv_body256, GPUZ_KV_FP16)

#pragma GCC pop_options

// ------------------------------------------------------------ entry points

// gpuz_kv_attend runs one task (a gpuz_kv_task512 with isa GPUZ_ISA_AVX512,
// a gpuz_kv_task256 with GPUZ_ISA_AVX2, on keys k and values v of kind).
// With out non-NULL the split is the whole cache: the rows' outputs are
// divided by their sums and written to out (the group's first head's
// output of the first new token, ldo the stride of the new tokens), acc,
// mx and l serving as scratch.
static void gpuz_kv_attend(int isa, int kind, const float *q, ptrdiff_t ldq, int g, int r0, int r1, int start,
                           const void *k, const void *v, int t0, int t1, int dh, float scale, float *acc, float *mx,
                           float *l, float *out, ptrdiff_t ldo) {
	GPUZ_FLUSH_SUBNORMALS();
	typedef void task(const float *, ptrdiff_t, int, int, int, int, const void *, const void *, int, int, int, float,
	                  float *, float *, float *);
	static task *const tasks[2][3] = {{gpuz_kv_task256_f32, gpuz_kv_task256_bf16, gpuz_kv_task256_fp16},
	                                  {gpuz_kv_task512_f32, gpuz_kv_task512_bf16, gpuz_kv_task512_fp16}};
	tasks[isa == GPUZ_ISA_AVX512][kind](q, ldq, g, r0, r1, start, k, v, t0, t1, dh, scale, acc, mx, l);
	if (out == NULL)
		return;
	for (int r = r0; r < r1; r++) {
		float *o = out + (ptrdiff_t)(r / g) * ldo + (ptrdiff_t)(r % g) * dh;
		const float *a = acc + (ptrdiff_t)(r - r0) * dh;
		const float inv = 1 / l[r - r0];
		for (int j = 0; j < dh; j++) o[j] = a[j] * inv;
	}
}

// gpuz_kv_merge merges the ns splits' partial outputs of rows r0 … r1−1 of
// a pair of rows rows into out (laid out as gpuz_kv_attend's): split s's
// partial output of row r is at acc[(s·rows + r)·dh], its maximum and sum
// at mx[s·rows + r] and l[s·rows + r]. Each row's output is
// Σ_s e^(m_s − M)·acc_s / Σ_s e^(m_s − M)·l_s for M the largest m_s, the
// splits added in order.
static void gpuz_kv_merge(int ns, int rows, int r0, int r1, int g, int dh, const float *acc, const float *mx,
                          const float *l, float *out, ptrdiff_t ldo) {
	GPUZ_FLUSH_SUBNORMALS();
	for (int r = r0; r < r1; r++) {
		float m = -INFINITY;
		for (int s = 0; s < ns; s++) m = mx[(ptrdiff_t)s * rows + r] > m ? mx[(ptrdiff_t)s * rows + r] : m;
		float *o = out + (ptrdiff_t)(r / g) * ldo + (ptrdiff_t)(r % g) * dh;
		for (int j = 0; j < dh; j++) o[j] = 0;
		float sum = 0;
		for (int s = 0; s < ns; s++) {
			const ptrdiff_t at = (ptrdiff_t)s * rows + r;
			if (mx[at] == -INFINITY)
				continue;
			const float w = gpuz_exp_scalar(mx[at] - m);
			const float *a = acc + at * dh;
			sum += w * l[at];
			for (int j = 0; j < dh; j++) o[j] += w * a[j];
		}
		const float inv = 1 / sum;
		for (int j = 0; j < dh; j++) o[j] *= inv;
	}
}
