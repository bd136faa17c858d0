// The float32 element-wise kernels of package hostmath in C: LeakyReLU and
// its gradient, the sum of two arrays, a row vector added to every row and
// the sum of a matrix's rows. Each is a plain loop that the compiler
// vectorises, built twice, for AVX-512 and for the baseline, and chosen by
// the CPU's features; every element is computed exactly as the Go loops
// compute it (the same operations in the same order per element), so the
// results are those of the Go kernels, bar the subnormals that flush.h
// flushes. Go's compiler does not vectorise, and these loops ran at a
// quarter to a half of the memory's bandwidth in Go.
#include <stddef.h>

#include "flush.h"

// GPUZ_EW defines gpuz_NAME_f32 with the body BODY over the parameters
// PARAMS (called with ARGS): a copy built for AVX-512, one for the
// baseline, and the entry point that flushes subnormals and picks one.
#define GPUZ_EW(NAME, PARAMS, ARGS, BODY)                                                          \
	__attribute__((target("avx512f"))) static void gpuz_##NAME##_avx512 PARAMS BODY               \
	static void gpuz_##NAME##_base PARAMS BODY                                                     \
	static void gpuz_##NAME##_f32 PARAMS {                                                        \
		GPUZ_FLUSH_SUBNORMALS();                                                                   \
		if (__builtin_cpu_supports("avx512f"))                                                     \
			gpuz_##NAME##_avx512 ARGS;                                                             \
		else                                                                                       \
			gpuz_##NAME##_base ARGS;                                                               \
	}

// dst[i] = src[i] if it is positive, else slope·src[i].
GPUZ_EW(leaky, (float *dst, const float *src, size_t n, float slope), (dst, src, n, slope), {
	for (size_t i = 0; i < n; i++)
		dst[i] = src[i] > 0 ? src[i] : slope * src[i];
})

// dst[i] = g[i] where x[i] is positive, else slope·g[i].
GPUZ_EW(leaky_grad, (float *dst, const float *x, const float *g, size_t n, float slope), (dst, x, g, n, slope), {
	for (size_t i = 0; i < n; i++)
		dst[i] = x[i] > 0 ? g[i] : slope * g[i];
})

// dst[i] = a[i] + b[i]; dst may be a or b.
GPUZ_EW(add, (float *dst, const float *a, const float *b, size_t n), (dst, a, b, n), {
	for (size_t i = 0; i < n; i++)
		dst[i] = a[i] + b[i];
})

// m[r·cols + c] += v[c] for every row r < rows.
GPUZ_EW(add_row, (float *m, size_t rows, const float *v, size_t cols), (m, rows, v, cols), {
	for (size_t r = 0; r < rows; r++) {
		float *row = m + r * cols;
		for (size_t c = 0; c < cols; c++)
			row[c] += v[c];
	}
})

// dst[c] = Σ_r m[r·ld + c] for c < cols, added in row order from zero.
GPUZ_EW(sum_rows, (float *dst, const float *m, size_t rows, size_t cols, size_t ld), (dst, m, rows, cols, ld), {
	for (size_t c = 0; c < cols; c++)
		dst[c] = 0;
	for (size_t r = 0; r < rows; r++) {
		const float *row = m + r * ld;
		for (size_t c = 0; c < cols; c++)
			dst[c] += row[c];
	}
})

#undef GPUZ_EW
