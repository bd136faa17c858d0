// Deterministic reductions in two launches: reduce_partial gives each block
// a fixed chunk of the input and writes the chunk's sum (in double) to
// partials[block]; reduce_final adds the partials in a fixed tree. The
// chunking depends only on n, never on the GPU.

// Operations of reduce_partial.
#define GPUZ_SUM 0          // Σ a
#define GPUZ_SUM_SQUARES 1  // Σ a²
#define GPUZ_SUM_SQ_DIFF 2  // Σ (a − b)², the difference taken in float32

// reduce_partial sets partials[block] to the op's sum over elements
// [block·chunk, (block+1)·chunk) of a (and b).
GPUZ_KERNEL reduce_partial(double *partials, const float *a, const float *b, long long n, long long chunk, int op) {
	GPUZ_SHARED(double, sh);
	long long lo = GPUZ_BID * chunk;
	long long hi = lo + chunk < n ? lo + chunk : n;
	double s = 0;
	for (long long i = lo + GPUZ_TID; i < hi; i += GPUZ_NTHREADS) {
		double x;
		if (op == GPUZ_SUM) {
			x = (double)a[i];
		} else if (op == GPUZ_SUM_SQUARES) {
			x = (double)a[i] * (double)a[i];
		} else {
			double d = (double)(a[i] - b[i]);
			x = d * d;
		}
		s += x;
	}
	s = block_sum(s, sh);
	if (GPUZ_TID == 0) {
		partials[GPUZ_BID] = s;
	}
}

// reduce_final adds parts partials; a single block. It sets result[0] to
// the sum and, when out is not null, out[0] to the sum divided by div.
GPUZ_KERNEL reduce_final(float *out, double *result, const double *partials, int parts, double div) {
	GPUZ_SHARED(double, sh);
	double s = 0;
	for (long long i = GPUZ_TID; i < parts; i += GPUZ_NTHREADS) {
		s += partials[i];
	}
	s = block_sum(s, sh);
	if (GPUZ_TID == 0) {
		result[0] = s;
		if (out != GPUZ_NULL) {
			out[0] = (float)(s / div);
		}
	}
}
