package bench

import (
	"fmt"
	"runtime"
)

// The address space a gpuz process needs besides the memory its workload
// plans: what the Go runtime reserves for its heap and the threads it
// starts (GC workers, threads for cgo calls), and what the BLAS's threads
// reserve (each a stack and a malloc arena, OpenBLAS a buffer). An
// address-space limit (RLIMIT_AS, ulimit -v) below it does not fail
// cleanly: the runtime aborts in pthread_create with a goroutine dump,
// fails "out of memory allocating heap arena map", or spins in a GC pause
// ignoring signals.
//
// Measured on a 2-CPU host (go1.26, OpenBLAS 0.3.21), as the least
// ulimit -v above which every try of `gpuz linear train cpu --scale small`
// worked (below it, results alternate: the runtime falls back to smaller
// reservations where the layout allows): 2000 MiB with 2 BLAS threads and
// GOMAXPROCS 2; 2300 MiB with GOMAXPROCS 8 (about 50 MiB a P); 2850 MiB
// with 8 BLAS threads (about 140 MiB a thread). `gpuz version` and
// `gpuz plot` needed 1750 MiB. The headroom below is those figures with
// a margin of 12 % or more at each point measured.
const (
	headroomBase      = 1792 << 20 // 1.75 GiB
	headroomPerThread = 160 << 20  // a BLAS thread
	headroomPerP      = 64 << 20   // a GOMAXPROCS processor
)

// RuntimeHeadroom is the address space a gpuz process needs besides its
// workload's memory with threads BLAS threads (OpenBLAS starts one per CPU
// when it loads, so never fewer than runtime.NumCPU) and the runtime's
// GOMAXPROCS.
func RuntimeHeadroom(threads int) int64 {
	blas := max(threads, runtime.NumCPU())
	return headroomBase + int64(blas)*headroomPerThread + int64(runtime.GOMAXPROCS(0))*headroomPerP
}

// AddressSpaceNeed is the address space a run of opts needs: the largest
// host need of its modes' plans (PlanMemory: the data set and each mode's
// host memory, a simulated device's included) plus RuntimeHeadroom. The
// modes run one after another and the Go runtime reuses its heap's
// address space, so the largest mode counts, not their sum.
func AddressSpaceNeed(opts Options) (int64, error) {
	p, err := PlanMemory(opts, PlanOptions{})
	if err != nil {
		return 0, fmt.Errorf("planning the host memory: %w", err)
	}
	var largest int64
	for _, m := range p.Modes {
		largest = max(largest, m.HostNeed)
	}
	return largest + RuntimeHeadroom(opts.Threads), nil
}
