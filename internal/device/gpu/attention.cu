// Multi-head self-attention on the packed layouts of hostmath.Attention:
// qkv is [batch·seq, d + 2·kd] (queries, keys, values; query head h in
// columns h·dh … of the queries, key and value head k in columns k·dh … of
// the keys and of the values), the probabilities [batch, heads, seq, seq],
// the output [batch·seq, d], d = heads·dh, kd = kv_heads·dh. With
// grouped-query attention (kv_heads < heads) query head h reads key and
// value head h / (heads / kv_heads) in place. Every output element is
// computed by one thread (or, for the probabilities, one block per row)
// that adds its terms in index order, a key or value gradient its group's
// query heads in their order: no atomics, the same order on every run.

// kv_of is the key and value head that query head h reads.
GPUZ_DEVICE long long kv_of(long long h, int heads, int kv_heads) { return h / (heads / kv_heads); }

// limit is how many leading columns of probability row s take part: s+1
// when causal, all seq otherwise.
GPUZ_DEVICE int limit(int s, int seq, int causal) { return causal ? s + 1 : seq; }

// attn_row is where one row of scores lies in the packed layouts: query
// head h's row s of sequence b, its query at qkv + q, its group's first
// key at qkv + k (the next keys ld further, the values kd further), its
// row of an output [batch·seq, d] at o.
typedef struct {
	long long b, h, q, k, o;
	int s;
} attn_row;

// attn_row_at is row i of the rows of scores in (sequence, query head,
// row) order: i = (b·heads + h)·seq + s.
GPUZ_DEVICE attn_row attn_row_at(long long i, int seq, int heads, int kv_heads, int dh) {
	long long d = (long long)heads * dh, ld = d + 2LL * kv_heads * dh;
	attn_row r;
	r.b = i / seq / heads;
	r.h = i / seq % heads;
	r.s = (int)(i % seq);
	r.q = (r.b * seq + r.s) * ld + r.h * dh;
	r.k = r.b * seq * ld + d + kv_of(r.h, heads, kv_heads) * dh;
	r.o = (r.b * seq + r.s) * d + r.h * dh;
	return r;
}

// attn_probs sets each probability row to softmax(scale·q_s·K^T) over its
// leading limit(s) columns and zero beyond: one block per row of one
// (sequence, head) pair, the scores kept in p between the passes.
GPUZ_KERNEL attn_probs(float *p, const float *qkv, int seq, int heads, int kv_heads, int dh, int causal, float scale) {
	GPUZ_SHARED(double, sh);
	long long ld = (long long)heads * dh + 2LL * kv_heads * dh;
	attn_row r = attn_row_at(GPUZ_BID, seq, heads, kv_heads, dh);
	const float *q = qkv + r.q, *k = qkv + r.k;
	float *row = p + GPUZ_BID * seq;
	int lim = limit(r.s, seq, causal);
	float m = GPUZ_NEG_INF;
	for (long long t = GPUZ_TID; t < lim; t += GPUZ_NTHREADS) {
		float dot = 0;
		for (int j = 0; j < dh; j++) {
			dot += q[j] * k[t * ld + j];
		}
		float score = scale * dot;
		row[t] = score;
		m = fmaxf(m, score);
	}
	m = block_max(m, sh);
	double sum = 0;
	for (long long t = GPUZ_TID; t < lim; t += GPUZ_NTHREADS) {
		float e = expf(row[t] - m);
		row[t] = e;
		sum += (double)e;
	}
	float inv = (float)(1.0 / block_sum(sum, sh));
	for (long long t = GPUZ_TID; t < seq; t += GPUZ_NTHREADS) {
		row[t] = t < lim ? row[t] * inv : 0.0f;
	}
}

// attn_mix sets o[b, s, h·dh + j] = Σ_{t < limit(s)} p[b, h, s, t]·v[b, t, kv_of(h), j].
GPUZ_KERNEL attn_mix(float *o, const float *p, const float *qkv, int batch, int seq, int heads, int kv_heads, int dh,
		int causal) {
	long long d = (long long)heads * dh, kd = (long long)kv_heads * dh, ld = d + 2 * kd;
	long long n = (long long)batch * seq * d;
	GPUZ_FOR(i, n) {
		long long bs = i / d, c = i % d;
		long long b = bs / seq, h = c / dh, j = c % dh;
		int s = (int)(bs % seq);
		const float *prow = p + ((b * heads + h) * seq + s) * seq;
		const float *v = qkv + b * seq * ld + d + kd + kv_of(h, heads, kv_heads) * dh + j;
		float acc = 0;
		for (int t = 0; t < limit(s, seq, causal); t++) {
			acc += prow[t] * v[t * ld];
		}
		o[i] = acc;
	}
}

