//go:build cgo

package main

// Under an address-space limit (ulimit -v) too small for the Go runtime
// and the BLAS's threads, the runtime fails as it starts, before any of
// gpuz's Go code runs: "runtime: out of memory: cannot allocate
// 4194304-byte block" at its first heap arena, "failed to reserve page
// summary memory", or "runtime/cgo: pthread_create failed" with a
// goroutine dump for a GOMAXPROCS whose mark workers' threads do not fit
// (the first garbage collection, before main, starts a quarter of them).
// Where it fails depends on the threads that OpenBLAS and glibc's malloc
// arenas took first, which a loaded machine changes. So the check comes
// first: this constructor runs when the program is loaded, after the
// shared libraries' (OpenBLAS starts its threads in its own) and before
// the Go runtime starts, and refuses a limit below the runtime's
// headroom with gpuz's one line and status 1 (exitFailure), the same
// line as main's checkStartAddressSpace, which a build without cgo runs
// instead.
//
// The headroom is bench.RuntimeHeadroomWith's, with no BLAS threads
// asked for (one per CPU) and the processors the runtime will start:
// GOMAXPROCS as the runtime reads it, else the CPUs' count, which is at
// least the runtime's default (a cgroup's CPU quota lowers that).
// TestPrestartMatchesMain pins the constants and the line to the Go
// code's.

/*
#define _GNU_SOURCE
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

// bench.RuntimeHeadroomWith's constants (internal/bench/addrspace.go).
#define HEADROOM_BASE (1792LL << 20)
#define HEADROOM_PER_THREAD (160LL << 20)
#define HEADROOM_PER_P (64LL << 20)
#define ARENAS_PER_CPU 8LL
#define MARK_WORKER_STACK (8LL << 20)

// gpuz_headroom is bench.RuntimeHeadroomWith(0, procs) on cpus CPUs.
static long long gpuz_headroom(long long procs, long long cpus) {
	long long arenas = procs < ARENAS_PER_CPU * cpus ? procs : ARENAS_PER_CPU * cpus;
	return HEADROOM_BASE + cpus * HEADROOM_PER_THREAD + arenas * HEADROOM_PER_P +
		(procs - arenas + 3) / 4 * MARK_WORKER_STACK;
}

// gpuz_bytes writes n bytes as units.Bytes does: three significant
// digits in binary units, exact under 1 KiB.
static void gpuz_bytes(char *buf, size_t size, long long n) {
	static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	if (n < 1024) {
		snprintf(buf, size, "%lld B", n);
		return;
	}
	double v = (double)n;
	int i = 0;
	while (v >= 1023.5 && i < 6) {
		v /= 1024;
		i++;
	}
	char e[32];
	snprintf(e, sizeof e, "%.2e", v); // the exponent once rounded to three digits
	int digits = 2 - atoi(strchr(e, 'e') + 1);
	snprintf(buf, size, "%.*f %s", digits < 0 ? 0 : digits, v, units[i]);
}

// gpuz_start_refusal writes into buf main's line (addressSpaceError with
// no workload) for an address-space limit of limit bytes, the runtime's
// procs processors and cpus CPUs, and returns 1; it returns 0, buf left
// as it was, when the headroom fits.
static int gpuz_start_refusal(char *buf, size_t size, long long limit, long long procs, long long cpus) {
	long long need = gpuz_headroom(procs, cpus);
	if (limit >= need) {
		return 0;
	}
	char have[32], want[32], runtime[64], advice[96];
	gpuz_bytes(have, sizeof have, limit);
	gpuz_bytes(want, sizeof want, need);
	snprintf(runtime, sizeof runtime, "the Go runtime");
	snprintf(advice, sizeof advice, "raise the limit");
	if (procs > cpus) {
		snprintf(runtime, sizeof runtime, "the Go runtime with GOMAXPROCS=%lld", procs);
		snprintf(advice, sizeof advice, "raise the limit, or lower GOMAXPROCS (this machine has %lld CPUs)", cpus);
	}
	snprintf(buf, size, "the address-space limit (ulimit -v) is %s; gpuz needs at least %s here for %s and %lld BLAS threads; %s",
		have, want, runtime, cpus, advice);
	return 1;
}

// gpuz_procs is the processors the runtime starts with, or more: the
// GOMAXPROCS it reads (strconv.ParseInt's syntax, a positive int32),
// else the CPUs' count.
static long long gpuz_procs(long long cpus) {
	const char *s = getenv("GOMAXPROCS");
	if (s == NULL) {
		return cpus;
	}
	const char *digits = *s == '+' ? s + 1 : s;
	if (*digits == '\0' || strlen(digits) > 10 || strspn(digits, "0123456789") != strlen(digits)) {
		return cpus; // not a number the runtime reads: it ignores it
	}
	long long n = strtoll(digits, NULL, 10);
	if (n < 1 || n > INT_MAX) {
		return cpus; // the runtime ignores it
	}
	return n;
}

__attribute__((constructor)) static void gpuz_check_address_space(void) {
	struct rlimit r;
	if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= (rlim_t)LLONG_MAX) {
		return;
	}
	cpu_set_t set;
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < 1) {
		return; // main's check, with the runtime's count
	}
	long long cpus = CPU_COUNT(&set);
	char line[512];
	if (!gpuz_start_refusal(line, sizeof line, (long long)r.rlim_cur, gpuz_procs(cpus), cpus)) {
		return;
	}
	char out[sizeof line + 8];
	int n = snprintf(out, sizeof out, "gpuz: %s\n", line);
	if (write(2, out, n) < 0) {
		// nothing more to say where stderr is gone
	}
	_exit(1); // exitFailure
}

// gpuz_start_refusal_for_go is gpuz_start_refusal into a static buffer,
// "" when the headroom fits.
static const char *gpuz_start_refusal_for_go(long long limit, long long procs, long long cpus) {
	static char line[512];
	line[0] = '\0';
	gpuz_start_refusal(line, sizeof line, limit, procs, cpus);
	return line;
}
*/
import "C"

// prestartRefusal returns the line the constructor prints for an
// address-space limit of limit bytes with procs processors on cpus CPUs,
// "" when it lets the runtime start: for the tests, which cannot call C
// themselves.
func prestartRefusal(limit int64, procs, cpus int) string {
	return C.GoString(C.gpuz_start_refusal_for_go(C.longlong(limit), C.longlong(procs), C.longlong(cpus)))
}
