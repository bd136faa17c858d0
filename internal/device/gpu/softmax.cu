// Softmax cross-entropy, one block per row of logits. Targets are class ids
// stored as floats; the driver checks them before launching.

// row_max_sumexp returns, to every thread of the block, the sum of
// exp(x[i] − m) in double over the classes of row x, m being the row's
// maximum, which it stores in *rmax.
GPUZ_DEVICE double row_max_sumexp(const float *x, int classes, double *sh, float *rmax) {
	float m = GPUZ_NEG_INF;
	for (long long i = GPUZ_TID; i < classes; i += GPUZ_NTHREADS) {
		m = fmaxf(m, x[i]);
	}
	m = block_max(m, sh);
	double s = 0;
	for (long long i = GPUZ_TID; i < classes; i += GPUZ_NTHREADS) {
		s += (double)expf(x[i] - m);
	}
	*rmax = m;
	return block_sum(s, sh);
}

// xent_rows sets rowloss[r] = logsumexp(row r) − row r[target r], in double,
// the maximum subtracted before exponentiating.
GPUZ_KERNEL xent_rows(double *rowloss, const float *logits, const float *targets, int classes) {
	GPUZ_SHARED(double, sh);
	const float *x = logits + GPUZ_BID * classes;
	float m;
	double s = row_max_sumexp(x, classes, sh, &m);
	if (GPUZ_TID == 0) {
		rowloss[GPUZ_BID] = (double)m + log(s) - (double)x[(int)targets[GPUZ_BID]];
	}
}

// xent_grad sets row r of dst to (softmax(row r) − onehot(target r)) ·
// seed[0] / rows.
GPUZ_KERNEL xent_grad(float *dst, const float *logits, const float *targets, const float *seed, int rows, int classes) {
	GPUZ_SHARED(double, sh);
	const float *x = logits + GPUZ_BID * classes;
	float *d = dst + GPUZ_BID * classes;
	float m;
	double s = row_max_sumexp(x, classes, sh, &m);
	float scale = seed[0] / (float)rows;
	float k = scale * (float)(1.0 / s);
	for (long long i = GPUZ_TID; i < classes; i += GPUZ_NTHREADS) {
		d[i] = expf(x[i] - m) * k;
	}
	GPUZ_BARRIER();
	if (GPUZ_TID == 0) {
		d[(int)targets[GPUZ_BID]] -= scale;
	}
}
