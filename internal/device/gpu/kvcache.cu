// The 16-bit key-value cache (hostmath.CacheWriteHalf, CacheAttendHalf):
// cache_write and cache_attend of fusedattention.cu on a cache of bf16 or
// fp16 values (fp16 nonzero), packed two to a 4-byte word, rounded as
// half.cu rounds, bit for bit package half, and widened exactly as read.
// It follows half.cu, whose conversions it calls.

// half_from returns f rounded to bf16, or to fp16 when fp16 is nonzero.
GPUZ_DEVICE unsigned short half_from(float f, int fp16) { return fp16 ? fp16_from(f) : bf16_from(f); }

// half_to returns the float32 value of the bf16 (fp16 nonzero: fp16) h.
GPUZ_DEVICE float half_to(unsigned short h, int fp16) { return fp16 ? fp16_to(h) : GPUZ_FLOAT((unsigned)h << 16); }

// cache_write16 is cache_write into a 16-bit cache kv: one thread per key
// element, which writes its value too, each rounded. The driver checks
// the position first.
GPUZ_KERNEL cache_write16(unsigned short *kv, const float *qkv, const float *pos, int batch, int seq, int heads,
		int kv_heads, int dh, int context, int fp16) {
	long long d = (long long)heads * dh, kd = (long long)kv_heads * dh, ld = d + 2 * kd;
	long long values = (long long)batch * kv_heads * context * dh, start = (long long)pos[0];
	long long n = (long long)batch * seq * kd;
	GPUZ_FOR(i, n) {
		long long r = i / kd, c = i % kd; // the token's row, the column among the keys
		long long b = r / seq, s = r % seq;
		long long at = ((b * kv_heads + c / dh) * context + start + s) * dh + c % dh;
		kv[at] = half_from(qkv[r * ld + d + c], fp16);
		kv[values + at] = half_from(qkv[r * ld + d + kd + c], fp16);
	}
}

// cache_attend16 is cache_attend against a 16-bit cache kv, each key and
// value widened to float32 as it is read: one thread per row, the sums in
// float32 in position order.
GPUZ_KERNEL cache_attend16(float *o, const float *qkv, const unsigned short *kv, const float *pos, int batch, int seq,
		int heads, int kv_heads, int dh, int context, float scale, int fp16) {
	long long d = (long long)heads * dh, kd = (long long)kv_heads * dh, ld = d + 2 * kd;
	long long values = (long long)batch * kv_heads * context * dh, start = (long long)pos[0];
	long long n = (long long)batch * heads * seq;
	GPUZ_FOR(i, n) {
		long long b = i / ((long long)heads * seq), h = i / seq % heads, s = i % seq;
		const float *q = qkv + (b * seq + s) * ld + h * dh;
		const unsigned short *k = kv + (b * kv_heads + kv_of(h, heads, kv_heads)) * context * dh;
		const unsigned short *v = k + values;
		float *orow = o + (b * seq + s) * d + h * dh;
		long long lim = start + s + 1;
		float m = GPUZ_NEG_INF;
		for (long long t = 0; t < lim; t++) {
			float dot = 0;
			for (int j = 0; j < dh; j++) {
				dot += q[j] * half_to(k[t * dh + j], fp16);
			}
			m = fmaxf(m, scale * dot);
		}
		for (int j = 0; j < dh; j++) {
			orow[j] = 0;
		}
		float sum = 0;
		for (long long t = 0; t < lim; t++) {
			float dot = 0;
			for (int j = 0; j < dh; j++) {
				dot += q[j] * half_to(k[t * dh + j], fp16);
			}
			float p = expf(scale * dot - m);
			sum += p;
			for (int j = 0; j < dh; j++) {
				orow[j] += p * half_to(v[t * dh + j], fp16);
			}
		}
		float inv = 1 / sum;
		for (int j = 0; j < dh; j++) {
			orow[j] *= inv;
		}
	}
}
