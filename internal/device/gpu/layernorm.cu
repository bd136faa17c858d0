// Layer normalisation over rows of cols elements, one block per row for the
// row-wise kernels. Statistics are accumulated in double, as on the host.

// row_moments returns a row's mean and 1/√(var + eps), the variance biased,
// from two passes over the row.
GPUZ_DEVICE void row_moments(const float *x, int cols, double eps, double *sh, float *mean, float *rstd) {
	double s = 0;
	for (long long i = GPUZ_TID; i < cols; i += GPUZ_NTHREADS) {
		s += (double)x[i];
	}
	double m = block_sum(s, sh) / cols;
	double ss = 0;
	for (long long i = GPUZ_TID; i < cols; i += GPUZ_NTHREADS) {
		double d = (double)x[i] - m;
		ss += d * d;
	}
	ss = block_sum(ss, sh);
	*mean = (float)m;
	*rstd = (float)(1.0 / sqrt(ss / cols + eps));
}

// layer_norm sets y = (x − mean)·rstd·gamma + beta per row.
GPUZ_KERNEL layer_norm(float *y, const float *x, const float *gamma, const float *beta, int cols, double eps) {
	GPUZ_SHARED(double, sh);
	const float *xr = x + GPUZ_BID * cols;
	float *yr = y + GPUZ_BID * cols;
	float mean, rstd;
	row_moments(xr, cols, eps, sh, &mean, &rstd);
	for (long long i = GPUZ_TID; i < cols; i += GPUZ_NTHREADS) {
		yr[i] = (xr[i] - mean) * rstd * gamma[i] + beta[i];
	}
}

// layer_norm_input_grad sets dx = (ĝ − mean(ĝ) − x̂·mean(ĝ ⊙ x̂))·rstd per
// row, ĝ = g ⊙ gamma.
GPUZ_KERNEL layer_norm_input_grad(float *dx, const float *x, const float *gamma, const float *g, int cols, double eps) {
	GPUZ_SHARED(double, sh);
	const float *xr = x + GPUZ_BID * cols;
	const float *gr = g + GPUZ_BID * cols;
	float *dr = dx + GPUZ_BID * cols;
	float mean, rstd;
	row_moments(xr, cols, eps, sh, &mean, &rstd);
	double sg = 0, sgx = 0;
	for (long long i = GPUZ_TID; i < cols; i += GPUZ_NTHREADS) {
		double gh = (double)(gr[i] * gamma[i]);
		sg += gh;
		sgx += gh * (double)((xr[i] - mean) * rstd);
	}
	sg = block_sum(sg, sh);
	sgx = block_sum(sgx, sh);
	float mg = (float)(sg / cols), mgx = (float)(sgx / cols);
	for (long long i = GPUZ_TID; i < cols; i += GPUZ_NTHREADS) {
		float xh = (xr[i] - mean) * rstd;
		dr[i] = (gr[i] * gamma[i] - mg - xh * mgx) * rstd;
	}
}

// row_stats sets stats[2r], stats[2r+1] to row r's mean and rstd.
GPUZ_KERNEL row_stats(float *stats, const float *x, int cols, double eps) {
	GPUZ_SHARED(double, sh);
	float mean, rstd;
	row_moments(x + GPUZ_BID * cols, cols, eps, sh, &mean, &rstd);
	if (GPUZ_TID == 0) {
		stats[2 * GPUZ_BID] = mean;
		stats[2 * GPUZ_BID + 1] = rstd;
	}
}

// layer_norm_weight_grad sets dgamma[c] to the sum over rows of g ⊙ x̂ in
// column c, one thread per column adding the rows in order.
GPUZ_KERNEL layer_norm_weight_grad(float *dgamma, const float *x, const float *g, const float *stats, int rows, int cols) {
	GPUZ_FOR(c, cols) {
		double s = 0;
		for (long long r = 0; r < rows; r++) {
			long long i = r * cols + c;
			s += (double)(g[i] * ((x[i] - stats[2 * r]) * stats[2 * r + 1]));
		}
		dgamma[c] = (float)s;
	}
}
