// The forward convolution of package hostmath for 5 × 5 kernels in C with
// AVX-512 intrinsics, by Winograd's minimal filtering along the rows,
// F(2, 5): each pair of adjacent outputs of a row,
//
//   y0 = Σ_kx g[kx]·d[kx],  y1 = Σ_kx g[kx]·d[kx+1]   (d: 6 inputs, g: 5 weights)
//
// is Aᵀ·((G·g) ⊙ (Bᵀ·d)): 6 products in place of 10, with
//
//   Bᵀ·d = (4d0 − 5d2 + d4,  −4d1 − 4d2 + d3 + d4,  4d1 − 4d2 − d3 + d4,
//           −2d1 − d2 + 2d3 + d4,  2d1 − d2 − 2d3 + d4,  4d1 − 5d3 + d5),
//   G·g  = (g0/4,  −(g0+g1+g2+g3+g4)/6,  −(g0−g1+g2−g3+g4)/6,
//           (g0 + 2g1 + 4g2 + 8g3 + 16g4)/24,  (g0 − 2g1 + 4g2 − 8g3 + 16g4)/24,  g4),
//   Aᵀ·m = (m0 + m1 + m2 + m3 + m4,  m1 − m2 + 2m3 − 2m4 + m5)
//
// (the points 0, 1, −1, 2, −2 and ∞). The transform is linear, so the sums
// over input channels and kernel rows run on the transformed values and Aᵀ
// is applied once per output pair: 5·6 multiply-adds per pair, channel and
// output channel, against the direct kernels' 5·10 (conv.h).
//
// As in conv.h, each output row copies in the input rows it adds, here
// transformed, into a ring in scratch:
//
//   ring    C channels of 5 slots of tv·96 floats, tv = ⌈⌈out_w/2⌉/16⌉:
//           input row iy of channel c, padded by pad zeros on the left,
//           transformed, in slot iy mod 5; its tiles of 16 output pairs
//           in turn, each its 6 transformed vectors of 16 lanes (lane l
//           the pair l of the tile).
//
// Each tile of 16 output pairs runs every block of up to 5 output channels
// in turn while its transformed input stays in cache; a block's 30
// accumulators stay in registers. Each output's sum runs over c, then ky,
// in that order for every component, and the weights are transformed in
// float64 and rounded once, so results are reproducible.
#include <immintrin.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "flush.h"

// GPUZ_WINO_OB is the most output channels a block holds in registers:
// 6 accumulators each.
#define GPUZ_WINO_OB 5

// GPUZ_WINO_CHUNK is the most input channels a tile runs at a time: their
// transformed rows, 5 · 6 vectors each (1920 bytes), and the weights of
// all the blocks for them stay in L1 while every block runs.
#ifndef GPUZ_WINO_CHUNK
#define GPUZ_WINO_CHUNK 12
#endif

static int gpuz_wino_avx512(void) { return __builtin_cpu_supports("avx512f"); }

// gpuz_wino_tiles is the number of tiles of 16 output pairs of a row of
// out_w outputs.
static inline int gpuz_wino_tiles(int out_w) { return ((out_w + 1) / 2 + 15) / 16; }

// gpuz_wino_ring is the scratch, in floats, of gpuz_wino_rows: the ring of
// transformed rows and the partial sums of a tile (6 vectors per output
// channel).
static size_t gpuz_wino_ring(int C, int O, int out_w) {
	return ((size_t)C * 5 * gpuz_wino_tiles(out_w) + O) * 96;
}

// gpuz_wino_block is how many output channels a block of O holds: the
// blocks of at most GPUZ_WINO_OB as even as they go, the last one smaller.
static inline int gpuz_wino_block(int O) {
	const int blocks = (O + GPUZ_WINO_OB - 1) / GPUZ_WINO_OB;
	return (O + blocks - 1) / blocks;
}

