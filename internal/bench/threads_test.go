package bench

import (
	"strings"
	"testing"
)

// TestHeaderReportsThreadsInForce plays a BLAS that accepts at most 2
// threads: the header reports the 2 in force, not the 5 asked, with a
// warning that says why; a count the BLAS accepts has no warning.
func TestHeaderReportsThreadsInForce(t *testing.T) {
	var applied int
	opts := smallLinearRun(t, TaskEval, ModeCPU)
	opts.setThreads = func(n int) int { applied = min(n, 2); return applied }
	opts.Threads = 5
	plan, err := PlanMemory(opts, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := plan.Header
	if h.Threads != 2 || h.ThreadsRequested != 5 || applied != 2 {
		t.Errorf("header threads %d (requested %d), applied %d; want 2 in force of 5", h.Threads, h.ThreadsRequested, applied)
	}
	if !strings.Contains(h.ThreadsWarning, "5 threads requested, 2 in force") {
		t.Errorf("warning %q, want one naming 5 requested and 2 in force", h.ThreadsWarning)
	}

	opts.Threads = 2
	if plan, err = PlanMemory(opts, PlanOptions{}); err != nil {
		t.Fatal(err)
	}
	if h := plan.Header; h.Threads != 2 || h.ThreadsWarning != "" {
		t.Errorf("2 threads accepted: header %d threads, warning %q; want 2 and none", h.Threads, h.ThreadsWarning)
	}
}

// TestRunHeaderThreads runs with the real BLAS at 1 thread: the header
// reports 1 in force and no warning.
func TestRunHeaderThreads(t *testing.T) {
	opts := smallLinearRun(t, TaskEval, ModeCPU)
	opts.Epochs, opts.Warmup = 1, 0
	res := run(t, opts)
	if res.Header.Threads != 1 || res.Header.ThreadsWarning != "" {
		t.Errorf("header %d threads, warning %q; want 1 and none", res.Header.Threads, res.Header.ThreadsWarning)
	}
}
