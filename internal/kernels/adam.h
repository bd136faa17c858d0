// The float32 Adam update of package kernels, written in C so that the
// compiler vectorises the square root and the division. The arithmetic is
// the same as adamGo's, operation for operation.
#include <math.h>

// sqrtf need not set errno (its argument is never negative here), which lets
// the compiler use the vector square root.
#pragma GCC optimize("no-math-errno")
// No contraction into fused multiply-adds: every operation rounds as in Go.
#pragma GCC optimize("fp-contract=off")
#include <stddef.h>

__attribute__((target_clones("avx512f", "avx2", "default")))
static void gpuz_adam_f32(float *restrict p, const float *restrict g, float *restrict m,
                          float *restrict v, size_t n, float scale, float beta1, float beta2,
                          float one_minus_beta1, float one_minus_beta2, float step_size,
                          float correction2_sqrt, float eps) {
	for (size_t i = 0; i < n; i++) {
		float gi = g[i] * scale;
		float mi = m[i] * beta1 + gi * one_minus_beta1;
		float vi = v[i] * beta2 + gi * gi * one_minus_beta2;
		m[i] = mi;
		v[i] = vi;
		float denom = sqrtf(vi) / correction2_sqrt + eps;
		p[i] -= step_size * (mi / denom);
	}
}
