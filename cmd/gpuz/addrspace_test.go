package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"gpuz/internal/bench"
	"gpuz/internal/device"
)

// TestAddressSpaceLimit runs the built binary under address-space limits
// (ulimit -v). Below what the Go runtime and the BLAS's threads need,
// every command is refused at start with one line and status 1: a small
// run at 1.9 GB used to abort with a goroutine dump (pthread_create
// failed) or spin in a GC pause for minutes ignoring Ctrl-C. A run none
// of whose modes' host memory fits besides that headroom is refused
// before anything runs; a mode beyond it is skipped, the others run. At the headroom, a small run works. The refusals
// at start come from the constructor of prestart_cgo.go, before the
// runtime: no failure of the runtime's is excused (TestPrestartComesFirst
// tries lower limits).
func TestAddressSpaceLimit(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to set ulimit -v")
	}
	dir := t.TempDir()
	t.Setenv(device.LedgerEnv, filepath.Join(dir, "ledger"))
	results := filepath.Join(dir, "r.json")
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"linear", "train", "cpu", "--scale", "small", "--json", results}, &out, &errOut); code != 0 {
		t.Fatalf("making a results file: status %d: %s", code, errOut.String())
	}
	headroom := bench.RuntimeHeadroom(runtime.NumCPU()) >> 10 // KiB, as ulimit -v counts
	for _, tt := range []struct {
		name  string
		limit int64 // KiB
		args  []string
		code  int
		want  string   // in the one line on stderr
		rows  []string // patterns of lines on stdout (regexp, each line's spaces squeezed)
		procs int      // GOMAXPROCS, 0: unset
	}{
		{"version", 1_900_000, []string{"version"}, exitFailure, "gpuz needs at least", nil, 0},
		{"plot", 1_900_000, []string{"plot", results, "-o", filepath.Join(dir, "r.png")}, exitFailure, "gpuz needs at least", nil, 0},
		{"small run", 1_900_000, []string{"linear", "train", "cpu", "--scale", "small"}, exitFailure, "gpuz needs at least", nil, 0},
		{"full run", headroom + 1<<20, []string{"linear", "train", "cpu"}, exitFailure, "this run needs", nil, 0},
		{"small run at the headroom", headroom + 64<<10, []string{"linear", "train", "cpu", "--scale", "small"}, exitOK, "", nil, 0},
		// A managed page larger than the device (issue 36 item 6): that
		// mode's OOM row, the cpu mode run, as without a limit; the
		// address-space plan failed on the engine's "holds 0 pages".
		{"managed page beyond the device", headroom + 1<<20,
			[]string{"linear", "train", "managed,cpu", "--scale", "small", "--device", "sim:64MiB", "--managed-page", "128MiB"}, exitIncomplete, "",
			[]string{`^\[1\] managed: OOM: needs 128 MiB, 64\.0 MiB of 64\.0 MiB free$`, `^cpu host .* ok$`}, 0},
		// A managed page beyond the address-space limit (issue 44 item
		// 8): that mode's row says why, the cpu mode runs, status 3, as
		// without a limit a page beyond the host's memory is; the whole
		// run was refused, status 1, for its largest mode.
		{"managed page beyond the limit", headroom + 64<<10,
			[]string{"linear", "train", "managed,cpu", "--scale", "small", "--device", "sim:64MiB", "--managed-page", "8GiB"}, exitIncomplete, "",
			[]string{`^\[1\] managed: skipped: needs 8\.00 GiB of host memory`, `^cpu host .* ok$`}, 0},
		// A page that fits what the process can still map, but not
		// beside the runtime's headroom: skipped by the check's own rule.
		{"managed page beyond the limit with the headroom", headroom + 1<<20,
			[]string{"linear", "train", "managed,cpu", "--scale", "small", "--device", "sim:64MiB", "--managed-page", "1GiB"}, exitIncomplete, "",
			[]string{`^\[1\] managed: skipped: needs 1\.00 GiB of host memory and .* for the Go runtime and its threads,$`, `^beyond the address-space limit \(ulimit -v\) of `, `^cpu host .* ok$`}, 0},
		// GOMAXPROCS far above the CPUs (issue 36 item 7): the runtime
		// started a thread per mark worker before main and aborted with a
		// goroutine dump (even gpuz version under 3 GB), and the headroom
		// claimed 64 MiB a processor (64.6 GiB, refusing under 8 GB a run
		// that peaks at 4.6 GB). Now one line naming GOMAXPROCS, always
		// (no failure before main is excused), and a run at the headroom
		// the runtime with 1000 processors needs.
		{"GOMAXPROCS=1000 version", 3_000_000, []string{"version"}, exitFailure, "GOMAXPROCS=1000", nil, 1000},
		{"GOMAXPROCS=1000 small run under 8 GB", 8_000_000, []string{"linear", "train", "cpu", "--scale", "small"}, exitOK, "", []string{`^cpu host .* ok$`}, 1000},
		{"GOMAXPROCS=1000 small run at its headroom", bench.RuntimeHeadroomWith(runtime.NumCPU(), 1000)>>10 + 64<<10,
			[]string{"linear", "train", "cpu", "--scale", "small"}, exitOK, "", []string{`^cpu host .* ok$`}, 1000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if procs := max(tt.procs, runtime.GOMAXPROCS(0)); tt.code == exitOK && tt.limit<<10 < bench.RuntimeHeadroomWith(runtime.NumCPU(), procs) {
				t.Skipf("on %d CPUs the runtime with GOMAXPROCS=%d needs more than ulimit -v %d", runtime.NumCPU(), procs, tt.limit)
			}
			cmd := exec.Command(sh, append([]string{"-c", fmt.Sprintf(`ulimit -v %d && exec "$@"`, tt.limit), "sh", gpuzBinary}, tt.args...)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if tt.procs > 0 {
				cmd.Env = append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", tt.procs))
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-time.After(2 * time.Minute): // a hang (the GC spin it guards against), never a slow machine
				cmd.Process.Kill()
				<-done
				t.Fatalf("ulimit -v %d; gpuz %s: still running after 2 minutes", tt.limit, strings.Join(tt.args, " "))
			}
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			if code := exitCode(err); code != tt.code || (tt.want != "" && (len(lines) != 1 || !strings.Contains(lines[0], tt.want))) {
				t.Errorf("ulimit -v %d; gpuz %s: status %d, stderr:\n%.1500s\nwant status %d and one line with %q",
					tt.limit, strings.Join(tt.args, " "), code, stderr.String(), tt.code, tt.want)
			}
			var squeezed []string
			for _, l := range strings.Split(stdout.String(), "\n") {
				squeezed = append(squeezed, strings.Join(strings.Fields(l), " "))
			}
			for _, row := range tt.rows {
				if !regexp.MustCompile("(?m)" + row).MatchString(strings.Join(squeezed, "\n")) {
					t.Errorf("ulimit -v %d; gpuz %s: stdout has no %q:\n%s", tt.limit, strings.Join(tt.args, " "), row, stdout.String())
				}
			}
		})
	}
	_ = os.Remove(results)
}

