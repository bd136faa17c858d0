// Direct stride-1 convolution kernels of package hostmath in C with AVX-512
// intrinsics, for float32 on CPUs that have AVX-512F (gpuz_conv_avx512
// says). They read the input image, C planes of in_h × in_w floats, through
// a ring of padded rows in scratch:
//
//   ring    C channels of P slots of wp floats, wp = out_w + k − 1: input
//           row iy of channel c, padded by pad zeros on the left (ring
//           column j holds input column j − pad, zero outside the plane; a
//           row outside the plane is all zeros), is kept in slot iy mod P.
//
// Each output row (forward) or chunk of output rows (weight gradient)
// copies in the input rows it adds to the ring, once each, and asks the
// memory for the ones the next will add, so rows come from memory while
// others are computed; the kernels read the ring's rows through a table of
// row pointers, from cache, at a stride that does not alias in the caches.
// (Read in place, the planes of a power-of-two image lie a power of two
// apart, the C rows of one position fall in the same cache sets, and the
// forward kernels ran at two thirds of their speed; a whole tile copied
// first, as before, waited on memory for 8% of a training epoch.)
//
// Output channels are taken in blocks of at most 6 (forward) or 5 (weight
// gradient) and output columns in vectors of 16, so that the accumulators
// of a block stay in registers; the forward sums run over c, ky, kx in that
// order and the weight gradient's over rows, then columns, so results are
// reproducible.
#include <immintrin.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "flush.h"

static int gpuz_conv_avx512(void) { return __builtin_cpu_supports("avx512f"); }

#pragma GCC push_options
#pragma GCC target("avx512f,fma")

// GPUZ_UNROLL unrolls a loop over a block's registers early enough that GCC
// keeps the accumulator arrays in registers rather than on the stack.
#define GPUZ_UNROLL _Pragma("GCC unroll 8")

// gpuz_tail_mask selects the first n (< 16, or 16) lanes.
static inline __mmask16 gpuz_tail_mask(int n) {
	return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1);
}

// gpuz_ring_row returns the ring's row for input row iy of channel c: slot
// iy mod P of the channel's P.
static inline float *gpuz_ring_row(float *ring, int P, int wp, int c, int iy) {
	return ring + ((ptrdiff_t)c * P + ((iy % P) + P) % P) * wp;
}

// gpuz_conv_fwd_ring is the ring's floats for the forward kernels.
static size_t gpuz_conv_fwd_ring(int C, int k, int out_w) { return (size_t)C * k * (out_w + k - 1); }

// gpuz_fwd_kernel accumulates OB output channels × V vectors of 16 columns
// starting at column x of one output row; rows[c·k + ky] is the padded input
// row that kernel row ky of channel c reads. The last vector is loaded and
// stored under mask.
static inline __attribute__((always_inline)) void gpuz_fwd_kernel(
    const int OB, const int V, __mmask16 mask, const float *const *rows, int x, int C, int k, const float *w,
    ptrdiff_t wso, const float *bias, float *out, ptrdiff_t oplane) {
	__m512 acc[6][4];
	GPUZ_UNROLL for (int o = 0; o < OB; o++)
		GPUZ_UNROLL for (int v = 0; v < V; v++)
			acc[o][v] = bias ? _mm512_set1_ps(bias[o]) : _mm512_setzero_ps();
	const int kk = k * k;
	for (int c = 0; c < C; c++) {
		const float *wc = w + c * kk;
		for (int ky = 0; ky < k; ky++) {
			const float *row = rows[c * k + ky] + x;
			const float *wr = wc + ky * k;
			for (int kx = 0; kx < k; kx++) {
				__m512 xv[4];
				GPUZ_UNROLL for (int v = 0; v < V; v++)
					xv[v] = v == V - 1 ? _mm512_maskz_loadu_ps(mask, row + kx + 16 * v)
					                   : _mm512_loadu_ps(row + kx + 16 * v);
				GPUZ_UNROLL for (int o = 0; o < OB; o++) {
					__m512 wv = _mm512_set1_ps(wr[o * wso + kx]);
					GPUZ_UNROLL for (int v = 0; v < V; v++)
						acc[o][v] = _mm512_fmadd_ps(wv, xv[v], acc[o][v]);
				}
			}
		}
	}
	GPUZ_UNROLL for (int o = 0; o < OB; o++)
		GPUZ_UNROLL for (int v = 0; v < V; v++) {
			if (v == V - 1)
				_mm512_mask_storeu_ps(out + o * oplane + 16 * v, mask, acc[o][v]);
			else
				_mm512_storeu_ps(out + o * oplane + 16 * v, acc[o][v]);
		}
}

