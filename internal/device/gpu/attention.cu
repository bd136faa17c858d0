// Multi-head self-attention on the packed layouts of kernels.Attention:
// qkv is [batch·seq, 3d] (queries, keys, values; head h in columns
// h·dh … of each), the probabilities [batch, heads, seq, seq], the output
// [batch·seq, d], d = heads·dh. Every output element is computed by one
// thread (or, for the probabilities, one block per row) that adds its terms
// in index order: no atomics, the same order on every run.

// limit is how many leading columns of probability row s take part: s+1
// when causal, all seq otherwise.
GPUZ_DEVICE int limit(int s, int seq, int causal) { return causal ? s + 1 : seq; }

// attn_probs sets each probability row to softmax(scale·q_s·K^T) over its
// leading limit(s) columns and zero beyond: one block per row of one
// (sequence, head) pair, the scores kept in p between the passes.
GPUZ_KERNEL attn_probs(float *p, const float *qkv, int seq, int heads, int dh, int causal, float scale) {
	GPUZ_SHARED(double, sh);
	long long d = (long long)heads * dh, ld = 3 * d;
	long long pair = GPUZ_BID / seq;
	int s = (int)(GPUZ_BID % seq);
	long long b = pair / heads, h = pair % heads;
	const float *q = qkv + (b * seq + s) * ld + h * dh;
	const float *k = qkv + b * seq * ld + d + h * dh;
	float *row = p + GPUZ_BID * seq;
	int lim = limit(s, seq, causal);
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

// attn_mix sets o[b, s, h·dh + j] = Σ_{t < limit(s)} p[b, h, s, t]·v[b, t, h, j].
GPUZ_KERNEL attn_mix(float *o, const float *p, const float *qkv, int batch, int seq, int heads, int dh, int causal) {
	long long d = (long long)heads * dh, ld = 3 * d;
	long long n = (long long)batch * seq * d;
	GPUZ_FOR(i, n) {
		long long bs = i / d, c = i % d;
		long long b = bs / seq, h = c / dh, j = c % dh;
		int s = (int)(bs % seq);
		const float *prow = p + ((b * heads + h) * seq + s) * seq;
		const float *v = qkv + b * seq * ld + 2 * d + h * dh + j;
		float acc = 0;
		for (int t = 0; t < limit(s, seq, causal); t++) {
			acc += prow[t] * v[t * ld];
		}
		o[i] = acc;
	}
}

// attn_mix_probs_grad sets dp[b, h, s, t] = Σ_j g[b, s, h·dh + j]·v[b, t, h, j]
// for t < limit(s), zero beyond.
GPUZ_KERNEL attn_mix_probs_grad(float *dp, const float *g, const float *qkv, int batch, int seq, int heads, int dh, int causal) {
	long long d = (long long)heads * dh, ld = 3 * d;
	long long n = (long long)batch * heads * seq * seq;
	GPUZ_FOR(i, n) {
		long long pair = i / ((long long)seq * seq);
		int s = (int)(i / seq % seq), t = (int)(i % seq);
		long long b = pair / heads, h = pair % heads;
		float acc = 0;
		if (t < limit(s, seq, causal)) {
			const float *gr = g + (b * seq + s) * d + h * dh;
			const float *v = qkv + (b * seq + t) * ld + 2 * d + h * dh;
			for (int j = 0; j < dh; j++) {
				acc += gr[j] * v[j];
			}
		}
		dp[i] = acc;
	}
}

// attn_mix_value_grad sets the value columns of dqkv to
// dv[b, t, h, j] = Σ_{s : t < limit(s)} p[b, h, s, t]·g[b, s, h·dh + j] and
// the query and key columns to zero.
GPUZ_KERNEL attn_mix_value_grad(float *dqkv, const float *p, const float *g, int batch, int seq, int heads, int dh, int causal) {
	long long d = (long long)heads * dh, ld = 3 * d;
	long long n = (long long)batch * seq * ld;
	GPUZ_FOR(i, n) {
		long long bt = i / ld, c = i % ld;
		float acc = 0;
		if (c >= 2 * d) {
			long long b = bt / seq, h = (c - 2 * d) / dh, j = (c - 2 * d) % dh;
			int t = (int)(bt % seq);
			const float *pcol = p + (b * heads + h) * seq * seq + t;
			const float *gc = g + b * seq * d + h * dh + j;
			for (int s = causal ? t : 0; s < seq; s++) {
				acc += pcol[(long long)s * seq] * gc[(long long)s * d];
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
// columns, dq[s] = scale·Σ_t ds[s, t]·k[t] and dk[t] = scale·Σ_s ds[s, t]·q[s];
// the value columns are zero.
GPUZ_KERNEL attn_probs_grad(float *dqkv, const float *qkv, const float *p, const float *dp, const float *rowdot,
		int batch, int seq, int heads, int dh, int causal, float scale) {
	long long d = (long long)heads * dh, ld = 3 * d;
	long long n = (long long)batch * seq * ld;
	GPUZ_FOR(i, n) {
		long long bt = i / ld, c = i % ld;
		float acc = 0;
		if (c < 2 * d) {
			long long b = bt / seq, part = c / d, h = (c % d) / dh, j = c % dh;
			int s = (int)(bt % seq);
			long long pair = b * heads + h;
			const float *pp = p + pair * seq * seq, *dpp = dp + pair * seq * seq, *rd = rowdot + pair * seq;
			const float *base = qkv + b * seq * ld + h * dh + j;
			if (part == 0) { // dq[s, j] = Σ_t ds[s, t]·k[t, j]
				const float *k = base + d;
				for (int t = 0; t < limit(s, seq, causal); t++) {
					long long e = (long long)s * seq + t;
					acc += pp[e] * (dpp[e] - rd[s]) * k[(long long)t * ld];
				}
			} else { // dk[t = s, j] = Σ_{s'} ds[s', t]·q[s', j]
				const float *q = base;
				for (int r = causal ? s : 0; r < seq; r++) {
					long long e = (long long)r * seq + s;
					acc += pp[e] * (dpp[e] - rd[r]) * q[(long long)r * ld];
				}
			}
			acc *= scale;
		}
		dqkv[i] = acc;
	}
}
