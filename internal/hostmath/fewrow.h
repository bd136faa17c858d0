// The few-row product y = x·Wᵀ of package hostmath in C with AVX-512
// intrinsics, for float32 on CPUs that have AVX-512F (gpuz_fewrow_avx512
// says): x is m × k with m at most 32 (a batch of a linear layer), W is
// n × k row-major (PyTorch's nn.Linear weight, out × in) and y is m × n.
//
// Why by hand: a BLAS sized for large products packs both operands into
// its own layout at every call, and with 30 rows against a 2000 × 2000
// weight that packing and its thread split cost as much as the product
// (OpenBLAS reaches about a quarter of the FMA peak there), and oneDNN 2.6's
// matmul (Debian's libdnnl, its AVX-512 brgemm, the weight blocked once in
// its own layout) took 1.33 ms a product where this kernel takes 0.95 ms
// (m = 30, 2 threads, best of 300), so it would be a dependency that does
// not pay. This kernel reads W once, where it lies, as broadcast scalars,
// so each weight element costs one load, and holds x transposed and padded
// (xt[kk][r], 16 or 32 lanes, packed by gpuz_fewrow_pack: m·k elements,
// which stay in L2) as the vector operand:
//
//   acc[j][v] += broadcast(W[j][kk]) · xt[kk][16v .. 16v+15]
//
// J = 14 rows of W by V = 2 vectors of rows of x: 28 accumulators, two x
// vectors and one broadcast in the 32 registers, 28 FMAs per 16 loads. Each
// accumulator holds one column of y (16 rows), scattered into y once the
// whole k is summed, so the sums run over kk in order and results are
// reproducible. The 14 rows of W are 14 sequential streams, which the
// hardware prefetchers follow: software prefetching ahead of them was
// measured and did not pay.
#include <immintrin.h>
#include <stddef.h>

#include "flush.h"

static int gpuz_fewrow_avx512(void) { return __builtin_cpu_supports("avx512f"); }

#pragma GCC push_options
#pragma GCC target("avx512f,fma")

// GPUZ_FR_UNROLL unrolls a loop over a block's registers early enough that
// GCC keeps the accumulator arrays in registers rather than on the stack.
#define GPUZ_FR_UNROLL _Pragma("GCC unroll 16")

// GPUZ_FR_J is the most rows of W one block holds.
#define GPUZ_FR_J 14

// gpuz_fewrow_pack writes xt[kk·lanes + r] = x[r·ldx + kk] for r < m and
// zero for m ≤ r < lanes, kk < k.
static void gpuz_fewrow_pack(const float *x, int m, int k, ptrdiff_t ldx, float *xt, int lanes) {
	for (int kk = 0; kk < k; kk++) {
		float *dst = xt + (ptrdiff_t)kk * lanes;
		for (int r = 0; r < m; r++)
			dst[r] = x[r * ldx + kk];
		for (int r = m; r < lanes; r++)
			dst[r] = 0;
	}
}

// gpuz_fewrow_block computes J columns of y, from W's rows w[0 .. J−1], for
// the m ≤ 16·V rows of x packed in xt.
static inline __attribute__((always_inline)) void gpuz_fewrow_block(
    const int V, const int J, const float *xt, int k, const float *w, ptrdiff_t ldw, float *y, ptrdiff_t ldy,
    int m) {
	__m512 acc[GPUZ_FR_J][2];
	GPUZ_FR_UNROLL for (int j = 0; j < J; j++)
		GPUZ_FR_UNROLL for (int v = 0; v < V; v++)
			acc[j][v] = _mm512_setzero_ps();
	for (int kk = 0; kk < k; kk++) {
		const float *xk = xt + (ptrdiff_t)kk * 16 * V;
		__m512 x0 = _mm512_load_ps(xk), x1 = V > 1 ? _mm512_load_ps(xk + 16) : x0;
		GPUZ_FR_UNROLL for (int j = 0; j < J; j++) {
			__m512 b = _mm512_set1_ps(w[j * ldw + kk]);
			acc[j][0] = _mm512_fmadd_ps(b, x0, acc[j][0]);
			if (V > 1)
				acc[j][1] = _mm512_fmadd_ps(b, x1, acc[j][1]);
		}
	}
	// Lane r of acc[j][v] is y[16v + r][j].
	const __m512i rows = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
	                                        _mm512_set1_epi32((int)ldy));
	GPUZ_FR_UNROLL for (int v = 0; v < V; v++) {
		int left = m - 16 * v;
		__mmask16 mask = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
		GPUZ_FR_UNROLL for (int j = 0; j < J; j++)
			_mm512_mask_i32scatter_ps(y + 16 * v * ldy + j, mask, rows, acc[j][v], 4);
	}
}

// gpuz_fr_V_J is gpuz_fewrow_block for V vectors and J rows of W.
#define GPUZ_FR(V, J)                                                                                         \
	static void gpuz_fr_##V##_##J(const float *xt, int k, const float *w, ptrdiff_t ldw, float *y, ptrdiff_t ldy, \
	                              int m) {                                                                 \
		gpuz_fewrow_block(V, J, xt, k, w, ldw, y, ldy, m);                                                    \
	}