// gpuz_fwd_row computes OB output channels of one output row.
static inline __attribute__((always_inline)) void gpuz_fwd_row(
    const int OB, const float *const *rows, int C, int k, const float *w, ptrdiff_t wso, const float *bias,
    float *out, ptrdiff_t oplane, int out_w) {
	int x = 0;
	for (; x + 64 <= out_w; x += 64)
		gpuz_fwd_kernel(OB, 4, 0xFFFF, rows, x, C, k, w, wso, bias, out + x, oplane);
	for (; x < out_w; x += 16)
		gpuz_fwd_kernel(OB, 1, gpuz_tail_mask(out_w - x), rows, x, C, k, w, wso, bias, out + x, oplane);
}

// gpuz_fwd_obN is gpuz_fwd_row for N output channels, N from 1 to 6.
#define GPUZ_FWD(OB)                                                                                          \
	static void gpuz_fwd_ob##OB(const float *const *rows, int C, int k, const float *w, ptrdiff_t wso,         \
	                            const float *b, float *out, ptrdiff_t op, int ow) {                             \
		gpuz_fwd_row(OB, rows, C, k, w, wso, b, out, op, ow);                                                  \
	}
GPUZ_FWD(1)
GPUZ_FWD(2)
GPUZ_FWD(3)
GPUZ_FWD(4)
GPUZ_FWD(5)
GPUZ_FWD(6)
#undef GPUZ_FWD

// gpuz_ring_fill copies input rows [iy0, iy1) of every channel, padded,
// into their slots of the ring (see the top of this file), and asks the
// memory for rows [iy1, iy1 + ahead).
static void gpuz_ring_fill(float *ring, int P, int wp, const float *in, int C, int in_h, int in_w, int pad, int iy0,
                           int iy1, int ahead) {
	const ptrdiff_t plane = (ptrdiff_t)in_h * in_w;
	// Ring columns [lo, hi) hold input columns [lo − pad, hi − pad).
	int lo = pad < 0 ? 0 : pad > wp ? wp : pad;
	int hi = in_w + pad < wp ? in_w + pad : wp;
	hi = hi < lo ? lo : hi;
	for (int c = 0; c < C; c++) {
		const float *ic = in + c * plane;
		for (int iy = iy0; iy < iy1; iy++) {
			float *dst = gpuz_ring_row(ring, P, wp, c, iy);
			if (iy < 0 || iy >= in_h) {
				memset(dst, 0, sizeof(float) * wp);
				continue;
			}
			memset(dst, 0, sizeof(float) * lo);
			memcpy(dst + lo, ic + (ptrdiff_t)iy * in_w + lo - pad, sizeof(float) * (hi - lo));
			memset(dst + hi, 0, sizeof(float) * (wp - hi));
		}
		for (int iy = iy1 > 0 ? iy1 : 0; iy < iy1 + ahead && iy < in_h; iy++)
			for (int x = 0; x < in_w; x += 16)
				_mm_prefetch((const char *)(ic + (ptrdiff_t)iy * in_w + x), _MM_HINT_T1);
	}
}

