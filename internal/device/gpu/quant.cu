// Products by a frozen weight W [n, k] stored in one of package quant's
// kinds (hostmath.QuantXWt, QuantGW): y = x·Wᵀ and dx = g·W, W's blocks
// decoded as they are read, never widened whole. W's rows lie one after
// another, row_bytes (quant.Kind.RowBytes(k)) apart: ggml's blocks, byte for
// byte, or NF4's codes, whose block constants follow them (nf4_absmax).
// Each weight decodes exactly as package quant's dequantizers decode it
// (the same float32 operations, no fused multiply-add), so that only the
// order of the sums differs from the host's. It follows half.cu, whose
// fp16_to it calls.
//
// The float shared arrays are named apart from the other files' double sh:
// NVRTC compiles every file as one translation unit, where extern
// __shared__ arrays of one name must have one type.
//
// Two kernels a product: a one-row kernel for decode's few rows (m at most
// QUANT_ROWS), which reads W once, a run of QUANT_RUN weights a lane under
// one decoded scale, and is meant to be bound by the bandwidth of its
// quantized bytes, and a tiled kernel for the many rows of prefill and
// training, which decodes a tile of W into shared memory and reuses it for
// QUANT_TILE rows of x. Both are launched with blocks of 256 threads.

// The kinds, numbered as quant.Kind numbers them.
#define QUANT_F32 0
#define QUANT_F16 1
#define QUANT_BF16 2
#define QUANT_Q8_0 3
#define QUANT_Q4_0 4
#define QUANT_Q4_K 5
#define QUANT_Q6_K 6
#define QUANT_NF4 7

// ggml's blocks (ggml-common.h). The fp16 scales are read as their bits
// and widened by fp16_to, as the shim can compile it too. Every block's
// size is even and a row starts at a multiple of its block's size from a
// 4-byte aligned buffer, so the 2-byte fields are aligned.

// block_q8_0: 32 weights, d·qs[i].
typedef struct {
	unsigned short d;
	signed char qs[32];
} block_q8_0;

// block_q4_0: 32 weights, d·(q − 8), the low nibble of qs[i] weight i and
// its high nibble weight i + 16.
typedef struct {
	unsigned short d;
	unsigned char qs[16];
} block_q4_0;

// block_q4_K: 256 weights in eight sub-blocks of 32, each with a 6-bit
// scale and min in scales (scale_min_k4); qs in four chunks of 32 bytes,
// chunk c's low nibbles sub-block 2c and its high nibbles sub-block 2c + 1.
// Weight = d·scale·q − dmin·min.
typedef struct {
	unsigned short d;
	unsigned short dmin;
	unsigned char scales[12];
	unsigned char qs[128];
} block_q4_K;

// block_q6_K: 256 weights in sixteen sub-blocks of 16, each with an int8
// scale; a weight's 6-bit code (q6_k_code) split between a nibble of ql
// and two bits of qh. Weight = d·scale·(code − 32), d·scale rounded first.
typedef struct {
	unsigned char ql[128];
	unsigned char qh[64];
	signed char scales[16];
	unsigned short d;
} block_q6_K;

// The sizes ggml's formats fix; a compile error (an array of −1) otherwise.
typedef char quant_q8_0_is_34_bytes[sizeof(block_q8_0) == 34 ? 1 : -1];
typedef char quant_q4_0_is_18_bytes[sizeof(block_q4_0) == 18 ? 1 : -1];
typedef char quant_q4_K_is_144_bytes[sizeof(block_q4_K) == 144 ? 1 : -1];
typedef char quant_q6_K_is_210_bytes[sizeof(block_q6_K) == 210 ? 1 : -1];

// QUANT_ROWS is the most rows of x (or g) the one-row kernels take.
#define QUANT_ROWS 4

// The tiled kernels' tiles: QUANT_TILE rows of the output by QUANT_TILE
// columns, over QUANT_DEPTH of the summed dimension at a time, each of the
// 256 threads computing 4×4 outputs, 16 apart. Shared rows are padded by
// one float.
#define QUANT_TILE 64
#define QUANT_DEPTH 32

