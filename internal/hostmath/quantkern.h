// The kernels of quant.h for one instruction set: quant.h includes this
// file once for each, with GPUZ_QK(name) naming that set's copy,
// GPUZ_QK_VEC its float vector of GPUZ_QK_LANES lanes, GPUZ_QK_NV of them
// to a sub-block of 32 weights, GPUZ_QK_DECODE(kind, nf, row, s, v) decoding
// sub-block s of a row into v[0 .. NV−1], and the vector operations; it
// undefines them all at its end.

// GPUZ_QK_ROWS is how many rows of W gpuz_q_dot_rows decodes a step:
// AVX-512's 32 registers hold the accumulators of two rows of W by four of
// x (16), and their sub-blocks; AVX2's 16 hold one row's.
#if GPUZ_QK_LANES == 16
#define GPUZ_QK_ROWS 2
#else
#define GPUZ_QK_ROWS 1
#endif

#define GPUZ_QK_UNROLL _Pragma("GCC unroll 16")

// gpuz_q_dot_rows computes y's columns [j0, j1) for the m ≤ 4 rows of x,
// kind and m constants of each copy. Each of a row's sums takes the
// sub-blocks in turn, its vectors alternately into two accumulators, and
// adds those up at the end.
static inline __attribute__((always_inline)) void GPUZ_QK(gpuz_q_dot_rows)(const int kind, const struct gpuz_q_nf4 *nf, const int m,
                                                                           const float *x, int k, const uint8_t *w,
                                                                           ptrdiff_t rb, int j0, int j1, float *y,
                                                                           ptrdiff_t ldy) {
	const int subs = k / 32;
	for (int j = j0; j < j1; j += GPUZ_QK_ROWS) {
		const int jb = j1 - j < GPUZ_QK_ROWS ? j1 - j : GPUZ_QK_ROWS;
		const uint8_t *wr[GPUZ_QK_ROWS];
		GPUZ_QK_UNROLL for (int b = 0; b < GPUZ_QK_ROWS; b++) wr[b] = w + (ptrdiff_t)(j + (b < jb ? b : 0)) * rb;
		GPUZ_QK_VEC acc[GPUZ_QK_ROWS][4][2];
		GPUZ_QK_UNROLL for (int b = 0; b < GPUZ_QK_ROWS; b++)
			GPUZ_QK_UNROLL for (int r = 0; r < m; r++) acc[b][r][0] = acc[b][r][1] = GPUZ_QK_ZERO();
		for (int s = 0; s < subs; s++) {
			GPUZ_QK_VEC v[GPUZ_QK_ROWS][GPUZ_QK_NV];
			GPUZ_QK_UNROLL for (int b = 0; b < GPUZ_QK_ROWS; b++) GPUZ_QK_DECODE(kind, nf, wr[b], s, v[b]);
			GPUZ_QK_UNROLL for (int r = 0; r < m; r++) {
				const float *xs = x + (ptrdiff_t)r * k + 32 * s;
				GPUZ_QK_UNROLL for (int i = 0; i < GPUZ_QK_NV; i++) {
					const GPUZ_QK_VEC xv = GPUZ_QK_LOADU(xs + GPUZ_QK_LANES * i);
					GPUZ_QK_UNROLL for (int b = 0; b < GPUZ_QK_ROWS; b++) acc[b][r][i & 1] =
					    GPUZ_QK_FMADD(v[b][i], xv, acc[b][r][i & 1]);
				}
			}
		}
		for (int r = 0; r < m; r++)
			for (int b = 0; b < jb; b++) y[r * ldy + j + b] = GPUZ_QK_SUM(GPUZ_QK_ADD(acc[b][r][0], acc[b][r][1]));
	}
}

// GPUZ_QK_GW_AHEAD is how many rows ahead gpuz_q_gw_rows fetches W.
#define GPUZ_QK_GW_AHEAD 4

