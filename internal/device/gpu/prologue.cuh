// Definitions shared by every kernel of gpuz, compiled first: by NVRTC for
// the GPU (__CUDACC__ defined) and by gcc through the CPU shim (shim.h
// included before this file) for the tests that run the same sources on the
// CPU.
//
// The kernels use one dimension of grid and block, dynamic shared memory,
// __syncthreads and nothing warp-level: every reduction is a shared-memory
// tree over a power-of-two block with a barrier at each level, in an order
// fixed by the sizes alone, so that results are deterministic.

#ifdef __CUDACC__
#define GPUZ_KERNEL extern "C" __global__ void
#define GPUZ_DEVICE static __device__ __forceinline__
#define GPUZ_SHARED(type, name) extern __shared__ type name[]
#define GPUZ_BARRIER() __syncthreads()
#define GPUZ_TID ((long long)threadIdx.x)
#define GPUZ_BID ((long long)blockIdx.x)
#define GPUZ_NTHREADS ((long long)blockDim.x)
#define GPUZ_NBLOCKS ((long long)gridDim.x)
#define GPUZ_NULL 0
#define GPUZ_NEG_INF (-__int_as_float(0x7f800000))
#define GPUZ_BITS(f) __float_as_uint(f)
#define GPUZ_FLOAT(u) __uint_as_float(u)
#else
#define GPUZ_KERNEL void
#define GPUZ_DEVICE static inline
#define GPUZ_SHARED(type, name) type *name = (type *)gpuz_shared()
#define GPUZ_BARRIER() gpuz_syncthreads()
#define GPUZ_TID ((long long)gpuz_thread_idx())
#define GPUZ_BID ((long long)gpuz_block_idx())
#define GPUZ_NTHREADS ((long long)gpuz_block_dim())
#define GPUZ_NBLOCKS ((long long)gpuz_grid_dim())
#define GPUZ_NULL ((void *)0)
#define GPUZ_NEG_INF (-__builtin_inff())
#define GPUZ_BITS(f) gpuz_bits(f)
#define GPUZ_FLOAT(u) gpuz_float(u)
static inline unsigned gpuz_bits(float f) {
	union { float f; unsigned u; } v = {.f = f};
	return v.u;
}
static inline float gpuz_float(unsigned u) {
	union { unsigned u; float f; } v = {.u = u};
	return v.f;
}
#endif

// Grid-stride loop over [0, n): every index visited once whatever the grid.
#define GPUZ_FOR(i, n) for (long long i = GPUZ_BID * GPUZ_NTHREADS + GPUZ_TID; i < (n); i += GPUZ_NBLOCKS * GPUZ_NTHREADS)

// block_sum returns the sum of every thread's v to every thread of the block:
// a tree over sh (blockDim doubles of shared memory), each level behind a
// barrier. blockDim must be a power of two.
GPUZ_DEVICE double block_sum(double v, double *sh) {
	long long t = GPUZ_TID;
	sh[t] = v;
	GPUZ_BARRIER();
	for (long long s = GPUZ_NTHREADS / 2; s > 0; s /= 2) {
		if (t < s) {
			sh[t] += sh[t + s];
		}
		GPUZ_BARRIER();
	}
	double r = sh[0];
	GPUZ_BARRIER(); // sh may be reused as soon as this returns
	return r;
}

// block_max returns the largest of every thread's v to every thread.
GPUZ_DEVICE float block_max(float v, double *sh) {
	long long t = GPUZ_TID;
	sh[t] = (double)v;
	GPUZ_BARRIER();
	for (long long s = GPUZ_NTHREADS / 2; s > 0; s /= 2) {
		if (t < s && sh[t + s] > sh[t]) {
			sh[t] = sh[t + s];
		}
		GPUZ_BARRIER();
	}
	float r = (float)sh[0];
	GPUZ_BARRIER();
	return r;
}
