// Element-wise kernels, one element per thread of a grid-stride loop.

// fill_scalar sets dst[i] = s[0]·scale.
GPUZ_KERNEL fill_scalar(float *dst, const float *s, long long n, float scale) {
	float v = s[0] * scale;
	GPUZ_FOR(i, n) { dst[i] = v; }
}

// add sets dst = a + b.
GPUZ_KERNEL add(float *dst, const float *a, const float *b, long long n) {
	GPUZ_FOR(i, n) { dst[i] = a[i] + b[i]; }
}

// leaky_relu sets dst to src where positive and slope·src elsewhere.
GPUZ_KERNEL leaky_relu(float *dst, const float *src, long long n, float slope) {
	GPUZ_FOR(i, n) {
		float x = src[i];
		dst[i] = x > 0 ? x : slope * x;
	}
}

// leaky_relu_grad sets dst to g where x is positive and slope·g elsewhere.
GPUZ_KERNEL leaky_relu_grad(float *dst, const float *x, const float *g, long long n, float slope) {
	GPUZ_FOR(i, n) { dst[i] = x[i] > 0 ? g[i] : slope * g[i]; }
}

// add_row_vector adds v (cols elements) to every row of the n-element m.
GPUZ_KERNEL add_row_vector(float *m, const float *v, long long n, int cols) {
	GPUZ_FOR(i, n) { m[i] += v[i % cols]; }
}

// add_channel_bias adds bias[c] to every element of channel c of the NCHW
// tensor out of n elements, planes of plane elements, channels channels.
GPUZ_KERNEL add_channel_bias(float *out, const float *bias, long long n, long long plane, int channels) {
	GPUZ_FOR(i, n) { out[i] += bias[(i / plane) % channels]; }
}

// sum_rows sets dst[c] to the sum of column c of the rows×cols m, one thread
// per column adding the rows in order, as the host does.
GPUZ_KERNEL sum_rows(float *dst, const float *m, int rows, int cols) {
	GPUZ_FOR(c, cols) {
		float s = 0;
		for (long long r = 0; r < rows; r++) {
			s += m[r * cols + c];
		}
		dst[c] = s;
	}
}

// mse_grad sets dst = seed[0]·2(pred − target)/n.
GPUZ_KERNEL mse_grad(float *dst, const float *pred, const float *target, const float *seed, long long n) {
	float scale = seed[0] * 2.0f / (float)n;
	GPUZ_FOR(i, n) { dst[i] = scale * (pred[i] - target[i]); }
}

// adam applies one Adam update with the per-step constants the host
// computes (kernels.AdamStep), in the same float32 operations.
GPUZ_KERNEL adam(float *p, const float *g, float *m, float *v, long long n, float scale, float beta1, float beta2,
		float one_minus_beta1, float one_minus_beta2, float step_size, float correction2_sqrt, float eps) {
	GPUZ_FOR(i, n) {
		float gi = g[i] * scale;
		float mi = m[i] * beta1 + gi * one_minus_beta1;
		float vi = v[i] * beta2 + gi * gi * one_minus_beta2;
		m[i] = mi;
		v[i] = vi;
		float denom = sqrtf(vi) / correction2_sqrt + eps;
		p[i] -= step_size * (mi / denom);
	}
}

// copy_floats sets dst[i] = src[i].
GPUZ_KERNEL copy_floats(float *dst, const float *src, long long n) {
	GPUZ_FOR(i, n) { dst[i] = src[i]; }
}

// fill_value sets dst[i] = v.
GPUZ_KERNEL fill_value(float *dst, long long n, float v) {
	GPUZ_FOR(i, n) { dst[i] = v; }
}
