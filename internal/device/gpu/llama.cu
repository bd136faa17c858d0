// The Llama family's kernels: RMS normalisation over rows of cols elements
// (one block per row for the row-wise kernels, the mean of squares
// accumulated in double, as on the host), the rotary position embedding and
// the SwiGLU activation (one thread per output element).

// row_rstd returns a row's 1/√(mean(x²) + eps).
GPUZ_DEVICE float row_rstd(const float *x, int cols, double eps, double *sh) {
	double ss = 0;
	for (long long i = GPUZ_TID; i < cols; i += GPUZ_NTHREADS) {
		double v = (double)x[i];
		ss += v * v;
	}
	ss = block_sum(ss, sh);
	return (float)(1.0 / sqrt(ss / cols + eps));
}

// rms_norm sets y = w ⊙ (x·rstd) per row.
GPUZ_KERNEL rms_norm(float *y, const float *x, const float *w, int cols, double eps) {
	GPUZ_SHARED(double, sh);
	const float *xr = x + GPUZ_BID * cols;
	float *yr = y + GPUZ_BID * cols;
	float rstd = row_rstd(xr, cols, eps, sh);
	for (long long i = GPUZ_TID; i < cols; i += GPUZ_NTHREADS) {
		yr[i] = w[i] * (xr[i] * rstd);
	}
}

// rms_norm_input_grad sets dx = (ĝ − x̂·mean(ĝ ⊙ x̂))·rstd per row, ĝ = g ⊙ w.
GPUZ_KERNEL rms_norm_input_grad(float *dx, const float *x, const float *w, const float *g, int cols, double eps) {
	GPUZ_SHARED(double, sh);
	const float *xr = x + GPUZ_BID * cols;
	const float *gr = g + GPUZ_BID * cols;
	float *dr = dx + GPUZ_BID * cols;
	float rstd = row_rstd(xr, cols, eps, sh);
	double sgx = 0;
	for (long long i = GPUZ_TID; i < cols; i += GPUZ_NTHREADS) {
		sgx += (double)(gr[i] * w[i]) * (double)(xr[i] * rstd);
	}
	sgx = block_sum(sgx, sh);
	float mgx = (float)(sgx / cols);
	for (long long i = GPUZ_TID; i < cols; i += GPUZ_NTHREADS) {
		dr[i] = (gr[i] * w[i] - (xr[i] * rstd) * mgx) * rstd;
	}
}

// rms_stats sets rstd[r] to row r's 1/√(mean(x²) + eps).
GPUZ_KERNEL rms_stats(float *rstd, const float *x, int cols, double eps) {
	GPUZ_SHARED(double, sh);
	float r = row_rstd(x + GPUZ_BID * cols, cols, eps, sh);
	if (GPUZ_TID == 0) {
		rstd[GPUZ_BID] = r;
	}
}

// rms_norm_weight_grad sets dw[c] to the sum over rows of g ⊙ x̂ in column
// c, one thread per column adding the rows in order.
GPUZ_KERNEL rms_norm_weight_grad(float *dw, const float *x, const float *g, const float *rstd, int rows, int cols) {
	GPUZ_FOR(c, cols) {
		double s = 0;
		for (long long r = 0; r < rows; r++) {
			long long i = r * cols + c;
			s += (double)(g[i] * (x[i] * rstd[r]));
		}
		dw[c] = (float)s;
	}
}

// rotary sets y to x with the first `rotated` columns of every row of
// `width` rotated in heads of head_dim, rotate_half's convention: for the
// row's position p = row mod seq_len and j < head_dim/2, x1 = x[j] and
// x2 = x[j + head_dim/2] become (x1·c) + ((−x2)·s) and (x2·c) + (x1·s),
// c and s read from the tables cs and sn [seq_len, head_dim/2]. With
// inverse not 0 the sines are negated: the opposite rotation, the
// gradient. The other columns are copied.
GPUZ_KERNEL rotary(float *y, const float *x, const float *cs, const float *sn, long long n, int width, int rotated,
		int head_dim, int seq_len, int inverse) {
	int half = head_dim / 2;
	GPUZ_FOR(i, n) {
		long long r = i / width;
		int c = (int)(i - r * width);
		if (c >= rotated) {
			y[i] = x[i];
			continue;
		}
		int j = c % head_dim;
		long long t = (r % seq_len) * half;
		if (j < half) {
			float s = inverse ? -sn[t + j] : sn[t + j];
			y[i] = x[i] * cs[t + j] + (-x[i + half]) * s;
		} else {
			float s = inverse ? -sn[t + j - half] : sn[t + j - half];
			y[i] = x[i] * cs[t + j - half] + x[i - half] * s;
		}
	}
}

// swiglu sets y[r, j] = silu(gate)·up for gate = x[r, j] and up =
// x[r, n + j], x's rows of 2n columns, silu(z) = z/(1 + e^−z).
GPUZ_KERNEL swiglu(float *y, const float *x, long long total, int n) {
	GPUZ_FOR(i, total) {
		long long r = i / n;
		long long j = i - r * n;
		float z = x[2 * r * n + j], up = x[2 * r * n + n + j];
		y[i] = z / (1.0f + expf(-z)) * up;
	}
}

// swiglu_grad sets the gate's and up's gradients in dx's rows of 2n
// columns from g [rows, n]: (g·up)·σ·(1 + z·(1 − σ)) and g·silu(z).
GPUZ_KERNEL swiglu_grad(float *dx, const float *x, const float *g, long long total, int n) {
	GPUZ_FOR(i, total) {
		long long r = i / n;
		long long j = i - r * n;
		float z = x[2 * r * n + j], up = x[2 * r * n + n + j];
		float e = expf(-z);
		float sig = 1.0f / (1.0f + e);
		dx[2 * r * n + j] = g[i] * up * sig * (1.0f + z * (1.0f - sig));
		dx[2 * r * n + n + j] = g[i] * (z / (1.0f + e));
	}
}