// scale_min_k4 sets sub-block j's (0 to 7) 6-bit scale and min from a
// Q4_K block's twelve scale bytes (ggml's get_scale_min_k4,
// quant.ScaleMinK4).
GPUZ_DEVICE void scale_min_k4(int j, const unsigned char *q, unsigned *scale, unsigned *min) {
	if (j < 4) {
		*scale = q[j] & 63u;
		*min = q[j + 4] & 63u;
	} else {
		*scale = (q[j + 4] & 0x0Fu) | ((unsigned)(q[j - 4] >> 6) << 4);
		*min = (unsigned)(q[j + 4] >> 4) | ((unsigned)(q[j] >> 6) << 4);
	}
}

// q6_k_code returns the 6-bit code of weight l (0 to 255) of a Q6_K block
// (ggml's dequantize_row_q6_K, quant's q6kCode): weight 32t + i of half h
// (t 0 to 3) has its low four bits in ql[64h + 32·(t mod 2) + i], the low
// nibble for t < 2 and the high one after, and its top two in bits 2t and
// 2t + 1 of qh[32h + i].
GPUZ_DEVICE unsigned q6_k_code(const block_q6_K *b, int l) {
	int h = l / 128, t = l % 128 / 32, i = l % 32;
	unsigned lo = ((unsigned)b->ql[64 * h + 32 * (t & 1) + i] >> (4 * (t >> 1))) & 0x0Fu;
	unsigned hi = ((unsigned)b->qh[32 * h + i] >> (2 * t)) & 3u;
	return lo | hi << 4;
}

// quant_matrix is the weight W [n, k] a kernel reads: its bytes, kind and
// row stride, and for NF4 the tables that the driver writes to the
// workspace (tables: NF4's 16 levels, quant.NF4Levels, then the 256 values
// of the dynamic code its absmaxes are quantized with, quant.DynamicCode).
typedef struct {
	const unsigned char *w;
	const float *tables;
	long long n, k, row_bytes;
	int kind;
} quant_matrix;

// quant_matrix_of returns the quant_matrix of a kernel's arguments.
GPUZ_DEVICE quant_matrix quant_matrix_of(const unsigned char *w, const float *tables, int kind, int n, int k,
		long long row_bytes) {
	quant_matrix q;
	q.w = w;
	q.tables = tables;
	q.n = n;
	q.k = k;
	q.row_bytes = row_bytes;
	q.kind = kind;
	return q;
}

// load_f32 returns the little-endian float32 at b, which need not be
// aligned.
GPUZ_DEVICE float load_f32(const unsigned char *b) {
	return GPUZ_FLOAT((unsigned)b[0] | (unsigned)b[1] << 8 | (unsigned)b[2] << 16 | (unsigned)b[3] << 24);
}

// nf4_absmax returns NF4 block b's absmax as quant.NF4Layout.BlockAbsmax
// rebuilds it: the dynamic code of its byte times its group's float32
// absmax, plus the offset. An NF4 weight of n·k weights holds n·k/2 bytes
// of codes (two a byte, the first weight in the high nibble), a byte a
// block of 64, a float32 a group of 256 blocks, then the float32 offset.
GPUZ_DEVICE float nf4_absmax(const quant_matrix *wm, long long b) {
	long long elems = wm->n * wm->k, blocks = elems / 64;
	const unsigned char *qabs = wm->w + elems / 2, *groups = qabs + blocks;
	float offset = load_f32(groups + 4 * ((blocks + 255) / 256));
	float a = wm->tables[16 + qabs[b]] * load_f32(groups + 4 * (b / 256));
	return a + offset;
}