#define GPUZ_FR_V(V)                                                                                          \
	GPUZ_FR(V, 1) GPUZ_FR(V, 2) GPUZ_FR(V, 3) GPUZ_FR(V, 4) GPUZ_FR(V, 5) GPUZ_FR(V, 6) GPUZ_FR(V, 7)          \
	GPUZ_FR(V, 8) GPUZ_FR(V, 9) GPUZ_FR(V, 10) GPUZ_FR(V, 11) GPUZ_FR(V, 12) GPUZ_FR(V, 13) GPUZ_FR(V, 14)
GPUZ_FR_V(1)
GPUZ_FR_V(2)
#undef GPUZ_FR_V
#undef GPUZ_FR

// gpuz_fewrow_nt computes columns [j0, j1) of y = x·Wᵀ for the m ≤ 16·V
// rows of x packed in xt (lanes = 16·V). ldy·16 must fit an int (the
// scatter's indices).
static void gpuz_fewrow_nt(const float *xt, int V, int m, int k, const float *w, ptrdiff_t ldw, int j0, int j1,
                           float *y, ptrdiff_t ldy) {
	GPUZ_FLUSH_SUBNORMALS();
	typedef void (*fr_fn)(const float *, int, const float *, ptrdiff_t, float *, ptrdiff_t, int);
#define GPUZ_FR_NAMES(V)                                                                                      \
	gpuz_fr_##V##_1, gpuz_fr_##V##_2, gpuz_fr_##V##_3, gpuz_fr_##V##_4, gpuz_fr_##V##_5, gpuz_fr_##V##_6,     \
	    gpuz_fr_##V##_7, gpuz_fr_##V##_8, gpuz_fr_##V##_9, gpuz_fr_##V##_10, gpuz_fr_##V##_11,                \
	    gpuz_fr_##V##_12, gpuz_fr_##V##_13, gpuz_fr_##V##_14
	static const fr_fn fns[2][GPUZ_FR_J] = {{GPUZ_FR_NAMES(1)}, {GPUZ_FR_NAMES(2)}};
#undef GPUZ_FR_NAMES
	for (int j = j0; j < j1; j += GPUZ_FR_J) {
		int jb = j1 - j < GPUZ_FR_J ? j1 - j : GPUZ_FR_J;
		fns[V - 1][jb - 1](xt, k, w + j * ldw, ldw, y + j, ldy, m);
	}
}

// gpuz_fewrow_dot computes columns [j0, j1) of y = x·Wᵀ for m ≤ 4 rows of
// x (row-major, k apart) as dot products along k: each block takes 4 rows
// of W, reads each once, 16 elements a load, and keeps the 4·m sums in
// 16-lane accumulators added up at the end (lane i holds the terms
// kk ≡ i mod 16, in order), so that a weight element costs 1/16 of a load
// where the broadcast kernel above spends one, and one or four rows read W
// at the memory's pace. The order of each sum is fixed: results do not
// depend on the threads.
static void gpuz_fewrow_dot(const float *x, int m, int k, const float *w, ptrdiff_t ldw, int j0, int j1, float *y,
                            ptrdiff_t ldy) {
	GPUZ_FLUSH_SUBNORMALS();
	const __mmask16 tail = (__mmask16)((1u << (k % 16)) - 1);
	const int kv = k - k % 16;
	for (int j = j0; j < j1; j += 4) {
		const int jb = j1 - j < 4 ? j1 - j : 4;
		const float *wr[4];
		GPUZ_FR_UNROLL for (int b = 0; b < 4; b++) wr[b] = w + (ptrdiff_t)(j + (b < jb ? b : 0)) * ldw;
		__m512 acc[4][4];
		GPUZ_FR_UNROLL for (int b = 0; b < 4; b++)
			GPUZ_FR_UNROLL for (int r = 0; r < 4; r++) acc[b][r] = _mm512_setzero_ps();
		for (int kk = 0; kk < kv; kk += 16) {
			__m512 xr[4];
			GPUZ_FR_UNROLL for (int r = 0; r < 4; r++) xr[r] = _mm512_loadu_ps(x + (ptrdiff_t)(r < m ? r : 0) * k + kk);
			GPUZ_FR_UNROLL for (int b = 0; b < 4; b++) {
				const __m512 wb = _mm512_loadu_ps(wr[b] + kk);
				GPUZ_FR_UNROLL for (int r = 0; r < 4; r++) if (r < m) acc[b][r] = _mm512_fmadd_ps(wb, xr[r], acc[b][r]);
			}
		}
		if (tail) {
			__m512 xr[4];
			GPUZ_FR_UNROLL for (int r = 0; r < 4; r++)
				xr[r] = _mm512_maskz_loadu_ps(tail, x + (ptrdiff_t)(r < m ? r : 0) * k + kv);
			GPUZ_FR_UNROLL for (int b = 0; b < 4; b++) {
				const __m512 wb = _mm512_maskz_loadu_ps(tail, wr[b] + kv);
				GPUZ_FR_UNROLL for (int r = 0; r < 4; r++) if (r < m) acc[b][r] = _mm512_fmadd_ps(wb, xr[r], acc[b][r]);
			}
		}
		for (int r = 0; r < m; r++)
			for (int b = 0; b < jb; b++) y[r * ldy + j + b] = _mm512_reduce_add_ps(acc[b][r]);
	}
}

#pragma GCC pop_options
