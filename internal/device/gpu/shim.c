//go:build !gpuzcuda && cgo

// The CPU shim: gpuz's CUDA C kernels compiled by gcc and run with one fiber
// per GPU thread, so that __syncthreads is a real barrier.

// No fused multiply-add, as the GPU build (NVRTC --fmad=false) and the host.
#pragma GCC optimize("fp-contract=off")

#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "shim.h"
#include "shimthunks.h" // the kernel sources and KERNELS, generated (make generate)

enum { RUNNABLE, AT_BARRIER, DONE };

typedef struct {
	ucontext_t ctx;
	unsigned tid;
	int state;
} fiber;

#define STACK_BYTES (64 * 1024)
#define MAX_BLOCK 1024

static fiber fibers[MAX_BLOCK];
static char *stacks;
static ucontext_t scheduler;
static fiber *current;
static unsigned block_idx, block_dim, grid_dim;
static void *shared_mem;
static size_t shared_cap;
static void (*thunk)(const uint64_t *);
static const uint64_t *thunk_args;

unsigned gpuz_thread_idx(void) { return current->tid; }
unsigned gpuz_block_idx(void) { return block_idx; }
unsigned gpuz_block_dim(void) { return block_dim; }
unsigned gpuz_grid_dim(void) { return grid_dim; }
void *gpuz_shared(void) { return shared_mem; }

void gpuz_syncthreads(void) {
	current->state = AT_BARRIER;
	swapcontext(&current->ctx, &scheduler);
}

// exchange holds each thread's value during a shuffle (gpuz_shfl_xor).
static float exchange[MAX_BLOCK];

float gpuz_shfl_xor(float v, int mask) {
	unsigned t = current->tid;
	exchange[t] = v;
	gpuz_syncthreads();
	float r = exchange[t ^ (unsigned)mask];
	gpuz_syncthreads(); // exchange may be written again as soon as this returns
	return r;
}

static void fiber_main(void) {
	thunk(thunk_args);
	current->state = DONE; // returning resumes the scheduler (uc_link)
}

static float f32(uint64_t bits) {
	uint32_t b = (uint32_t)bits;
	float f;
	memcpy(&f, &b, 4);
	return f;
}

static double f64(uint64_t bits) {
	double d;
	memcpy(&d, &bits, 8);
	return d;
}

#define P(i) ((void *)(uintptr_t)a[i])
#define I(i) ((int)(int32_t)(uint32_t)a[i])
#define L(i) ((long long)a[i])
#define F(i) f32(a[i])
#define D(i) f64(a[i])

// One thunk per kernel of KERNELS (shimthunks.h): the call with each
// argument read as its kind.
#define THUNK(name, kinds, call) \
	static void thunk_##name(const uint64_t *a) { call; }
KERNELS(THUNK)

static const struct {
	const char *name, *kinds;
	void (*fn)(const uint64_t *);
} table[] = {
#define ENTRY(name, kinds, call) {#name, kinds, thunk_##name},
	KERNELS(ENTRY)
};

int gpuz_shim_kernels(char *buf, int len) {
	int n = 0;
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
		n += snprintf(buf + (n < len ? n : len), n < len ? (size_t)(len - n) : 0, "%s%s:%s", i ? " " : "", table[i].name, table[i].kinds);
	}
	return n;
}

// next is a small deterministic generator for the shuffled order.
static uint64_t next(uint64_t *s) {
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

// arrange fills ord with 0…n−1 in the given order.
static void arrange(unsigned *ord, unsigned n, int order, uint64_t *seed) {
	for (unsigned i = 0; i < n; i++) {
		ord[i] = order == 1 ? n - 1 - i : i;
	}
	if (order == 2) {
		for (unsigned i = n; i > 1; i--) {
			unsigned j = (unsigned)(next(seed) % i);
			unsigned t = ord[i - 1];
			ord[i - 1] = ord[j];
			ord[j] = t;
		}
	}
}

int gpuz_shim_launch(const char *name, const char *kinds, int grid, int block, int shared, const uint64_t *args,
		int order, uint64_t seed, char *err, int errlen) {
	size_t k = 0, nk = sizeof table / sizeof table[0];
	while (k < nk && strcmp(table[k].name, name) != 0) {
		k++;
	}
	if (k == nk) {
		snprintf(err, (size_t)errlen, "shim: no kernel %s", name);
		return -1;
	}
	if (strcmp(table[k].kinds, kinds) != 0) {
		snprintf(err, (size_t)errlen, "shim: kernel %s takes %s, launched with %s", name, table[k].kinds, kinds);
		return -1;
	}
	if (grid < 1 || block < 1 || block > MAX_BLOCK || shared < 0) {
		snprintf(err, (size_t)errlen, "shim: kernel %s: bad launch grid %d block %d shared %d", name, grid, block, shared);
		return -1;
	}
	if (stacks == NULL) {
		stacks = mmap(NULL, (size_t)MAX_BLOCK * STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (stacks == MAP_FAILED) {
			stacks = NULL;
			snprintf(err, (size_t)errlen, "shim: cannot map fiber stacks");
			return -1;
		}
	}
	if ((size_t)shared > shared_cap) {
		free(shared_mem);
		shared_mem = malloc((size_t)shared);
		shared_cap = (size_t)shared;
	}
	thunk = table[k].fn;
	thunk_args = args;
	grid_dim = (unsigned)grid;
	block_dim = (unsigned)block;
	if (seed == 0) {
		seed = 0x9e3779b97f4a7c15ULL;
	}
	unsigned *blocks = malloc((size_t)grid * sizeof *blocks);
	unsigned threads[MAX_BLOCK];
	arrange(blocks, (unsigned)grid, order, &seed);
	int rc = 0;
	for (int bi = 0; bi < grid && rc == 0; bi++) {
		block_idx = blocks[bi];
		// Shared memory starts as NaN, as a marker of reads before writes.
		memset(shared_mem, 0xff, (size_t)shared);
		for (int t = 0; t < block; t++) {
			fiber *f = &fibers[t];
			f->tid = (unsigned)t;
			f->state = RUNNABLE;
			getcontext(&f->ctx);
			f->ctx.uc_stack.ss_sp = stacks + (size_t)t * STACK_BYTES;
			f->ctx.uc_stack.ss_size = STACK_BYTES;
			f->ctx.uc_link = &scheduler;
			makecontext(&f->ctx, fiber_main, 0);
		}
		for (;;) {
			arrange(threads, (unsigned)block, order, &seed);
			for (int i = 0; i < block; i++) {
				fiber *f = &fibers[threads[i]];
				if (f->state == RUNNABLE) {
					current = f;
					swapcontext(&scheduler, &f->ctx);
				}
			}
			int done = 0, waiting = 0;
			for (int t = 0; t < block; t++) {
				done += fibers[t].state == DONE;
				waiting += fibers[t].state == AT_BARRIER;
			}
			if (done == block) {
				break;
			}
			if (done > 0) {
				snprintf(err, (size_t)errlen, "shim: kernel %s block %u: %d threads returned while %d wait at __syncthreads",
						name, block_idx, done, waiting);
				rc = -1;
				break;
			}
			for (int t = 0; t < block; t++) {
				fibers[t].state = RUNNABLE;
			}
		}
	}
	free(blocks);
	return rc;
}
