//go:build cgo

package main

// The Go runtime starts a processor for each of GOMAXPROCS before main,
// and its first garbage collection, which comes before main too, starts
// a quarter of them as mark workers, each on a thread of its own with
// the C stack a cgo binary's threads get (8 MiB). Under an address-space
// limit (ulimit -v) that leaves no room for them, the runtime aborts with
// a goroutine dump before any of gpuz's code runs (`GOMAXPROCS=1000` under
// `ulimit -v 3000000`, even `gpuz version`). So, before the runtime
// starts, this constructor lowers a GOMAXPROCS above the CPUs to their
// count, under such a limit only, and keeps the user's value; main gives
// it back (restoreGOMAXPROCS) once it has checked that the runtime's
// headroom with that many processors fits the limit, and refuses in one
// line when it does not.

/*
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

// gpuz_gomaxprocs_requested is the GOMAXPROCS the constructor lowered,
// "" when it lowered none. Go reads the environment from the array the
// process started with, where setenv replaces an existing variable in
// place, so GOMAXPROCS is replaced and the user's value kept here, not in
// a variable of its own (which setenv would add to a copy Go never sees).
static char requested[16];

const char *gpuz_gomaxprocs_requested(void) { return requested; }

__attribute__((constructor)) static void gpuz_lower_gomaxprocs(void) {
	struct rlimit r;
	if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) {
		return;
	}
	const char *s = getenv("GOMAXPROCS");
	if (s == NULL) {
		return;
	}
	const char *digits = *s == '+' ? s + 1 : s; // the runtime reads it with strconv.ParseInt
	if (*digits == '\0' || strlen(digits) > 10 || strspn(digits, "0123456789") != strlen(digits)) {
		return; // not a number the runtime reads: it ignores it
	}
	long long n = strtoll(digits, NULL, 10);
	if (n > 2147483647) {
		return; // beyond int32: the runtime ignores it
	}
	cpu_set_t set;
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof set, &set) != 0) {
		return;
	}
	int cpus = CPU_COUNT(&set);
	if (cpus < 1 || n <= cpus) {
		return;
	}
	char lowered[16];
	snprintf(lowered, sizeof lowered, "%d", cpus);
	snprintf(requested, sizeof requested, "%s", s);
	setenv("GOMAXPROCS", lowered, 1);
}
*/
import "C"

// loweredGOMAXPROCS returns the GOMAXPROCS the user set that the
// constructor lowered to the CPUs' count before the runtime started, and
// false when it lowered none.
func loweredGOMAXPROCS() (string, bool) {
	s := C.GoString(C.gpuz_gomaxprocs_requested())
	return s, s != ""
}