// quant_at returns weight p of row j of wm as quant.DequantizeRow (for NF4,
// quant.Dequantize) computes it.
GPUZ_DEVICE float quant_at(const quant_matrix *wm, long long j, long long p) {
	const unsigned char *row = wm->w + j * wm->row_bytes;
	switch (wm->kind) {
	case QUANT_F32:
		return ((const float *)row)[p];
	case QUANT_F16:
		return fp16_to(((const unsigned short *)row)[p]);
	case QUANT_BF16:
		return GPUZ_FLOAT((unsigned)((const unsigned short *)row)[p] << 16);
	case QUANT_Q8_0: {
		const block_q8_0 *b = (const block_q8_0 *)row + p / 32;
		return (float)b->qs[p % 32] * fp16_to(b->d);
	}
	case QUANT_Q4_0: {
		const block_q4_0 *b = (const block_q4_0 *)row + p / 32;
		int l = (int)(p % 32);
		unsigned q = b->qs[l % 16];
		int v = (int)(l < 16 ? q & 0x0Fu : q >> 4);
		return (float)(v - 8) * fp16_to(b->d);
	}
	case QUANT_Q4_K: {
		const block_q4_K *b = (const block_q4_K *)row + p / 256;
		int l = (int)(p % 256), c = l / 64, high = l % 64 >= 32;
		unsigned scale, min;
		scale_min_k4(2 * c + high, b->scales, &scale, &min);
		unsigned q = b->qs[32 * c + l % 32];
		float d = fp16_to(b->d) * (float)scale, m = fp16_to(b->dmin) * (float)min;
		return d * (float)(high ? q >> 4 : q & 0x0Fu) - m;
	}
	case QUANT_Q6_K: {
		const block_q6_K *b = (const block_q6_K *)row + p / 256;
		int l = (int)(p % 256);
		float d = fp16_to(b->d) * (float)b->scales[l / 16];
		return d * (float)((int)q6_k_code(b, l) - 32);
	}
	case QUANT_NF4: {
		unsigned c = row[p / 2];
		return wm->tables[p % 2 == 0 ? c >> 4 : c & 0x0Fu] * nf4_absmax(wm, (j * wm->k + p) / 64);
	}
	}
	return 0.0f;
}

// QUANT_RUN is how many consecutive weights the one-row kernels decode at a
// time, sharing one block's scale: a run never crosses a block (of 32, a
// Q4_K sub-block of 32 or a Q6_K sub-block of 16), since k is a whole
// number of blocks.
#define QUANT_RUN 8

// quant_run sets v to weights p … p + QUANT_RUN − 1 of row j of wm (p a
// multiple of QUANT_RUN), as quant_at would, reading the block's scale
// once; for a float kind, the weights from k on are 0.
GPUZ_DEVICE void quant_run(const quant_matrix *wm, long long j, long long p, float *v) {
	const unsigned char *row = wm->w + j * wm->row_bytes;
	switch (wm->kind) {
	case QUANT_Q8_0: {
		const block_q8_0 *b = (const block_q8_0 *)row + p / 32;
		const signed char *q = b->qs + p % 32;
		float d = fp16_to(b->d);
		for (int e = 0; e < QUANT_RUN; e++) {
			v[e] = (float)q[e] * d;
		}
		return;
	}
	case QUANT_Q4_0: {
		const block_q4_0 *b = (const block_q4_0 *)row + p / 32;
		int l = (int)(p % 32);
		const unsigned char *q = b->qs + l % 16;
		float d = fp16_to(b->d);
		for (int e = 0; e < QUANT_RUN; e++) {
			int c = (int)(l < 16 ? q[e] & 0x0Fu : (unsigned)q[e] >> 4);
			v[e] = (float)(c - 8) * d;
		}
		return;
	}
	case QUANT_Q4_K: {
		const block_q4_K *b = (const block_q4_K *)row + p / 256;
		int l = (int)(p % 256), c = l / 64, high = l % 64 >= 32;
		unsigned scale, min;
		scale_min_k4(2 * c + high, b->scales, &scale, &min);
		const unsigned char *q = b->qs + 32 * c + l % 32;
		float d = fp16_to(b->d) * (float)scale, m = fp16_to(b->dmin) * (float)min;
		for (int e = 0; e < QUANT_RUN; e++) {
			v[e] = d * (float)(high ? (unsigned)q[e] >> 4 : q[e] & 0x0Fu) - m;
		}
		return;
	}
	case QUANT_Q6_K: {
		const block_q6_K *b = (const block_q6_K *)row + p / 256;
		int l = (int)(p % 256);
		float d = fp16_to(b->d) * (float)b->scales[l / 16];
		for (int e = 0; e < QUANT_RUN; e++) {
			v[e] = d * (float)((int)q6_k_code(b, l + e) - 32);
		}
		return;
	}
	case QUANT_NF4: {
		const unsigned char *q = row + p / 2;
		float a = nf4_absmax(wm, (j * wm->k + p) / 64);
		for (int e = 0; e < QUANT_RUN; e += 2) {
			v[e] = wm->tables[(unsigned)q[e / 2] >> 4] * a;
			v[e + 1] = wm->tables[q[e / 2] & 0x0Fu] * a;
		}
		return;
	}
	}
	for (int e = 0; e < QUANT_RUN; e++) {
		v[e] = p + e < wm->k ? quant_at(wm, j, p + e) : 0.0f;
	}
}