// gpuz_q_gw_rows computes dx's columns [32·s0, 32·s1) for the m ≤ 4 rows
// of g (ldx = k): each entry sums W's rows in turn, into dx itself.
static inline __attribute__((always_inline)) void GPUZ_QK(gpuz_q_gw_rows)(const int kind, const struct gpuz_q_nf4 *nf, const int m,
                                                                          const float *g, int n, const uint8_t *w,
                                                                          ptrdiff_t rb, int s0, int s1, float *dx,
                                                                          ptrdiff_t ldx) {
	for (int r = 0; r < m; r++)
		for (int p = 32 * s0; p < 32 * s1; p++) dx[r * ldx + p] = 0;
	// The run's bytes of a row, which the rows' stride keeps the hardware
	// from fetching ahead: each row fetches those of the row
	// GPUZ_QK_GW_AHEAD on.
	const ptrdiff_t b0 = (ptrdiff_t)s0 * 32 * rb / ldx, b1 = (ptrdiff_t)s1 * 32 * rb / ldx;
	for (int j = 0; j < n; j++) {
		const uint8_t *wr = w + (ptrdiff_t)j * rb;
		if (j + GPUZ_QK_GW_AHEAD < n)
			for (ptrdiff_t b = b0; b < b1; b += 64)
				_mm_prefetch((const char *)(wr + GPUZ_QK_GW_AHEAD * rb + b), _MM_HINT_T0);
		GPUZ_QK_VEC gj[4];
		GPUZ_QK_UNROLL for (int r = 0; r < m; r++) gj[r] = GPUZ_QK_SET1(g[(ptrdiff_t)r * n + j]);
		for (int s = s0; s < s1; s++) {
			GPUZ_QK_VEC v[GPUZ_QK_NV];
			GPUZ_QK_DECODE(kind, nf, wr, s, v);
			GPUZ_QK_UNROLL for (int r = 0; r < m; r++) {
				float *d = dx + r * ldx + 32 * s;
				GPUZ_QK_UNROLL for (int i = 0; i < GPUZ_QK_NV; i++)
					GPUZ_QK_STOREU(d + GPUZ_QK_LANES * i,
					               GPUZ_QK_FMADD(gj[r], v[i], GPUZ_QK_LOADU(d + GPUZ_QK_LANES * i)));
			}
		}
	}
}

// gpuz_q_tile_rows decodes sub-blocks [s0, s1) of W's rows below rows into
// dst, rows ldd apart.
static inline __attribute__((always_inline)) void GPUZ_QK(gpuz_q_tile_rows)(const int kind, const struct gpuz_q_nf4 *nf, const uint8_t *w,
                                                                            ptrdiff_t rb, int rows, int s0, int s1,
                                                                            float *dst, ptrdiff_t ldd) {
	for (int r = 0; r < rows; r++) {
		const uint8_t *wr = w + (ptrdiff_t)r * rb;
		float *d = dst + (ptrdiff_t)r * ldd - 32 * s0;
		for (int s = s0; s < s1; s++) {
			GPUZ_QK_VEC v[GPUZ_QK_NV];
			GPUZ_QK_DECODE(kind, nf, wr, s, v);
			GPUZ_QK_UNROLL for (int i = 0; i < GPUZ_QK_NV; i++) GPUZ_QK_STOREU(d + 32 * s + GPUZ_QK_LANES * i, v[i]);
		}
	}
}

// GPUZ_QK_CASES expands CASE(kind, m) for every kind and m from 1 to 4.
#define GPUZ_QK_CASES(CASE)                                                                                   \
	CASE(GPUZ_Q8_0, 1) CASE(GPUZ_Q8_0, 2) CASE(GPUZ_Q8_0, 3) CASE(GPUZ_Q8_0, 4) CASE(GPUZ_Q4_0, 1)            \
	CASE(GPUZ_Q4_0, 2) CASE(GPUZ_Q4_0, 3) CASE(GPUZ_Q4_0, 4) CASE(GPUZ_Q4_K, 1) CASE(GPUZ_Q4_K, 2)            \
	CASE(GPUZ_Q4_K, 3) CASE(GPUZ_Q4_K, 4) CASE(GPUZ_Q6_K, 1) CASE(GPUZ_Q6_K, 2) CASE(GPUZ_Q6_K, 3)            \
	CASE(GPUZ_Q6_K, 4) CASE(GPUZ_NF4, 1) CASE(GPUZ_NF4, 2) CASE(GPUZ_NF4, 3) CASE(GPUZ_NF4, 4)

