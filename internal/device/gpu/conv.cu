// Convolution pieces: the driver computes a stride-1 NCHW convolution as
// im2col then one GEMM per image and tile of output rows (cuBLAS), and the
// input gradient as the convolution of the output gradient with the flipped,
// transposed weights.

// im2col writes the column matrix of output rows [y0, y1) of one image x
// (in_c × in_h × in_w): cols has in_c·k·k rows of width = (y1−y0)·out_w
// elements, cols[(c·k + ky)·k + kx][(y−y0)·out_w + ox] = x[c][y+ky−pad][ox+kx−pad],
// zero outside the input.
GPUZ_KERNEL im2col(float *cols, const float *x, int in_c, int in_h, int in_w, int k, int pad, int out_w, int y0, int y1) {
	long long width = (long long)(y1 - y0) * out_w;
	long long n = (long long)in_c * k * k * width;
	GPUZ_FOR(i, n) {
		long long row = i / width, col = i % width;
		int kx = (int)(row % k), ky = (int)(row / k % k), c = (int)(row / k / k);
		int oy = y0 + (int)(col / out_w), ox = (int)(col % out_w);
		int iy = oy + ky - pad, ix = ox + kx - pad;
		float v = 0;
		if (iy >= 0 && iy < in_h && ix >= 0 && ix < in_w) {
			v = x[((long long)c * in_h + iy) * in_w + ix];
		}
		cols[i] = v;
	}
}

// flip_weights sets dst [in_c, out_c, k, k] to w [out_c, in_c, k, k] with
// each k×k kernel rotated by 180°.
GPUZ_KERNEL flip_weights(float *dst, const float *w, int out_c, int in_c, int k) {
	long long kk = (long long)k * k;
	long long n = (long long)out_c * in_c * kk;
	GPUZ_FOR(i, n) {
		long long j = i % kk, oc = i / kk;
		long long o = oc / in_c, c = oc % in_c;
		dst[(c * out_c + o) * kk + (kk - 1 - j)] = w[i];
	}
}

// bias_grad sets db[o] to the sum of g over images and positions of
// channel o: one block per channel, a fixed tree.
GPUZ_KERNEL bias_grad(float *db, const float *g, int batch, int channels, long long plane) {
	GPUZ_SHARED(double, sh);
	long long o = GPUZ_BID;
	double s = 0;
	for (long long img = 0; img < batch; img++) {
		const float *src = g + (img * channels + o) * plane;
		for (long long i = GPUZ_TID; i < plane; i += GPUZ_NTHREADS) {
			s += (double)src[i];
		}
	}
	s = block_sum(s, sh);
	if (GPUZ_TID == 0) {
		db[o] = (float)s;
	}
}
