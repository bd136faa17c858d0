// Definitions shared by every kernel of gpuz, compiled first: by NVRTC for
// the GPU (__CUDACC__ defined) and by gcc through the CPU shim (shim.h
// included before this file) for the tests that run the same sources on the
// CPU.
//
// The kernels use one dimension of grid and block, dynamic shared memory,
// __syncthreads and one warp-level primitive, the butterfly shuffle of
// warp_sum: every reduction is a shared-memory tree over a power-of-two
// block with a barrier at each level, or warp_sum's butterfly over a warp
// of 32 threads, in an order fixed by the sizes alone, so that results are
// deterministic.

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
#define GPUZ_SHFL_XOR(v, mask) __shfl_xor_sync(0xffffffffu, (v), (mask))
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
#define GPUZ_SHFL_XOR(v, mask) gpuz_shfl_xor((v), (mask))
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

// GPUZ_WARP is the number of threads of a warp, which warp_sum reduces
// over; a block is a whole number of warps.
#define GPUZ_WARP 32

// warp_sum returns the sum of v over the 32 threads of the calling thread's
// warp to every one of them: a butterfly of shuffles, each thread adding
// its partner's value at distances 16, 8, 4, 2 and 1. Partners add the
// same two values, so every thread ends with the same sum. Every thread
// of the block must call it, the same number of times (the shim's shuffle
// is a barrier of the whole block).
GPUZ_DEVICE float warp_sum(float v) {
	for (int s = GPUZ_WARP / 2; s > 0; s /= 2) {
		v += GPUZ_SHFL_XOR(v, s);
	}
	return v;
}