// gpuz_ring_rows sets rows[c·n + j] to the ring's row of input row top + j
// of channel c, for j < n.
static void gpuz_ring_rows(const float **rows, float *ring, int P, int wp, int C, int top, int n) {
	for (int c = 0; c < C; c++)
		for (int j = 0; j < n; j++)
			rows[c * n + j] = gpuz_ring_row(ring, P, wp, c, top + j);
}

// gpuz_conv_fwd_rows computes all O output channels of output rows [y0, y0
// + rows) of one image: in is the image's first input plane, out its output
// at row y0 of channel 0 (planes oplane apart); bias may be NULL; ring is
// scratch of gpuz_conv_fwd_ring floats. It returns -1 when it cannot
// allocate its table of rows, else 0.
static int gpuz_conv_fwd_rows(const float *in, int C, int in_h, int in_w, int pad, int y0, int rows,
                              const float *w, int O, int k, const float *bias, float *out, ptrdiff_t oplane,
                              int out_w, float *ring) {
	GPUZ_FLUSH_SUBNORMALS();
	typedef void (*fwd_fn)(const float *const *, int, int, const float *, ptrdiff_t, const float *, float *,
	                       ptrdiff_t, int);
	static const fwd_fn fns[7] = {0, gpuz_fwd_ob1, gpuz_fwd_ob2, gpuz_fwd_ob3,
	                              gpuz_fwd_ob4, gpuz_fwd_ob5, gpuz_fwd_ob6};
	const float **table = malloc(sizeof(*table) * (size_t)C * k);
	if (table == NULL)
		return -1;
	const int wp = out_w + k - 1, P = k;
	const ptrdiff_t wso = (ptrdiff_t)C * k * k;
	const int blocks = (O + 5) / 6, per = (O + blocks - 1) / blocks;
	// Row by row, every channel block in turn: the k input rows per channel
	// that one output row reads stay in cache across the blocks.
	int filled = y0 - pad;
	for (int r = 0; r < rows; r++) {
		const int top = y0 + r - pad; // the input row of kernel row 0
		gpuz_ring_fill(ring, P, wp, in, C, in_h, in_w, pad, filled > top ? filled : top, top + k, 1);
		filled = top + k;
		gpuz_ring_rows(table, ring, P, wp, C, top, k);
		for (int o0 = 0; o0 < O; o0 += per) {
			int ob = O - o0 < per ? O - o0 : per;
			fns[ob](table, C, k, w + o0 * wso, wso, bias ? bias + o0 : NULL, out + o0 * oplane + (ptrdiff_t)r * out_w,
			        oplane, out_w);
		}
	}
	free(table);
	return 0;
}

