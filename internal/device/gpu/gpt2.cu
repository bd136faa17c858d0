// GPT-2's kernels: the tanh form of GELU and its gradient, the token
// embedding (a lookup without positions) and the learned absolute
// positions and their gradient. Each computes an element as the host
// kernels of package hostmath do, in float.

// gelu_tanh_u is the argument of GELU's tanh, √(2/π)·(x + 0.044715·x³), in
// torch's order.
GPUZ_DEVICE float gelu_tanh_u(float x) { return 0.7978845608028654f * (x + 0.044715f * (x * x * x)); }

// gelu_tanh sets dst = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
GPUZ_KERNEL gelu_tanh(float *dst, const float *src, long long n) {
	GPUZ_FOR(i, n) {
		float x = src[i];
		dst[i] = (0.5f * x) * (1.0f + tanhf(gelu_tanh_u(x)));
	}
}

// gelu_tanh_grad sets dst = g·(0.5·(1 + t) + 0.5·x·(1 − t²)·√(2/π)·(1 +
// 3·0.044715·x²)), t the tanh; the second term only where 1 − t² is not 0,
// so that x² overflowing cannot make it NaN.
GPUZ_KERNEL gelu_tanh_grad(float *dst, const float *x, const float *g, long long n) {
	GPUZ_FOR(i, n) {
		float v = x[i];
		float t = tanhf(gelu_tanh_u(v));
		float d = 0.5f * (1.0f + t);
		float s = 1.0f - t * t;
		if (s != 0.0f) {
			d += 0.5f * v * s * 0.7978845608028654f * (1.0f + 0.134145f * (v * v));
		}
		dst[i] = g[i] * d;
	}
}

// token_embedding sets row r of y (d columns, n elements in all) to row
// ids[r] of weight. The driver checks the ids before launching.
GPUZ_KERNEL token_embedding(float *y, const float *ids, const float *weight, long long n, int d) {
	GPUZ_FOR(o, n) {
		long long r = o / d, i = o % d;
		y[o] = weight[(long long)ids[r] * d + i];
	}
}

// add_positions sets row r of y (d columns, n elements in all) to row r of
// x plus row r mod seq of pos.
GPUZ_KERNEL add_positions(float *y, const float *x, const float *pos, long long n, int d, int seq) {
	GPUZ_FOR(o, n) {
		long long r = o / d, i = o % d;
		y[o] = x[o] + pos[(r % seq) * d + i];
	}
}

// positions_grad sets dpos (n elements, rows of d) from the output gradient
// g of tokens rows: element i of row s < seq is the sum of element i of
// rows s, s + seq, s + 2·seq, … of g, added in that order (the host's), one
// thread per element; rows from seq on are zero.
GPUZ_KERNEL positions_grad(float *dpos, const float *g, long long n, long long tokens, int d, int seq) {
	GPUZ_FOR(o, n) {
		long long s = o / d, i = o % d;
		float sum = 0;
		if (s < seq) {
			for (long long r = s; r < tokens; r += seq) {
				sum += g[r * d + i];
			}
		}
		dpos[o] = sum;
	}
}