// gpuz_wino_weights transforms w [O][C][5][5] into wt, a block of output
// channels at a time (gpuz_wino_block): the block of ob channels from o0
// at wt + o0·C·30, the component j of kernel row ky of channel c for its
// channel o at ((c·5 + ky)·6 + j)·ob + o in it, so that the kernel reads
// each block's weights in turn at offsets it knows when compiled.
static void gpuz_wino_weights(const float *w, int O, int C, float *wt) {
	const int per = gpuz_wino_block(O);
	for (int o = 0; o < O; o++)
		for (int c = 0; c < C; c++)
			for (int ky = 0; ky < 5; ky++) {
				const float *g = w + (((ptrdiff_t)o * C + c) * 5 + ky) * 5;
				const double g0 = g[0], g1 = g[1], g2 = g[2], g3 = g[3], g4 = g[4];
				const double v[6] = {
				    g0 / 4,
				    -(g0 + g1 + g2 + g3 + g4) / 6,
				    -(g0 - g1 + g2 - g3 + g4) / 6,
				    (g0 + 2 * g1 + 4 * g2 + 8 * g3 + 16 * g4) / 24,
				    (g0 - 2 * g1 + 4 * g2 - 8 * g3 + 16 * g4) / 24,
				    g4,
				};
				const int o0 = o / per * per, ob = O - o0 < per ? O - o0 : per;
				for (int j = 0; j < 6; j++)
					wt[(ptrdiff_t)o0 * C * 30 + (((ptrdiff_t)c * 5 + ky) * 6 + j) * ob + o - o0] = (float)v[j];
			}
}

#pragma GCC push_options
#pragma GCC target("avx512f,fma")

#define GPUZ_WINO_UNROLL _Pragma("GCC unroll 8")