// gpuz_wgrad_kernel adds, for OB output channels, one input channel, one
// kernel row and KX kernel columns, the products of the output gradient
// with the shifted input over rows rows to the 16-lane partial sums at
// acc[o·acc_o + 16·j]; in[r] + kx0 is row r's padded input at the first
// kernel column.
static inline __attribute__((always_inline)) void gpuz_wgrad_kernel(
    const int OB, const int KX, const float *const *in, int kx0, const float *g, ptrdiff_t gplane, int rows,
    int out_w, float *acc, ptrdiff_t acc_o) {
	__m512 a[5][5];
	GPUZ_UNROLL for (int o = 0; o < OB; o++)
		GPUZ_UNROLL for (int j = 0; j < KX; j++)
			a[o][j] = _mm512_loadu_ps(acc + o * acc_o + 16 * j);
	for (int r = 0; r < rows; r++) {
		const float *ir = in[r] + kx0;
		const float *gr = g + r * out_w;
		// Whole vectors load unmasked: a masked load takes a slot of the
		// ports that run the multiply-adds, and with as many loads as
		// multiply-adds here the kernel ran at two thirds of its speed.
		int x = 0;
		for (; x + 16 <= out_w; x += 16) {
			__m512 gv[5];
			GPUZ_UNROLL for (int o = 0; o < OB; o++)
				gv[o] = _mm512_loadu_ps(gr + o * gplane + x);
			GPUZ_UNROLL for (int j = 0; j < KX; j++) {
				__m512 iv = _mm512_loadu_ps(ir + x + j);
				GPUZ_UNROLL for (int o = 0; o < OB; o++)
					a[o][j] = _mm512_fmadd_ps(gv[o], iv, a[o][j]);
			}
		}
		if (x < out_w) {
			__mmask16 m = gpuz_tail_mask(out_w - x);
			__m512 gv[5];
			GPUZ_UNROLL for (int o = 0; o < OB; o++)
				gv[o] = _mm512_maskz_loadu_ps(m, gr + o * gplane + x);
			GPUZ_UNROLL for (int j = 0; j < KX; j++) {
				__m512 iv = _mm512_maskz_loadu_ps(m, ir + x + j);
				GPUZ_UNROLL for (int o = 0; o < OB; o++)
					a[o][j] = _mm512_fmadd_ps(gv[o], iv, a[o][j]);
			}
		}
	}
	GPUZ_UNROLL for (int o = 0; o < OB; o++)
		GPUZ_UNROLL for (int j = 0; j < KX; j++) {
			_mm512_storeu_ps(acc + o * acc_o + 16 * j, a[o][j]);
		}
}

#define GPUZ_WG(OB, KX)                                                                                     \
	static void gpuz_wg_##OB##_##KX(const float *const *in, int kx0, const float *g, ptrdiff_t gplane,      \
	                                int rows, int out_w, float *acc, ptrdiff_t acc_o) {                     \
		gpuz_wgrad_kernel(OB, KX, in, kx0, g, gplane, rows, out_w, acc, acc_o);                             \
	}
#define GPUZ_WG_ROW(OB) GPUZ_WG(OB, 1) GPUZ_WG(OB, 2) GPUZ_WG(OB, 3) GPUZ_WG(OB, 4) GPUZ_WG(OB, 5)
GPUZ_WG_ROW(1)
GPUZ_WG_ROW(2)
GPUZ_WG_ROW(3)
GPUZ_WG_ROW(4)
GPUZ_WG_ROW(5)
#undef GPUZ_WG_ROW
#undef GPUZ_WG

// GPUZ_WG_CHUNK_BYTES bounds the output gradient that a block of output
// channels reads over one chunk of rows, so that it stays in the level-1
// cache while every input channel and kernel tap passes over it.
#define GPUZ_WG_CHUNK_BYTES (24 << 10)

// gpuz_wgrad_per is the output channels of a block of the weight gradient.
static int gpuz_wgrad_per(int O) {
	const int blocks = (O + 4) / 5;
	return (O + blocks - 1) / blocks;
}

// gpuz_wgrad_rows_per_chunk is the rows of the weight gradient's chunks for
// out_w columns and tiles of at most rows rows: as many as keep a block's
// gradient within GPUZ_WG_CHUNK_BYTES, at least one, and no more than a
// tile holds, so that the ring holds no more rows than a tile reads.
static int gpuz_wgrad_rows_per_chunk(int O, int out_w, int rows) {
	int chunk = GPUZ_WG_CHUNK_BYTES / (gpuz_wgrad_per(O) * (out_w > 0 ? out_w : 1) * (int)sizeof(float));
	chunk = chunk < rows ? chunk : rows;
	return chunk < 1 ? 1 : chunk;
}

// gpuz_conv_wgrad_ring is the ring's floats for the weight gradient of
// tiles of at most rows rows.
static size_t gpuz_conv_wgrad_ring(int C, int O, int k, int out_w, int rows) {
	const int P = gpuz_wgrad_rows_per_chunk(O, out_w, rows) + k - 1;
	return (size_t)C * P * (out_w + k - 1);
}