// quant_xwt_row sets y [m, n] = x [m, k]·Wᵀ for m at most QUANT_ROWS: one
// warp per row j of W (tables: NF4's, see quant_matrix), lane l decoding the runs of QUANT_RUN weights from
// QUANT_RUN·l, QUANT_RUN·(l + 32), … (the lanes read consecutive bytes of
// the row) against every row of x, then warp_sum. A warp past the last row
// decodes row 0 without writing, so that every thread of a block shuffles
// alike; ceil(n/8) blocks.
GPUZ_KERNEL quant_xwt_row(float *y, const float *x, const unsigned char *w, const float *tables, int kind, int m,
		int n, int k, long long row_bytes) {
	quant_matrix wm = quant_matrix_of(w, tables, kind, n, k, row_bytes);
	long long lane = GPUZ_TID % GPUZ_WARP;
	long long j = GPUZ_BID * (GPUZ_NTHREADS / GPUZ_WARP) + GPUZ_TID / GPUZ_WARP;
	float acc[QUANT_ROWS] = {0.0f, 0.0f, 0.0f, 0.0f};
	for (long long p = lane * QUANT_RUN; p < k; p += GPUZ_WARP * QUANT_RUN) {
		float v[QUANT_RUN];
		quant_run(&wm, j < n ? j : 0, p, v);
		int run = k - p < QUANT_RUN ? (int)(k - p) : QUANT_RUN;
		for (int i = 0; i < m && i < QUANT_ROWS; i++) {
			const float *xi = x + (long long)i * k + p;
			for (int e = 0; e < run; e++) {
				acc[i] += xi[e] * v[e];
			}
		}
	}
	for (int i = 0; i < QUANT_ROWS; i++) {
		float s = warp_sum(acc[i]);
		if (lane == 0 && j < n && i < m) {
			y[(long long)i * n + j] = s;
		}
	}
}

