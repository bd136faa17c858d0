// Fused attention (FlashAttention, Dao et al., 2022) on the packed layouts
// of hostmath.Attention (see attention.cu): the output and one log-sum-exp
// per row of scores, never the probabilities, and the gradient of qkv from
// them. The algorithm is the host's (hostmath.FusedAttention): each query
// row walks the keys in blocks of FUSED_BLOCK with an online softmax, a
// running maximum and sum, rescaling the sum and the partial output when
// the maximum grows; the backward recomputes each probability from the
// row's log-sum-exp. Every output element is written by one thread that
// adds its terms in index order, a key or value gradient its group's query
// heads in their order, each head's sum first: no atomics, the same order
// on every run. Straightforward rather than fast: one thread per row.

#define FUSED_BLOCK 64

// fused_attn sets, for every (sequence, query head, row s), o's row (its
// head's columns; unless o is null) to Σ_t softmax(scale·q_s·K^T)_t·v_t
// and lse[(b·heads + h)·seq + s] (unless lse is null) to the row's
// log-sum-exp, the output row serving as the running accumulator.
GPUZ_KERNEL fused_attn(float *o, float *lse, const float *qkv, int batch, int seq, int heads, int kv_heads, int dh,
		int causal, float scale) {
	long long kd = (long long)kv_heads * dh, ld = (long long)heads * dh + 2 * kd;
	long long n = (long long)batch * heads * seq;
	GPUZ_FOR(i, n) {
		attn_row r = attn_row_at(i, seq, heads, kv_heads, dh);
		const float *q = qkv + r.q, *k = qkv + r.k, *v = k + kd;
		float *orow = o != GPUZ_NULL ? o + r.o : GPUZ_NULL;
		if (orow != GPUZ_NULL) {
			for (int j = 0; j < dh; j++) {
				orow[j] = 0;
			}
		}
		int lim = limit(r.s, seq, causal);
		float m = GPUZ_NEG_INF, l = 0;
		float sc[FUSED_BLOCK];
		for (int c0 = 0; c0 < lim; c0 += FUSED_BLOCK) {
			int nc = lim - c0 < FUSED_BLOCK ? lim - c0 : FUSED_BLOCK;
			float mx = m;
			for (int c = 0; c < nc; c++) {
				const float *kt = k + (long long)(c0 + c) * ld;
				float dot = 0;
				for (int j = 0; j < dh; j++) {
					dot += q[j] * kt[j];
				}
				sc[c] = scale * dot;
				mx = fmaxf(mx, sc[c]);
			}
			float rescale = expf(m - mx);
			if (rescale != 1.0f) {
				l *= rescale;
				if (orow != GPUZ_NULL) {
					for (int j = 0; j < dh; j++) {
						orow[j] *= rescale;
					}
				}
			}
			m = mx;
			float sum = 0;
			for (int c = 0; c < nc; c++) {
				sc[c] = expf(sc[c] - mx);
				sum += sc[c];
			}
			l += sum;
			if (orow != GPUZ_NULL) {
				for (int c = 0; c < nc; c++) {
					const float *vt = v + (long long)(c0 + c) * ld;
					for (int j = 0; j < dh; j++) {
						orow[j] += sc[c] * vt[j];
					}
				}
			}
		}
		if (lse != GPUZ_NULL) {
			lse[i] = m + logf(l);
		}
		if (orow != GPUZ_NULL) {
			float inv = 1.0f / l;
			for (int j = 0; j < dh; j++) {
				orow[j] *= inv;
			}
		}
	}
}

// fused_ds is dS[s, t]·scale for query head h at row s and key t, with
// p set to P[s, t] = exp(scale·q_s·k_t − lse_s): scale·P·(g_s·v_t − D_s),
// D_s = g_s·o_s − gl_s, gl the log-sum-exps' gradient.
GPUZ_DEVICE float fused_ds(float *p, const float *q, const float *kt, const float *vt, const float *g, float lse_s,
		float dd, int dh, float scale) {
	float dot = 0;
	for (int j = 0; j < dh; j++) {
		dot += q[j] * kt[j];
	}
	float pv = expf(scale * dot - lse_s);
	float dp = 0;
	for (int j = 0; j < dh; j++) {
		dp += g[j] * vt[j];
	}
	*p = pv;
	return scale * pv * (dp - dd);
}