// gpuz_wino_mask selects the first n lanes (none for n ≤ 0, all for n ≥ 16).
static inline __mmask16 gpuz_wino_mask(int n) {
	return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

// gpuz_wino_fill transforms input row src (in_w floats; NULL for a row
// outside the plane), padded by pad zeros on the left, into dst, the row's
// tv·96 floats of the ring.
static void gpuz_wino_fill(float *dst, const float *src, int in_w, int pad, int tv) {
	if (src == NULL) {
		memset(dst, 0, sizeof(float) * 96 * (size_t)tv);
		return;
	}
	// Lane l of the tile from output column x0 reads input column x0 − pad
	// + 2l + i, i < 6: the even and odd lanes of the 32 floats from x0 −
	// pad, x0 − pad + 2 and x0 − pad + 4. A tile that reads past the row's
	// ends reads a copy with zeros there.
	const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
	const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
	const __m512 two = _mm512_set1_ps(2), four = _mm512_set1_ps(4), five = _mm512_set1_ps(5);
	float edge[36];
	for (int t = 0; t < tv; t++) {
		const int x = 32 * t - pad;
		const float *p = src + x;
		if (x < 0 || x + 36 > in_w) {
			const int lo = x < 0 ? -x : 0, hi = in_w - x < 36 ? in_w - x : 36;
			memset(edge, 0, sizeof(edge));
			if (hi > lo)
				memcpy(edge + lo, src + x + lo, sizeof(float) * (hi - lo));
			p = edge;
		}
		__m512 d[6];
		for (int s = 0; s < 3; s++) {
			const __m512 a = _mm512_loadu_ps(p + 2 * s), b = _mm512_loadu_ps(p + 2 * s + 16);
			d[2 * s] = _mm512_permutex2var_ps(a, even, b);
			d[2 * s + 1] = _mm512_permutex2var_ps(a, odd, b);
		}
		float *u = dst + 96 * t;
		const __m512 d42 = _mm512_sub_ps(d[4], d[2]), d13 = _mm512_sub_ps(d[1], d[3]);
		_mm512_store_ps(u, _mm512_add_ps(_mm512_fnmadd_ps(five, d[2], _mm512_mul_ps(four, d[0])), d[4]));
		_mm512_store_ps(u + 16, _mm512_fnmadd_ps(four, _mm512_add_ps(d[1], d[2]), _mm512_add_ps(d[3], d[4])));
		_mm512_store_ps(u + 32, _mm512_fmadd_ps(four, _mm512_sub_ps(d[1], d[2]), _mm512_sub_ps(d[4], d[3])));
		_mm512_store_ps(u + 48, _mm512_fnmadd_ps(two, d13, d42));
		_mm512_store_ps(u + 64, _mm512_fmadd_ps(two, d13, d42));
		_mm512_store_ps(u + 80, _mm512_add_ps(_mm512_fnmadd_ps(five, d[3], _mm512_mul_ps(four, d[1])), d[5]));
	}
}

// gpuz_wino_kernel adds, for OB output channels and the 16 output pairs
// of tile t of one output row, the terms of input channels [c0, c1):
// rows[c·5 + ky] is the transformed input row that kernel row ky of
// channel c reads; wt the block's transformed weights (gpuz_wino_weights)
// of C channels. Its sums start from part (OB·6 vectors) unless c0 is 0,
// and go back there unless c1 is C; then Aᵀ turns them into the outputs:
// out is the row's output of the block's first channel (channels oplane
// apart), of out_w columns.
static inline __attribute__((always_inline)) void gpuz_wino_kernel(const int OB, const float *const *rows, int t,
                                                                   int c0, int c1, int C, const float *wt,
                                                                   const float *bias, float *part, float *out,
                                                                   ptrdiff_t oplane, int out_w) {
	__m512 acc[GPUZ_WINO_OB][6];
	// The bias enters m0, which only y0 reads, and m5, which only y1
	// reads: each output adds it once.
	GPUZ_WINO_UNROLL for (int o = 0; o < OB; o++)
		GPUZ_WINO_UNROLL for (int j = 0; j < 6; j++)
			acc[o][j] = c0 > 0 ? _mm512_load_ps(part + (o * 6 + j) * 16)
			            : bias && (j == 0 || j == 5) ? _mm512_set1_ps(bias[o])
			                                         : _mm512_setzero_ps();
	for (int c = c0; c < c1; c++)
		for (int ky = 0; ky < 5; ky++) {
			const float *u = rows[c * 5 + ky] + 96 * t;
			const float *v = wt + (ptrdiff_t)(c * 5 + ky) * 6 * OB;
			GPUZ_WINO_UNROLL for (int j = 0; j < 6; j++) {
				const __m512 x = _mm512_loadu_ps(u + 16 * j);
				GPUZ_WINO_UNROLL for (int o = 0; o < OB; o++)
					acc[o][j] = _mm512_fmadd_ps(x, _mm512_set1_ps(v[j * OB + o]), acc[o][j]);
			}
		}
	if (c1 < C) {
		GPUZ_WINO_UNROLL for (int o = 0; o < OB; o++)
			GPUZ_WINO_UNROLL for (int j = 0; j < 6; j++)
				_mm512_store_ps(part + (o * 6 + j) * 16, acc[o][j]);
		return;
	}
	const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
	const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
	const int x0 = 32 * t;
	const __mmask16 m0 = gpuz_wino_mask(out_w - x0), m1 = gpuz_wino_mask(out_w - x0 - 16);
	const __m512 two = _mm512_set1_ps(2);
	GPUZ_WINO_UNROLL for (int o = 0; o < OB; o++) {
		const __m512 *m = acc[o];
		const __m512 y0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(m[0], m[1]), _mm512_add_ps(m[2], m[3])), m[4]);
		const __m512 y1 = _mm512_add_ps(_mm512_fmadd_ps(two, _mm512_sub_ps(m[3], m[4]), _mm512_sub_ps(m[1], m[2])), m[5]);
		float *dst = out + o * oplane + x0;
		_mm512_mask_storeu_ps(dst, m0, _mm512_permutex2var_ps(y0, lo, y1));
		_mm512_mask_storeu_ps(dst + 16, m1, _mm512_permutex2var_ps(y0, hi, y1));
	}
}

// gpuz_wino_obN runs gpuz_wino_kernel for N output channels, N from 1 to 5.
#define GPUZ_WINO(OB)                                                                                           \
	static void gpuz_wino_ob##OB(const float *const *rows, int t, int c0, int c1, int C, const float *wt,       \
	                             const float *b, float *part, float *out, ptrdiff_t op, int ow) {                \
		gpuz_wino_kernel(OB, rows, t, c0, c1, C, wt, b, part, out, op, ow);                                      \
	}