// quant_xwt_tiled sets y [m, n] = x [m, k]·Wᵀ: block b computes the tile of
// QUANT_TILE rows of y (b / ceil(n/QUANT_TILE)) by QUANT_TILE of its
// columns (b mod that), stepping over k QUANT_DEPTH at a time with x's and
// W's pieces in shared memory (2·QUANT_TILE·(QUANT_DEPTH+1) floats), W's
// decoded once for the tile's 64 rows of x. Each output is summed over k in
// order.
GPUZ_KERNEL quant_xwt_tiled(float *y, const float *x, const unsigned char *w, const float *tables, int kind, int m,
		int n, int k, long long row_bytes) {
	quant_matrix wm = quant_matrix_of(w, tables, kind, n, k, row_bytes);
	GPUZ_SHARED(float, tile);
	const int ld = QUANT_DEPTH + 1;
	float *sx = tile, *sw = tile + QUANT_TILE * ld;
	long long tiles = (n + QUANT_TILE - 1) / QUANT_TILE;
	long long i0 = GPUZ_BID / tiles * QUANT_TILE, j0 = GPUZ_BID % tiles * QUANT_TILE;
	int t = (int)GPUZ_TID, ty = t / 16, tx = t % 16;
	float acc[4][4] = {{0.0f}};
	for (long long p0 = 0; p0 < k; p0 += QUANT_DEPTH) {
		for (int e = t; e < QUANT_TILE * QUANT_DEPTH; e += (int)GPUZ_NTHREADS) {
			int r = e / QUANT_DEPTH, c = e % QUANT_DEPTH;
			sx[r * ld + c] = i0 + r < m && p0 + c < k ? x[(i0 + r) * k + p0 + c] : 0.0f;
			sw[r * ld + c] = j0 + r < n && p0 + c < k ? quant_at(&wm, j0 + r, p0 + c) : 0.0f;
		}
		GPUZ_BARRIER();
		for (int c = 0; c < QUANT_DEPTH; c++) {
			for (int a = 0; a < 4; a++) {
				float xv = sx[(ty + 16 * a) * ld + c];
				for (int b = 0; b < 4; b++) {
					acc[a][b] += xv * sw[(tx + 16 * b) * ld + c];
				}
			}
		}
		GPUZ_BARRIER();
	}
	for (int a = 0; a < 4; a++) {
		for (int b = 0; b < 4; b++) {
			long long i = i0 + ty + 16 * a, j = j0 + tx + 16 * b;
			if (i < m && j < n) {
				y[i * n + j] = acc[a][b];
			}
		}
	}
}

// QUANT_GW_COLUMNS is how many columns of dx a block of quant_gw_row
// computes: a run of QUANT_RUN a lane.
#define QUANT_GW_COLUMNS (GPUZ_WARP * QUANT_RUN)

// quant_gw_row sets dx [m, k] = g [m, n]·W for m at most QUANT_ROWS: block
// b owns QUANT_GW_COLUMNS columns of dx from QUANT_GW_COLUMNS·b
// (ceil(k/QUANT_GW_COLUMNS) blocks), lane l the run of QUANT_RUN from
// QUANT_RUN·l among them; warp u adds rows u, u + 8, … of W, its lanes
// reading consecutive bytes of a row, then every thread adds one column's
// 8 warp sums in order, through shared memory (8·QUANT_ROWS·
// QUANT_GW_COLUMNS floats).
GPUZ_KERNEL quant_gw_row(float *dx, const float *g, const unsigned char *w, const float *tables, int kind, int m,
		int n, int k, long long row_bytes) {
	quant_matrix wm = quant_matrix_of(w, tables, kind, n, k, row_bytes);
	GPUZ_SHARED(float, warp_part);
	long long warps = GPUZ_NTHREADS / GPUZ_WARP, u = GPUZ_TID / GPUZ_WARP, lane = GPUZ_TID % GPUZ_WARP;
	long long p0 = GPUZ_BID * QUANT_GW_COLUMNS, p = p0 + lane * QUANT_RUN;
	float acc[QUANT_ROWS][QUANT_RUN];
	for (int i = 0; i < QUANT_ROWS; i++) {
		for (int e = 0; e < QUANT_RUN; e++) {
			acc[i][e] = 0.0f;
		}
	}
	int run = p >= k ? 0 : k - p < QUANT_RUN ? (int)(k - p) : QUANT_RUN;
	for (long long j = u; j < n && run > 0; j += warps) {
		float v[QUANT_RUN];
		quant_run(&wm, j, p, v);
		for (int i = 0; i < m && i < QUANT_ROWS; i++) {
			float gij = g[(long long)i * n + j];
			for (int e = 0; e < run; e++) {
				acc[i][e] += gij * v[e];
			}
		}
	}
	for (int i = 0; i < QUANT_ROWS; i++) {
		for (int e = 0; e < QUANT_RUN; e++) {
			warp_part[(u * QUANT_ROWS + i) * QUANT_GW_COLUMNS + lane * QUANT_RUN + e] = acc[i][e];
		}
	}
	GPUZ_BARRIER();
	for (long long c = GPUZ_TID; c < QUANT_GW_COLUMNS; c += GPUZ_NTHREADS) {
		if (p0 + c >= k) {
			continue;
		}
		for (int i = 0; i < m && i < QUANT_ROWS; i++) {
			float s = 0.0f;
			for (long long t = 0; t < warps; t++) {
				s += warp_part[(t * QUANT_ROWS + i) * QUANT_GW_COLUMNS + c];
			}
			dx[(long long)i * k + p0 + c] = s;
		}
	}
}