// gpuz_conv_wgrad_rows stores the contribution of output rows [y0, y0 +
// rows) of one image to the weight gradient of all O output channels as
// 16-lane partial sums in acc, which holds O·C·k·k vectors: in is the
// image's first input plane, g its output gradient at row y0 of channel 0
// (planes gplane apart), ring scratch of gpuz_conv_wgrad_ring(C, O, k,
// out_w, max_rows) floats for a max_rows ≥ rows. The rows are taken in
// chunks whose gradient stays in cache; each lane's sum runs over the rows
// in order, then the columns, whatever the chunks. It returns -1 when it
// cannot allocate its table of rows, else 0.
static int gpuz_conv_wgrad_rows(const float *in, int C, int in_h, int in_w, int pad, int y0, int rows,
                                const float *g, ptrdiff_t gplane, int O, int k, int out_w, float *acc,
                                float *ring, int max_rows) {
	GPUZ_FLUSH_SUBNORMALS();
	typedef void (*wg_fn)(const float *const *, int, const float *, ptrdiff_t, int, int, float *, ptrdiff_t);
#define GPUZ_WG_NAMES(OB) gpuz_wg_##OB##_1, gpuz_wg_##OB##_2, gpuz_wg_##OB##_3, gpuz_wg_##OB##_4, gpuz_wg_##OB##_5
	static const wg_fn fns[5][5] = {{GPUZ_WG_NAMES(1)}, {GPUZ_WG_NAMES(2)}, {GPUZ_WG_NAMES(3)},
	                                {GPUZ_WG_NAMES(4)}, {GPUZ_WG_NAMES(5)}};
#undef GPUZ_WG_NAMES
	// At most 5 channels × 5 columns of accumulators, 5 gradient vectors and
	// one input vector: 31 of the 32 vector registers.
	const int per = gpuz_wgrad_per(O), chunk = gpuz_wgrad_rows_per_chunk(O, out_w, max_rows);
	const int wp = out_w + k - 1, P = chunk + k - 1;
	const float **table = malloc(sizeof(*table) * (size_t)C * P);
	if (table == NULL)
		return -1;
	const ptrdiff_t acc_o = (ptrdiff_t)C * k * k * 16;
	memset(acc, 0, sizeof(float) * (size_t)O * acc_o);
	int filled = y0 - pad;
	for (int r0 = 0; r0 < rows; r0 += chunk) {
		const int r1 = rows - r0 < chunk ? rows : r0 + chunk;
		// Output rows [r0, r1) read input rows [top, end).
		const int top = y0 + r0 - pad, end = y0 + r1 - 1 + k - pad;
		gpuz_ring_fill(ring, P, wp, in, C, in_h, in_w, pad, filled > top ? filled : top, end, chunk);
		filled = end;
		gpuz_ring_rows(table, ring, P, wp, C, top, P);
		const int next = rows - r1 < chunk ? rows - r1 : chunk;
		for (int o = 0; o < O; o++)
			for (int x = 0; x < next * out_w; x += 16)
				_mm_prefetch((const char *)(g + o * gplane + (ptrdiff_t)r1 * out_w + x), _MM_HINT_T1);
		for (int o0 = 0; o0 < O; o0 += per) {
			const int ob = O - o0 < per ? O - o0 : per;
			for (int c = 0; c < C; c++)
				for (int ky = 0; ky < k; ky++)
					for (int kx0 = 0; kx0 < k; kx0 += 5) {
						int kx = k - kx0 < 5 ? k - kx0 : 5;
						fns[ob - 1][kx - 1](table + c * P + ky, kx0, g + o0 * gplane + (ptrdiff_t)r0 * out_w,
						                    gplane, r1 - r0, out_w, acc + o0 * acc_o + ((c * k + ky) * k + kx0) * 16,
						                    acc_o);
					}
		}
	}
	free(table);
	return 0;
}

#pragma GCC pop_options