GPUZ_WINO(1)
GPUZ_WINO(2)
GPUZ_WINO(3)
GPUZ_WINO(4)
GPUZ_WINO(5)
#undef GPUZ_WINO

// gpuz_wino_rows computes all O output channels of output rows [y0, y0 +
// rows) of one image, as gpuz_conv_fwd_rows (conv.h) does for a 5 × 5
// kernel, from the weights gpuz_wino_weights transformed: in is the
// image's first input plane, out its output at row y0 of channel 0 (planes
// oplane apart); bias may be NULL; ring is scratch of gpuz_wino_ring
// floats, 64-byte aligned. It returns -1 when it cannot allocate its table
// of rows, else 0.
static int gpuz_wino_rows(const float *in, int C, int in_h, int in_w, int pad, int y0, int rows, const float *wt,
                          int O, const float *bias, float *out, ptrdiff_t oplane, int out_w, float *ring) {
	GPUZ_FLUSH_SUBNORMALS();
	typedef void (*wino_fn)(const float *const *, int, int, int, int, const float *, const float *, float *, float *,
	                        ptrdiff_t, int);
	static const wino_fn fns[GPUZ_WINO_OB + 1] = {0, gpuz_wino_ob1, gpuz_wino_ob2, gpuz_wino_ob3, gpuz_wino_ob4,
	                                              gpuz_wino_ob5};
	const float **table = malloc(sizeof(*table) * (size_t)C * 5);
	if (table == NULL)
		return -1;
	const int tv = gpuz_wino_tiles(out_w);
	const ptrdiff_t slot = (ptrdiff_t)tv * 96, plane = (ptrdiff_t)in_h * in_w;
	float *part = ring + (ptrdiff_t)C * 5 * slot;
	const int per = gpuz_wino_block(O);
	const int chunks = (C + GPUZ_WINO_CHUNK - 1) / GPUZ_WINO_CHUNK, chunk = (C + chunks - 1) / chunks;
	int filled = y0 - pad;
	for (int r = 0; r < rows; r++) {
		const int top = y0 + r - pad; // the input row of kernel row 0
		for (int c = 0; c < C; c++) {
			const float *ic = in + c * plane;
			for (int iy = filled > top ? filled : top; iy < top + 5; iy++)
				gpuz_wino_fill(ring + ((ptrdiff_t)c * 5 + (iy % 5 + 5) % 5) * slot,
				               iy < 0 || iy >= in_h ? NULL : ic + (ptrdiff_t)iy * in_w, in_w, pad, tv);
			// The row the next output row adds, asked for now.
			if (top + 5 >= 0 && top + 5 < in_h)
				for (int x = 0; x < in_w; x += 16)
					_mm_prefetch((const char *)(ic + (ptrdiff_t)(top + 5) * in_w + x), _MM_HINT_T1);
			for (int ky = 0; ky < 5; ky++)
				table[c * 5 + ky] = ring + ((ptrdiff_t)c * 5 + ((top + ky) % 5 + 5) % 5) * slot;
		}
		filled = top + 5;
		float *orow = out + (ptrdiff_t)r * out_w;
		// Each tile runs the channels a chunk at a time, every block of
		// output channels in turn, so that the chunk's transformed rows
		// stay in L1; the blocks' sums wait in part between chunks.
		for (int t = 0; t < tv; t++)
			for (int c0 = 0; c0 < C; c0 += chunk) {
				const int c1 = C - c0 < chunk ? C : c0 + chunk;
				for (int o0 = 0; o0 < O; o0 += per) {
					const int ob = O - o0 < per ? O - o0 : per;
					fns[ob](table, t, c0, c1, C, wt + (ptrdiff_t)o0 * C * 30, bias ? bias + o0 : NULL, part + o0 * 96,
					        orow + o0 * oplane, oplane, out_w);
				}
			}
	}
	free(table);
	return 0;
}

#pragma GCC pop_options
