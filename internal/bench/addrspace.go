package bench

import (
	"fmt"
	"math"
	"runtime"
	"syscall"

	"gpuz/internal/units"
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
// with 8 BLAS threads (about 140 MiB a thread); 2740 MiB with GOMAXPROCS
// 64, 3130 MiB with 256 and 4680 MiB with 1000. `gpuz version` and
// `gpuz plot` needed 1750 MiB (GOMAXPROCS 2 to 64), 3010 MiB (256) and
// 4530 MiB (1000). The headroom below is those figures with a margin of
// 9 % or more at each point measured.
//
// What a processor costs levels off: a thread that allocates from C gets
// a malloc arena of its own (64 MiB reserved), but glibc makes at most 8
// per CPU, and past them what grows is the threads' stacks. The garbage
// collector starts a quarter of GOMAXPROCS as dedicated mark workers,
// each on a thread with the 8 MiB stack a cgo binary's threads get
// (measured: 257 threads at GOMAXPROCS 1000, 73 at 256, on 2 CPUs).
const (
	headroomBase      = 1792 << 20 // 1.75 GiB
	headroomPerThread = 160 << 20  // a BLAS thread
	headroomPerP      = 64 << 20   // a GOMAXPROCS processor, up to the malloc arenas' cap
	arenasPerCPU      = 8          // glibc's cap on malloc arenas, per CPU (64-bit)
	markWorkerStack   = 8 << 20    // the stack of a mark worker's thread
)

// RuntimeHeadroom is the address space a gpuz process needs besides its
// workload's memory with threads BLAS threads (OpenBLAS starts one per CPU
// when it loads, so never fewer than runtime.NumCPU) and the runtime's
// GOMAXPROCS.
func RuntimeHeadroom(threads int) int64 {
	return RuntimeHeadroomWith(threads, runtime.GOMAXPROCS(0))
}

// RuntimeHeadroomWith is RuntimeHeadroom with procs processors
// (GOMAXPROCS) rather than the runtime's present setting.
func RuntimeHeadroomWith(threads, procs int) int64 {
	cpus := runtime.NumCPU()
	blas := max(threads, cpus)
	return headroomBase + int64(blas)*headroomPerThread + procsHeadroom(procs, cpus)
}

// procsHeadroom is what procs processors cost on cpus CPUs: an arena and
// a thread each up to glibc's cap on arenas, and past it a mark worker's
// stack for each quarter of a processor (rounded up).
func procsHeadroom(procs, cpus int) int64 {
	arenas := min(procs, arenasPerCPU*cpus)
	return int64(arenas)*headroomPerP + int64((procs-arenas+3)/4)*markWorkerStack
}

// AddressSpaceNeed is the address space the least of a run's modes
// needs: the smallest host need of its modes' plans that are whole
// (PlanMemory: the data set and each mode's host memory, a simulated
// device's included; the data set alone when none is) plus
// RuntimeHeadroom. Under an address-space limit below it the run can do
// nothing, and is refused before anything runs; a mode of a run within
// it whose own need is beyond the limit is skipped when it starts, its
// row saying why, and the others run (addressSpaceShortfall), as a mode
// beyond the host's memory is.
func AddressSpaceNeed(opts Options) (int64, error) {
	p, err := PlanMemory(opts, PlanOptions{})
	if err != nil {
		return 0, fmt.Errorf("planning the host memory: %w", err)
	}
	least := int64(-1)
	for _, m := range p.Modes {
		if m.Status.Kind == StatusOK && (least < 0 || m.HostNeed < least) {
			least = m.HostNeed
		}
	}
	if least < 0 {
		least = p.Header.DataBytes
	}
	return least + RuntimeHeadroom(opts.Threads), nil
}

// addressSpaceShortfall says why a mode whose host need is need bytes
// cannot run under the process's address-space limit (RLIMIT_AS, ulimit
// -v) beside the runtime's headroom with threads BLAS threads, or "" when
// it can or there is no limit: the rule of AddressSpaceNeed, mode by
// mode.
func addressSpaceShortfall(need int64, threads int) string {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &r); err != nil || r.Cur >= math.MaxInt64 {
		return ""
	}
	headroom := RuntimeHeadroom(threads)
	if need+headroom <= int64(r.Cur) {
		return ""
	}
	return fmt.Sprintf("needs %s of host memory and %s for the Go runtime and its threads, beyond the address-space limit (ulimit -v) of %s",
		units.Bytes(need), units.Bytes(headroom), units.Bytes(int64(r.Cur)))
}