// quant_gw_tiled sets dx [m, k] = g [m, n]·W: block b computes the tile of
// QUANT_TILE rows of dx (b / ceil(k/QUANT_TILE)) by QUANT_TILE of its
// columns (b mod that), stepping over W's n rows QUANT_DEPTH at a time with
// g's piece (QUANT_TILE·(QUANT_DEPTH+1) floats) and W's decoded piece
// (QUANT_DEPTH·(QUANT_TILE+1) floats) in shared memory. Each output is
// summed over W's rows in order.
GPUZ_KERNEL quant_gw_tiled(float *dx, const float *g, const unsigned char *w, const float *tables, int kind, int m,
		int n, int k, long long row_bytes) {
	quant_matrix wm = quant_matrix_of(w, tables, kind, n, k, row_bytes);
	GPUZ_SHARED(float, tile);
	const int ldg = QUANT_DEPTH + 1, ldw = QUANT_TILE + 1;
	float *sg = tile, *sw = tile + QUANT_TILE * ldg;
	long long tiles = (k + QUANT_TILE - 1) / QUANT_TILE;
	long long i0 = GPUZ_BID / tiles * QUANT_TILE, p0 = GPUZ_BID % tiles * QUANT_TILE;
	int t = (int)GPUZ_TID, ty = t / 16, tx = t % 16;
	float acc[4][4] = {{0.0f}};
	for (long long j0 = 0; j0 < n; j0 += QUANT_DEPTH) {
		for (int e = t; e < QUANT_TILE * QUANT_DEPTH; e += (int)GPUZ_NTHREADS) {
			int r = e / QUANT_DEPTH, c = e % QUANT_DEPTH;
			sg[r * ldg + c] = i0 + r < m && j0 + c < n ? g[(i0 + r) * n + j0 + c] : 0.0f;
			int wr = e / QUANT_TILE, wc = e % QUANT_TILE;
			sw[wr * ldw + wc] = j0 + wr < n && p0 + wc < k ? quant_at(&wm, j0 + wr, p0 + wc) : 0.0f;
		}
		GPUZ_BARRIER();
		for (int c = 0; c < QUANT_DEPTH; c++) {
			for (int a = 0; a < 4; a++) {
				float gv = sg[(ty + 16 * a) * ldg + c];
				for (int b = 0; b < 4; b++) {
					acc[a][b] += gv * sw[c * ldw + tx + 16 * b];
				}
			}
		}
		GPUZ_BARRIER();
	}
	for (int a = 0; a < 4; a++) {
		for (int b = 0; b < 4; b++) {
			long long i = i0 + ty + 16 * a, p = p0 + tx + 16 * b;
			if (i < m && p < k) {
				dx[i * k + p] = acc[a][b];
			}
		}
	}
}

// quant_embedding sets row r of y (d columns, n elements in all) to row
// ids[r] of the table [vocab, d] in w stored in kind (a row kind: no
// tables), decoded (hostmath's QuantEmbedding): TokenEmbedding over a
// quantized table. The driver checks the ids before launching.
GPUZ_KERNEL quant_embedding(float *y, const float *ids, const unsigned char *w, int kind, long long n, int d, int vocab,
		long long row_bytes) {
	quant_matrix wm = quant_matrix_of(w, 0, kind, vocab, d, row_bytes);
	GPUZ_FOR(o, n) {
		long long r = o / d, i = o % d;
		y[o] = quant_at(&wm, (long long)ids[r], i);
	}
}
