// Direct stride-1 convolution kernels of package hostmath in C with AVX-512
// intrinsics, for float32 on CPUs that have AVX-512F (gpuz_conv_avx512
// says). The Go side copies a tile of whole output rows' input, padded, into
// scratch; these kernels compute that tile:
//
//   tile    C planes of rows_in × wp floats, rows_in = rows + k − 1 and
//           wp = out_w + k − 1; tile[c][r][j] is the input at row y0 + r − pad
//           and column j − pad (zero outside the input).
//   out     out[o·oplane + r·out_w + x] for the tile's rows r < rows.
//
// Output channels are taken in blocks of at most 6 and output columns in
// vectors of 16, so that the accumulators of a block stay in registers; the
// sums run over c, ky, kx in that order, so results are reproducible.
#include <immintrin.h>
#include <stddef.h>

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

// gpuz_fwd_kernel accumulates OB output channels × V vectors of 16 columns
// starting at column x of one output row. The last vector is loaded and
// stored under mask.
static inline __attribute__((always_inline)) void gpuz_fwd_kernel(
    const int OB, const int V, __mmask16 mask, const float *in, int C, int k, int wp, ptrdiff_t plane_in,
    const float *w, ptrdiff_t wso, const float *bias, float *out, ptrdiff_t oplane) {
	__m512 acc[6][4];
	GPUZ_UNROLL for (int o = 0; o < OB; o++)
		GPUZ_UNROLL for (int v = 0; v < V; v++)
			acc[o][v] = bias ? _mm512_set1_ps(bias[o]) : _mm512_setzero_ps();
	const int kk = k * k;
	for (int c = 0; c < C; c++) {
		const float *ic = in + c * plane_in;
		const float *wc = w + c * kk;
		for (int ky = 0; ky < k; ky++) {
			const float *row = ic + ky * wp;
			const float *wr = wc + ky * k;
			for (int kx = 0; kx < k; kx++) {
				__m512 x[4];
				GPUZ_UNROLL for (int v = 0; v < V; v++)
					x[v] = v == V - 1 ? _mm512_maskz_loadu_ps(mask, row + kx + 16 * v)
					                  : _mm512_loadu_ps(row + kx + 16 * v);
				GPUZ_UNROLL for (int o = 0; o < OB; o++) {
					__m512 wv = _mm512_set1_ps(wr[o * wso + kx]);
					GPUZ_UNROLL for (int v = 0; v < V; v++)
						acc[o][v] = _mm512_fmadd_ps(wv, x[v], acc[o][v]);
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

// gpuz_fwd_rows computes OB output channels of the tile's rows.
static inline __attribute__((always_inline)) void gpuz_fwd_rows(
    const int OB, const float *tile, int C, int k, int wp, ptrdiff_t plane_in, const float *w,
    ptrdiff_t wso, const float *bias, float *out, ptrdiff_t oplane, int rows, int out_w) {
	for (int r = 0; r < rows; r++) {
		const float *in = tile + r * wp;
		float *o = out + r * out_w;
		int x = 0;
		for (; x + 64 <= out_w; x += 64)
			gpuz_fwd_kernel(OB, 4, 0xFFFF, in + x, C, k, wp, plane_in, w, wso, bias, o + x, oplane);
		for (; x < out_w; x += 16)
			gpuz_fwd_kernel(OB, 1, gpuz_tail_mask(out_w - x), in + x, C, k, wp, plane_in, w, wso, bias, o + x, oplane);
	}
}

// gpuz_fwd_obN is gpuz_fwd_rows for N output channels, N from 1 to 6.
#define GPUZ_FWD(OB)                                                                                          \
	static void gpuz_fwd_ob##OB(const float *t, int C, int k, int wp, ptrdiff_t pi, const float *w, ptrdiff_t wso, \
	                            const float *b, float *out, ptrdiff_t op, int rows, int ow) {                   \
		gpuz_fwd_rows(OB, t, C, k, wp, pi, w, wso, b, out, op, rows, ow);                                       \
	}
GPUZ_FWD(1)
GPUZ_FWD(2)
GPUZ_FWD(3)
GPUZ_FWD(4)
GPUZ_FWD(5)
GPUZ_FWD(6)
#undef GPUZ_FWD

// gpuz_conv_fwd_tile computes all O output channels of a tile; bias may be
// NULL.
static void gpuz_conv_fwd_tile(const float *tile, int C, int wp, int rows_in, const float *w, int O, int k,
                               const float *bias, float *out, ptrdiff_t oplane, int rows, int out_w) {
	GPUZ_FLUSH_SUBNORMALS();
	typedef void (*fwd_fn)(const float *, int, int, int, ptrdiff_t, const float *, ptrdiff_t, const float *,
	                       float *, ptrdiff_t, int, int);
	static const fwd_fn fns[7] = {0, gpuz_fwd_ob1, gpuz_fwd_ob2, gpuz_fwd_ob3,
	                              gpuz_fwd_ob4, gpuz_fwd_ob5, gpuz_fwd_ob6};
	const ptrdiff_t plane_in = (ptrdiff_t)rows_in * wp, wso = (ptrdiff_t)C * k * k;
	const int blocks = (O + 5) / 6, per = (O + blocks - 1) / blocks;
	// Row by row, every channel block in turn: the k input rows per channel
	// that one output row reads stay in cache across the blocks.
	for (int r = 0; r < rows; r++)
		for (int o0 = 0; o0 < O; o0 += per) {
			int ob = O - o0 < per ? O - o0 : per;
			fns[ob](tile + (ptrdiff_t)r * wp, C, k, wp, plane_in, w + o0 * wso, wso, bias ? bias + o0 : NULL,
			        out + o0 * oplane + (ptrdiff_t)r * out_w, oplane, 1, out_w);
		}
}

// gpuz_wgrad_kernel sums, for OB output channels, one input channel, one
// kernel row ky and KX kernel columns from kx0, the products of the output
// gradient with the shifted input over the tile, and stores the 16-lane
// partial sums in acc[((o·C + c)·k + ky)·k + kx][16].
static inline __attribute__((always_inline)) void gpuz_wgrad_kernel(
    const int OB, const int KX, const float *in, int wp, const float *g, ptrdiff_t gplane, int rows, int out_w,
    float *acc, ptrdiff_t acc_o) {
	__m512 a[5][5];
	GPUZ_UNROLL for (int o = 0; o < OB; o++)
		GPUZ_UNROLL for (int j = 0; j < KX; j++)
			a[o][j] = _mm512_setzero_ps();
	for (int r = 0; r < rows; r++) {
		const float *ir = in + r * wp;
		const float *gr = g + r * out_w;
		for (int x = 0; x < out_w; x += 16) {
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
	static void gpuz_wg_##OB##_##KX(const float *in, int wp, const float *g, ptrdiff_t gplane, int rows,    \
	                                int out_w, float *acc, ptrdiff_t acc_o) {                               \
		gpuz_wgrad_kernel(OB, KX, in, wp, g, gplane, rows, out_w, acc, acc_o);                              \
	}
#define GPUZ_WG_ROW(OB) GPUZ_WG(OB, 1) GPUZ_WG(OB, 2) GPUZ_WG(OB, 3) GPUZ_WG(OB, 4) GPUZ_WG(OB, 5)
GPUZ_WG_ROW(1)
GPUZ_WG_ROW(2)
GPUZ_WG_ROW(3)
GPUZ_WG_ROW(4)
GPUZ_WG_ROW(5)
#undef GPUZ_WG_ROW
#undef GPUZ_WG

// gpuz_conv_wgrad_tile stores the tile's contribution to the weight
// gradient of all O output channels as 16-lane partial sums in acc, which
// holds O·C·k·k vectors, each written once.
static void gpuz_conv_wgrad_tile(const float *tile, int C, int wp, int rows_in, const float *g, ptrdiff_t gplane,
                                 int O, int k, int rows, int out_w, float *acc) {
	GPUZ_FLUSH_SUBNORMALS();
	typedef void (*wg_fn)(const float *, int, const float *, ptrdiff_t, int, int, float *, ptrdiff_t);
#define GPUZ_WG_NAMES(OB) gpuz_wg_##OB##_1, gpuz_wg_##OB##_2, gpuz_wg_##OB##_3, gpuz_wg_##OB##_4, gpuz_wg_##OB##_5
	static const wg_fn fns[5][5] = {{GPUZ_WG_NAMES(1)}, {GPUZ_WG_NAMES(2)}, {GPUZ_WG_NAMES(3)},
	                                {GPUZ_WG_NAMES(4)}, {GPUZ_WG_NAMES(5)}};
#undef GPUZ_WG_NAMES
	const ptrdiff_t plane_in = (ptrdiff_t)rows_in * wp, acc_o = (ptrdiff_t)C * k * k * 16;
	// At most 5 channels × 5 columns of accumulators, 5 gradient vectors and
	// one input vector: 31 of the 32 vector registers.
	const int blocks = (O + 4) / 5, per = (O + blocks - 1) / blocks;
	for (int o0 = 0; o0 < O; o0 += per) {
		int ob = O - o0 < per ? O - o0 : per;
		for (int c = 0; c < C; c++)
			for (int ky = 0; ky < k; ky++)
				for (int kx0 = 0; kx0 < k; kx0 += 5) {
					int kx = k - kx0 < 5 ? k - kx0 : 5;
					fns[ob - 1][kx - 1](tile + c * plane_in + ky * wp + kx0, wp, g + o0 * gplane, gplane, rows,
					                    out_w, acc + o0 * acc_o + ((c * k + ky) * k + kx0) * 16, acc_o);
				}
	}
}

#pragma GCC pop_options