// fused_dot is Σ_j a[j]·b[j].
GPUZ_DEVICE float fused_dot(const float *a, const float *b, int dh) {
	float sum = 0;
	for (int j = 0; j < dh; j++) {
		sum += a[j] * b[j];
	}
	return sum;
}

// fused_attn_grad_q sets the query columns of dqkv: for every (sequence,
// query head, row s), dq_s = Σ_t dS[s, t]·scale·k_t over the row's keys,
// given the output gradient g and the log-sum-exps' gradient gl, which
// shifts D_s = g_s·o_s − gl_s (the same index as lse).
GPUZ_KERNEL fused_attn_grad_q(float *dqkv, const float *qkv, const float *o, const float *lse, const float *g,
		const float *gl, int batch,
		int seq, int heads, int kv_heads, int dh, int causal, float scale) {
	long long kd = (long long)kv_heads * dh, ld = (long long)heads * dh + 2 * kd;
	long long n = (long long)batch * heads * seq;
	GPUZ_FOR(i, n) {
		attn_row r = attn_row_at(i, seq, heads, kv_heads, dh);
		const float *q = qkv + r.q, *k = qkv + r.k, *gs = g + r.o;
		float dd = fused_dot(gs, o + r.o, dh) - gl[i];
		float *dq = dqkv + r.q;
		for (int j = 0; j < dh; j++) {
			dq[j] = 0;
		}
		int lim = limit(r.s, seq, causal);
		for (int t = 0; t < lim; t++) {
			float p;
			float ds = fused_ds(&p, q, k + (long long)t * ld, k + kd + (long long)t * ld, gs, lse[i], dd, dh, scale);
			for (int j = 0; j < dh; j++) {
				dq[j] += ds * k[(long long)t * ld + j];
			}
		}
	}
}

// fused_attn_grad_kv sets the key and value columns of dqkv: for every
// (sequence, position t, key and value head, column j), dk = Σ_h Σ_s
// dS_h[s, t]·q_h,s[j] and dv = Σ_h Σ_s P_h[s, t]·g_h,s[j] over the rows s
// that see key t and the query heads h of the group, each head's sum
// taken over s first and added to the previous heads' in their order.
GPUZ_KERNEL fused_attn_grad_kv(float *dqkv, const float *qkv, const float *o, const float *lse, const float *g,
		const float *gl, int batch,
		int seq, int heads, int kv_heads, int dh, int causal, float scale) {
	long long d = (long long)heads * dh, kd = (long long)kv_heads * dh, ld = d + 2 * kd;
	long long n = (long long)batch * seq * kd;
	int group = heads / kv_heads;
	GPUZ_FOR(i, n) {
		long long bt = i / kd, c = i % kd;
		long long b = bt / seq, kvh = c / dh;
		int t = (int)(bt % seq), j = (int)(c % dh);
		const float *kt = qkv + bt * ld + d + kvh * dh;
		const float *vt = kt + kd;
		float dk = 0, dv = 0;
		for (long long h = kvh * group; h < (kvh + 1) * group; h++) {
			float hk = 0, hv = 0;
			for (int s = causal ? t : 0; s < seq; s++) {
				const float *q = qkv + (b * seq + s) * ld + h * dh;
				const float *gs = g + (b * seq + s) * d + h * dh;
				float dd = fused_dot(gs, o + (b * seq + s) * d + h * dh, dh) - gl[(b * heads + h) * seq + s];
				float p;
				float ds = fused_ds(&p, q, kt, vt, gs, lse[(b * heads + h) * seq + s], dd, dh, scale);
				hk += ds * q[j];
				hv += p * gs[j];
			}
			dk = h == kvh * group ? hk : dk + hk;
			dv = h == kvh * group ? hv : dv + hv;
		}
		dqkv[bt * ld + d + c] = dk;
		dqkv[bt * ld + d + kd + c] = dv;
	}
}
