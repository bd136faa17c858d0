//go:build cgo

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"

	"gpuz/internal/bench"
)

// TestPrestartMatchesMain: the constructor of prestart_cgo.go, which
// checks the address-space limit before the Go runtime starts, refuses
// exactly where main's check does, with the same line: its constants are
// bench.RuntimeHeadroomWith's and its sizes are written as units.Bytes
// writes them. Limits on each side of the headroom and on units.Bytes's
// rounding edges; processors at, above and far above the CPUs (past
// glibc's arenas).
func TestPrestartMatchesMain(t *testing.T) {
	cpus := runtime.NumCPU()
	for _, procs := range []int{1, cpus, cpus + 1, 8 * cpus, 8*cpus + 1, 8*cpus + 5, 1000, 1 << 31 / 2} {
		need := bench.RuntimeHeadroomWith(0, procs)
		limits := []int64{0, 1, 1023, 1024, 1535, 1536, 10199, 10235, 1048063, 1048064, 10535000, 104805172, 999<<20 + 1<<19, 977 << 20,
			1_800_000 << 10, 1<<31 - 1, 5 << 30, need - 1, need, need + 1, need * 7 / 10}
		for _, limit := range limits {
			want := ""
			if err := addressSpaceError(limit, true, 0, need, 0, procs); err != nil {
				want = err.Error()
			}
			if got := prestartRefusal(limit, procs, cpus); got != want {
				t.Errorf("limit %d, GOMAXPROCS %d: the constructor says\n%q\nmain says\n%q", limit, procs, got, want)
			}
		}
	}
}

// TestPrestartComesFirst runs the built binary under address-space
// limits below the runtime's headroom, several at once, with the
// runtime tracing its packages' initialisation (GODEBUG=inittrace=1): each
// is refused with the one line and status 1, and the runtime never
// printed a line, so the check ran before anything the runtime may grow
// (issue 44 item 17). Checked in main, it came after the runtime's start,
// which under 1.8 GB on a loaded machine died first: "runtime: out of
// memory: cannot allocate 4194304-byte block" and a trace, or
// "pthread_create failed". Under about 200 MB the dynamic loader cannot
// map OpenBLAS, before any code of gpuz's: not tried.
func TestPrestartComesFirst(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to set ulimit -v")
	}
	cpus := runtime.NumCPU()
	headroom := bench.RuntimeHeadroomWith(0, cpus) >> 10 // KiB, as ulimit -v counts
	const copies = 4                                     // at once: a loaded machine
	var wg sync.WaitGroup
	for _, limit := range []int64{300_000, 1_000_000, 1_500_000, 1_800_000, headroom - 64<<10, headroom - 1} {
		want := "gpuz: " + prestartRefusal(limit<<10, cpus, cpus) + "\n"
		for range copies {
			wg.Go(func() {
				cmd := exec.Command(sh, "-c", fmt.Sprintf(`ulimit -v %d && exec "$@"`, limit), "sh", gpuzBinary, "version")
				cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", fmt.Sprintf("GOMAXPROCS=%d", cpus))
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				if code := exitCode(err); code != exitFailure || stderr.String() != want || stdout.Len() != 0 {
					t.Errorf("ulimit -v %d; gpuz version: status %d, stdout %q, stderr:\n%.1500s\nwant status %d and only %q",
						limit, code, strings.TrimSpace(stdout.String()), stderr.String(), exitFailure, want)
				}
			})
		}
	}
	wg.Wait()
}