// TestAddressSpaceError checks the refusal's line for each case: no limit
// or one that fits (nil), too small to start, too small for the run, and
// each with a GOMAXPROCS above the CPUs, which the line names.
func TestAddressSpaceError(t *testing.T) {
	const gib = 1 << 30
	n := runtime.NumCPU()
	for _, tt := range []struct {
		name               string
		limit              int64
		limited            bool
		workload, headroom int64
		threads, procs     int
		want               string
	}{
		{"no limit", 0, false, 100 * gib, 2 * gib, 1, n, ""},
		{"fits exactly", 3 * gib, true, gib, 2 * gib, 1, n, ""},
		{"start", gib, true, 0, 2 * gib, 1, n,
			fmt.Sprintf("the address-space limit (ulimit -v) is 1.00 GiB; gpuz needs at least 2.00 GiB here for the Go runtime and %d BLAS threads; raise the limit", n)},
		{"run", 3 * gib, true, 5 * gib, 2 * gib, n + 4, 1,
			fmt.Sprintf("the address-space limit (ulimit -v) is 3.00 GiB; this run needs 7.00 GiB: 5.00 GiB for the host memory of its least mode and 2.00 GiB for the Go runtime and %d BLAS threads; raise the limit, or run less (--scale small, fewer --threads)", n+4)},
		{"start, GOMAXPROCS above the CPUs", gib, true, 0, 5 * gib, 1, n + 1,
			fmt.Sprintf("the address-space limit (ulimit -v) is 1.00 GiB; gpuz needs at least 5.00 GiB here for the Go runtime with GOMAXPROCS=%d and %d BLAS threads; raise the limit, or lower GOMAXPROCS (this machine has %d CPUs)", n+1, n, n)},
		{"run, GOMAXPROCS above the CPUs", 3 * gib, true, 5 * gib, 2 * gib, 1, 1000,
			fmt.Sprintf("the address-space limit (ulimit -v) is 3.00 GiB; this run needs 7.00 GiB: 5.00 GiB for the host memory of its least mode and 2.00 GiB for the Go runtime with GOMAXPROCS=1000 and %d BLAS threads; raise the limit, or lower GOMAXPROCS (this machine has %d CPUs), or run less (--scale small, fewer --threads)", n, n)},
	} {
		err := addressSpaceError(tt.limit, tt.limited, tt.workload, tt.headroom, tt.threads, tt.procs)
		if got := fmt.Sprint(err); (tt.want == "" && err != nil) || (tt.want != "" && got != tt.want) {
			t.Errorf("%s: %v\nwant %q", tt.name, err, tt.want)
		}
	}
}
