// The CPU shim's view of a GPU thread, included before prologue.cuh when the
// kernels are compiled by gcc instead of NVRTC. Every thread of a block is a
// fiber (ucontext) on the calling OS thread; __syncthreads switches back to
// the scheduler, which resumes the block's threads once all have arrived.
// A warp shuffle is an exchange through memory between two such barriers.

#ifndef GPUZ_SHIM_H
#define GPUZ_SHIM_H

#include <math.h>
#include <stdint.h>

unsigned gpuz_thread_idx(void);
unsigned gpuz_block_idx(void);
unsigned gpuz_block_dim(void);
unsigned gpuz_grid_dim(void);
void *gpuz_shared(void);
void gpuz_syncthreads(void);
// gpuz_shfl_xor returns v of the thread whose index is the caller's XOR
// mask (mask below 32: a thread of the same warp), as __shfl_xor_sync does;
// every thread of the block must call it, since it waits at two barriers.
float gpuz_shfl_xor(float v, int mask);

// gpuz_shim_launch runs kernel name (parameters of the given kinds, one
// 8-byte value each in args) over grid blocks of block threads with shared
// bytes of shared memory, in an order: 0 forward, 1 reverse, 2 shuffled
// (from seed) — blocks in that order, and the threads of a block in that
// order at every barrier. It returns 0, or -1 with a message in err.
int gpuz_shim_launch(const char *name, const char *kinds, int grid, int block, int shared, const uint64_t *args,
		int order, uint64_t seed, char *err, int errlen);

// gpuz_shim_kernels writes the names and kinds of every kernel the shim
// knows, "name:kinds" separated by spaces, and returns its length.
int gpuz_shim_kernels(char *buf, int len);

#endif
