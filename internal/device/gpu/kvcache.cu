// The key-value cache: a layer's keys, then its values, each [batch,
// kv_heads, context, dh], of float32 (hostmath.CacheWrite, CacheAttend) or
// of bf16 or fp16 values (fp16 nonzero; hostmath.CacheWriteHalf,
// CacheAttendHalf), packed two to a 4-byte word, rounded as half.cu
// rounds, bit for bit package half, and widened exactly as read. Each
// kernel of a float32 cache and its 16-bit twin run one device function,
// which reads a float32 cache where its float32 pointer is not null: the
// test is the same for every thread, once per thread or per position,
// outside the loops over a head's width. It follows half.cu, whose
// conversions it calls, and attention.cu, whose attn_row it reads.

// half_from returns f rounded to bf16, or to fp16 when fp16 is nonzero.
GPUZ_DEVICE unsigned short half_from(float f, int fp16) { return fp16 ? fp16_from(f) : bf16_from(f); }

// half_to returns the float32 value of the bf16 (fp16 nonzero: fp16) h.
GPUZ_DEVICE float half_to(unsigned short h, int fp16) { return fp16 ? fp16_to(h) : GPUZ_FLOAT((unsigned)h << 16); }

// cache_store copies the keys and values of the packed qkv rows of the
// seq new tokens of every sequence into a layer's cache at positions
// pos[0] … pos[0]+seq−1: into the float32 cache kv32, or, where kv32 is
// null, into the 16-bit cache kv16, each rounded. One thread per key
// element, which copies its value too.
GPUZ_DEVICE void cache_store(float *kv32, unsigned short *kv16, const float *qkv, const float *pos, int batch, int seq,
		int heads, int kv_heads, int dh, int context, int fp16) {
	long long d = (long long)heads * dh, kd = (long long)kv_heads * dh, ld = d + 2 * kd;
	long long values = (long long)batch * kv_heads * context * dh, start = (long long)pos[0];
	long long n = (long long)batch * seq * kd;
	GPUZ_FOR(i, n) {
		long long r = i / kd, c = i % kd; // the token's row, the column among the keys
		long long b = r / seq, s = r % seq;
		long long at = ((b * kv_heads + c / dh) * context + start + s) * dh + c % dh;
		float key = qkv[r * ld + d + c], value = qkv[r * ld + d + kd + c];
		if (kv32 != GPUZ_NULL) {
			kv32[at] = key;
			kv32[values + at] = value;
		} else {
			kv16[at] = half_from(key, fp16);
			kv16[values + at] = half_from(value, fp16);
		}
	}
}

// cache_dot is q·k over the head's width dh, k the key at element at of
// the float32 cache kv32, or, where kv32 is null, of the 16-bit cache
// kv16, widened as it is read: the products added in column order.
GPUZ_DEVICE float cache_dot(const float *q, const float *kv32, const unsigned short *kv16, long long at, int dh,
		int fp16) {
	float dot = 0;
	if (kv32 != GPUZ_NULL) {
		for (int j = 0; j < dh; j++) {
			dot += q[j] * kv32[at + j];
		}
	} else {
		for (int j = 0; j < dh; j++) {
			dot += q[j] * half_to(kv16[at + j], fp16);
		}
	}
	return dot;
}

// cache_mix adds p times the value at element at of the float32 cache kv32
// (where kv32 is null, of the 16-bit cache kv16, widened) to orow.
GPUZ_DEVICE void cache_mix(float *orow, float p, const float *kv32, const unsigned short *kv16, long long at, int dh,
		int fp16) {
	if (kv32 != GPUZ_NULL) {
		for (int j = 0; j < dh; j++) {
			orow[j] += p * kv32[at + j];
		}
	} else {
		for (int j = 0; j < dh; j++) {
			orow[j] += p * half_to(kv16[at + j], fp16);
		}
	}
}

