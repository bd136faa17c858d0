package main

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"syscall"

	"gpuz/internal/bench"
	"gpuz/internal/units"
)

// addressSpaceLimit returns the soft address-space limit (RLIMIT_AS,
// ulimit -v) in bytes, and false when there is none.
func addressSpaceLimit() (int64, bool) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &r); err != nil || r.Cur >= math.MaxInt64 {
		return 0, false
	}
	return int64(r.Cur), true
}

// checkStartAddressSpace refuses to start under an address-space limit
// below what the Go runtime with procs processors (GOMAXPROCS) and the
// BLAS's threads need on this machine (bench.RuntimeHeadroomWith): the
// runtime cannot recover from a thread or an arena it fails to map, and
// would abort with a goroutine dump or spin in a GC pause later. A cgo
// build has made this check before the runtime started, in the
// constructor of prestart_cgo.go, with as many processors or more; in a
// build without cgo, main's call is the first there can be.
func checkStartAddressSpace(procs int) error {
	limit, ok := addressSpaceLimit()
	return addressSpaceError(limit, ok, 0, bench.RuntimeHeadroomWith(0, procs), runtime.NumCPU(), procs)
}

// addressSpaceError is the one-line error for an address-space limit
// (limited: there is one) below a need of workload bytes for the run's
// least mode and headroom for the runtime with procs processors
// (GOMAXPROCS) and threads BLAS threads, or nil when it fits. A
// GOMAXPROCS above the CPUs, which only adds the runtime's threads, is
// named with the advice to lower it.
func addressSpaceError(limit int64, limited bool, workload, headroom int64, threads, procs int) error {
	if !limited || limit >= workload+headroom {
		return nil
	}
	blas := max(threads, runtime.NumCPU())
	runtimeText, advice := "the Go runtime", "raise the limit"
	if procs > runtime.NumCPU() {
		runtimeText = fmt.Sprintf("the Go runtime with GOMAXPROCS=%d", procs)
		advice = fmt.Sprintf("raise the limit, or lower GOMAXPROCS (this machine has %d CPUs)", runtime.NumCPU())
	}
	if workload == 0 {
		return fmt.Errorf("the address-space limit (ulimit -v) is %s; gpuz needs at least %s here for %s and %d BLAS threads; %s",
			units.Bytes(limit), units.Bytes(headroom), runtimeText, blas, advice)
	}
	return fmt.Errorf("the address-space limit (ulimit -v) is %s; this run needs %s: %s for the host memory of its least mode and %s for %s and %d BLAS threads; %s, or run less (--scale small, fewer --threads)",
		units.Bytes(limit), units.Bytes(workload+headroom), units.Bytes(workload), units.Bytes(headroom), runtimeText, blas, advice)
}

// checkRunAddressSpace refuses, before anything runs, a run that could
// run nothing under the address-space limit: its least mode's planned
// host memory (bench.AddressSpaceNeed), the least over its
// configurations, and the runtime's headroom exceed the limit. Within
// it, a mode beyond the limit is skipped as it starts, its row saying
// why, and the others run, as without a limit a mode beyond the host's
// memory is. Without a limit it plans nothing.
func checkRunAddressSpace(ctx context.Context, configs ...bench.Options) error {
	limit, ok := addressSpaceLimit()
	if !ok {
		return nil
	}
	need := int64(-1)
	threads := 0
	for _, opts := range configs {
		var n int64
		var err error
		if !untilDone(ctx, func() { n, err = bench.AddressSpaceNeed(opts) }) {
			return errInterrupted
		}
		if err != nil {
			return err
		}
		if need < 0 || n < need {
			need, threads = n, opts.Threads
		}
	}
	headroom := bench.RuntimeHeadroom(threads)
	return addressSpaceError(limit, true, need-headroom, headroom, threads, runtime.GOMAXPROCS(0))
}