// gpuz_q_dot runs gpuz_q_dot_rows's copy for kind and m.
static void GPUZ_QK(gpuz_q_dot)(int kind, const struct gpuz_q_nf4 *nf, const float *x, int m, int k, const uint8_t *w, ptrdiff_t rb, int j0,
                                int j1, float *y, ptrdiff_t ldy) {
#define GPUZ_QK_DOT(K, M)                                                                                     \
	case 8 * K + M:                                                                                          \
		GPUZ_QK(gpuz_q_dot_rows)(K, nf, M, x, k, w, rb, j0, j1, y, ldy);                                          \
		break;
	switch (8 * kind + m) { GPUZ_QK_CASES(GPUZ_QK_DOT) }
#undef GPUZ_QK_DOT
}

// gpuz_q_gw runs gpuz_q_gw_rows's copy for kind and m.
static void GPUZ_QK(gpuz_q_gw)(int kind, const struct gpuz_q_nf4 *nf, const float *g, int m, int n, const uint8_t *w, ptrdiff_t rb, int s0,
                               int s1, float *dx, ptrdiff_t ldx) {
#define GPUZ_QK_GW(K, M)                                                                                      \
	case 8 * K + M:                                                                                          \
		GPUZ_QK(gpuz_q_gw_rows)(K, nf, M, g, n, w, rb, s0, s1, dx, ldx);                                          \
		break;
	switch (8 * kind + m) { GPUZ_QK_CASES(GPUZ_QK_GW) }
#undef GPUZ_QK_GW
}

// gpuz_q_tile runs gpuz_q_tile_rows's copy for kind.
static void GPUZ_QK(gpuz_q_tile)(int kind, const struct gpuz_q_nf4 *nf, const uint8_t *w, ptrdiff_t rb, int rows, int s0, int s1, float *dst,
                                 ptrdiff_t ldd) {
	switch (kind) {
	case GPUZ_Q8_0:
		GPUZ_QK(gpuz_q_tile_rows)(GPUZ_Q8_0, nf, w, rb, rows, s0, s1, dst, ldd);
		break;
	case GPUZ_Q4_0:
		GPUZ_QK(gpuz_q_tile_rows)(GPUZ_Q4_0, nf, w, rb, rows, s0, s1, dst, ldd);
		break;
	case GPUZ_Q4_K:
		GPUZ_QK(gpuz_q_tile_rows)(GPUZ_Q4_K, nf, w, rb, rows, s0, s1, dst, ldd);
		break;
	case GPUZ_Q6_K:
		GPUZ_QK(gpuz_q_tile_rows)(GPUZ_Q6_K, nf, w, rb, rows, s0, s1, dst, ldd);
		break;
	case GPUZ_NF4:
		GPUZ_QK(gpuz_q_tile_rows)(GPUZ_NF4, nf, w, rb, rows, s0, s1, dst, ldd);
		break;
	}
}

#undef GPUZ_QK_CASES
#undef GPUZ_QK_GW_AHEAD
#undef GPUZ_QK_UNROLL
#undef GPUZ_QK_ROWS
#undef GPUZ_QK
#undef GPUZ_QK_VEC
#undef GPUZ_QK_NV
#undef GPUZ_QK_LANES
#undef GPUZ_QK_ZERO
#undef GPUZ_QK_SET1
#undef GPUZ_QK_LOADU
#undef GPUZ_QK_STOREU
#undef GPUZ_QK_FMADD
#undef GPUZ_QK_ADD
#undef GPUZ_QK_SUM
#undef GPUZ_QK_DECODE