// cache_rows sets o's row of every (sequence, query head, new token s),
// its head's columns, to Σ_t softmax(scale·q_s·K^T)_t·v_t over the cache's
// positions t ≤ pos[0] + s, the keys and values of the query head's group
// read in place from the float32 cache kv32, or, where kv32 is null, from
// the 16-bit cache kv16: one thread per row, the scores computed twice
// (for the maximum, then for the sum), the sum and the output added in
// float32 in position order and divided by the sum at the end.
GPUZ_DEVICE void cache_rows(float *o, const float *qkv, const float *kv32, const unsigned short *kv16, const float *pos,
		int batch, int seq, int heads, int kv_heads, int dh, int context, float scale, int fp16) {
	long long values = (long long)batch * kv_heads * context * dh, start = (long long)pos[0];
	long long n = (long long)batch * heads * seq;
	GPUZ_FOR(i, n) {
		attn_row r = attn_row_at(i, seq, heads, kv_heads, dh);
		const float *q = qkv + r.q;
		long long k = (r.b * kv_heads + kv_of(r.h, heads, kv_heads)) * context * dh, v = k + values;
		float *orow = o + r.o;
		long long lim = start + r.s + 1;
		float m = GPUZ_NEG_INF;
		for (long long t = 0; t < lim; t++) {
			m = fmaxf(m, scale * cache_dot(q, kv32, kv16, k + t * dh, dh, fp16));
		}
		for (int j = 0; j < dh; j++) {
			orow[j] = 0;
		}
		float sum = 0;
		for (long long t = 0; t < lim; t++) {
			float p = expf(scale * cache_dot(q, kv32, kv16, k + t * dh, dh, fp16) - m);
			sum += p;
			cache_mix(orow, p, kv32, kv16, v + t * dh, dh, fp16);
		}
		float inv = 1 / sum;
		for (int j = 0; j < dh; j++) {
			orow[j] *= inv;
		}
	}
}

// cache_write copies the keys and values of the packed qkv rows of the seq
// new tokens of every sequence into a layer's float32 key-value cache kv
// at positions pos[0] … pos[0]+seq−1 (hostmath.CacheWrite; cache_store).
// The driver checks the position first.
GPUZ_KERNEL cache_write(float *kv, const float *qkv, const float *pos, int batch, int seq, int heads, int kv_heads, int dh,
		int context) {
	cache_store(kv, GPUZ_NULL, qkv, pos, batch, seq, heads, kv_heads, dh, context, 0);
}

// cache_attend sets o's row of every (sequence, query head, new token s)
// to its attention over a float32 cache kv (hostmath.CacheAttend;
// cache_rows).
GPUZ_KERNEL cache_attend(float *o, const float *qkv, const float *kv, const float *pos, int batch, int seq, int heads,
		int kv_heads, int dh, int context, float scale) {
	cache_rows(o, qkv, kv, GPUZ_NULL, pos, batch, seq, heads, kv_heads, dh, context, scale, 0);
}

// cache_write16 is cache_write into a 16-bit cache kv, each key and value
// rounded (cache_store). The driver checks the position first.
GPUZ_KERNEL cache_write16(unsigned short *kv, const float *qkv, const float *pos, int batch, int seq, int heads,
		int kv_heads, int dh, int context, int fp16) {
	cache_store(GPUZ_NULL, kv, qkv, pos, batch, seq, heads, kv_heads, dh, context, fp16);
}

// cache_attend16 is cache_attend against a 16-bit cache kv, each key and
// value widened to float32 as it is read (cache_rows).
GPUZ_KERNEL cache_attend16(float *o, const float *qkv, const unsigned short *kv, const float *pos, int batch, int seq,
		int heads, int kv_heads, int dh, int context, float scale, int fp16) {
	cache_rows(o, qkv, GPUZ_NULL, kv, pos, batch, seq, heads, kv_heads, dh, context, scale, fp16);
}
