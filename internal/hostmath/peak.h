// The machine's peaks, measured by package hostmath's benchmarks (see
// peak.go): an AVX-512 FMA loop and the STREAM triad.
#include <immintrin.h>
#include <stddef.h>

static int gpuz_peak_avx512(void) { return __builtin_cpu_supports("avx512f"); }

#pragma GCC push_options
#pragma GCC target("avx512f,fma")

// gpuz_fma_loop runs n steps of 16 independent 16-lane fused multiply-adds
// (2·16·16 FLOPs a step): enough chains to fill two FMA units of latency 4
// and more. It returns a value that depends on every result, so that the
// compiler keeps the work.
static float gpuz_fma_loop(long n) {
	__m512 acc[16];
	const __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(1e-3f);
	for (int i = 0; i < 16; i++)
		acc[i] = _mm512_set1_ps((float)i);
	for (long s = 0; s < n; s++) {
		_Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
	}
	__m512 sum = acc[0];
	for (int i = 1; i < 16; i++)
		sum = _mm512_add_ps(sum, acc[i]);
	return _mm512_reduce_add_ps(sum);
}

// gpuz_triad sets a[i] = b[i] + s·c[i] for i < n.
static void gpuz_triad(float *a, const float *b, const float *c, float s, size_t n) {
	for (size_t i = 0; i < n; i++)
		a[i] = b[i] + s * c[i];
}

#pragma GCC pop_options
