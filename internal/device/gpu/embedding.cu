// Embedding lookup and its gradient. Ids are row numbers stored as floats;
// the driver checks them before launching.

// embedding sets row r of y (d columns, n elements in all) to row ids[r] of
// weight plus row r mod seq of positions.
GPUZ_KERNEL embedding(float *y, const float *ids, const float *weight, const float *positions, long long n, int d, int seq) {
	GPUZ_FOR(o, n) {
		long long r = o / d, i = o % d;
		y[o] = weight[(long long)ids[r] * d + i] + positions[(r % seq) * d + i];
	}
}

// embedding_grad sets dweight (n elements, rows of d) from the output
// gradient g: element i of row v is the sum, in token order, of element i
// of the rows of g whose token has id v. The tokens of id v are
// tokens[offsets[v]], …, tokens[offsets[v+1]−1], in increasing order (the
// driver builds the lists), so no two threads write one element and the
// order of the additions is the host's.
GPUZ_KERNEL embedding_grad(float *dweight, const int *offsets, const int *tokens, const float *g, long long n, int d) {
	GPUZ_FOR(o, n) {
		long long v = o / d, i = o % d;
		float s = 0;
		for (int j = offsets[v]; j < offsets[v + 1]; j++) {
			s += g[(long long)tokens[j] * d + i];
		}
		dweight[o] = s;
	}
}