// attn_mix_probs_grad sets dp[b, h, s, t] = Σ_j g[b, s, h·dh + j]·v[b, t, kv_of(h), j]
// for t < limit(s), zero beyond.
GPUZ_KERNEL attn_mix_probs_grad(float *dp, const float *g, const float *qkv, int batch, int seq, int heads, int kv_heads,
		int dh, int causal) {
	long long d = (long long)heads * dh, kd = (long long)kv_heads * dh, ld = d + 2 * kd;
	long long n = (long long)batch * heads * seq * seq;
	GPUZ_FOR(i, n) {
		long long pair = i / ((long long)seq * seq);
		int s = (int)(i / seq % seq), t = (int)(i % seq);
		long long b = pair / heads, h = pair % heads;
		float acc = 0;
		if (t < limit(s, seq, causal)) {
			const float *gr = g + (b * seq + s) * d + h * dh;
			const float *v = qkv + (b * seq + t) * ld + d + kd + kv_of(h, heads, kv_heads) * dh;
			for (int j = 0; j < dh; j++) {
				acc += gr[j] * v[j];
			}
		}
		dp[i] = acc;
	}
}

// attn_mix_value_grad sets the value columns of dqkv to
// dv[b, t, k, j] = Σ_{h : kv_of(h) = k} Σ_{s : t < limit(s)} p[b, h, s, t]·g[b, s, h·dh + j],
// each query head's sum over s taken whole and the heads added in their
// order, as the host kernels add them, and the query and key columns to
// zero.
GPUZ_KERNEL attn_mix_value_grad(float *dqkv, const float *p, const float *g, int batch, int seq, int heads, int kv_heads,
		int dh, int causal) {
	long long d = (long long)heads * dh, kd = (long long)kv_heads * dh, ld = d + 2 * kd;
	long long n = (long long)batch * seq * ld;
	int group = heads / kv_heads;
	GPUZ_FOR(i, n) {
		long long bt = i / ld, c = i % ld;
		float acc = 0;
		if (c >= d + kd) {
			long long b = bt / seq, k = (c - d - kd) / dh, j = (c - d - kd) % dh;
			int t = (int)(bt % seq);
			for (int m = 0; m < group; m++) {
				long long h = k * group + m;
				const float *pcol = p + (b * heads + h) * seq * seq + t;
				const float *gc = g + b * seq * d + h * dh + j;
				float part = 0;
				for (int s = causal ? t : 0; s < seq; s++) {
					part += pcol[(long long)s * seq] * gc[(long long)s * d];
				}
				acc = m == 0 ? part : acc + part;
			}
		}
		dqkv[i] = acc;
	}
}

// attn_row_dot sets rowdot[r] = Σ_{t < limit} p[r, t]·dp[r, t] for each of
// rows probability rows.
GPUZ_KERNEL attn_row_dot(float *rowdot, const float *p, const float *dp, long long rows, int seq, int causal) {
	GPUZ_FOR(r, rows) {
		int lim = limit((int)(r % seq), seq, causal);
		float acc = 0;
		for (int t = 0; t < lim; t++) {
			acc += p[r * seq + t] * dp[r * seq + t];
		}
		rowdot[r] = acc;
	}
}

// attn_probs_grad sets dqkv from the probabilities p, their gradient dp and
// rowdot: with ds[s, t] = p[s, t]·(dp[s, t] − rowdot[s]) over the unmasked
// columns of each query head, dq[s] = scale·Σ_t ds[s, t]·k[t] against its
// group's keys, and dk[t] = Σ_h scale·Σ_s ds_h[s, t]·q_h[s] over the query
// heads h of the key's group, in their order; the value columns are zero.
GPUZ_KERNEL attn_probs_grad(float *dqkv, const float *qkv, const float *p, const float *dp, const float *rowdot,
		int batch, int seq, int heads, int kv_heads, int dh, int causal, float scale) {
	long long d = (long long)heads * dh, kd = (long long)kv_heads * dh, ld = d + 2 * kd;
	long long n = (long long)batch * seq * ld;
	int group = heads / kv_heads;
	GPUZ_FOR(i, n) {
		long long bt = i / ld, c = i % ld;
		float acc = 0;
		long long b = bt / seq, j = c % dh;
		int s = (int)(bt % seq);
		const float *row0 = qkv + b * seq * ld + j;
		if (c < d) { // dq[s, j] = scale·Σ_t ds[s, t]·k[t, j]
			long long h = c / dh, pair = b * heads + h;
			const float *pp = p + pair * seq * seq, *dpp = dp + pair * seq * seq, *rd = rowdot + pair * seq;
			const float *k = row0 + d + kv_of(h, heads, kv_heads) * dh;
			for (int t = 0; t < limit(s, seq, causal); t++) {
				long long e = (long long)s * seq + t;
				acc += pp[e] * (dpp[e] - rd[s]) * k[(long long)t * ld];
			}
			acc *= scale;
		} else if (c < d + kd) { // dk[t = s, j] = Σ_h scale·Σ_{s'} ds_h[s', t]·q_h[s', j]
			long long kv = (c - d) / dh;
			for (int m = 0; m < group; m++) {
				long long h = kv * group + m, pair = b * heads + h;
				const float *pp = p + pair * seq * seq, *dpp = dp + pair * seq * seq, *rd = rowdot + pair * seq;
				const float *q = row0 + h * dh;
				float part = 0;
				for (int r = causal ? s : 0; r < seq; r++) {
					long long e = (long long)r * seq + s;
					part += pp[e] * (dpp[e] - rd[r]) * q[(long long)r * ld];
				}
				part *= scale;
				acc = m == 0 ? part : acc + part;
			}
		}
		dqkv[i] = acc;
	}
}
