package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"gpuz/internal/bench"
	"gpuz/internal/device"
)

// TestProgressOnlyOnATerminal runs the small linear workload twice. With a
// standard error that is not a terminal, nothing is written there. With
// one (a fake: a buffer marked ErrTTY, shared with standard output as on a
// real terminal), a progress line with the epoch and batch counters is
// drawn (the last batch ends it: its line is not drawn), it is erased
// (carriage return, spaces, carriage return) before
// each epoch line and at the end, and once the drawings are taken out the
// report's lines are whole.
func TestProgressOnlyOnATerminal(t *testing.T) {
	opts, out, errOut := runSmallLinear(t, func(o *WorkloadOptions) {
		o.Sizes = map[string]int{"epochs": 2}
		o.setupNoteAfter = time.Hour // no setup phase lasts that long: no note (TestSetupNotes)
	})
	if errOut.Len() != 0 || strings.Contains(out.String(), "\r") {
		t.Fatalf("not a terminal: stderr %q, stdout has a carriage return: %v", errOut, strings.Contains(out.String(), "\r"))
	}

	var term bytes.Buffer
	opts.IO = &IOStreams{Out: &term, ErrOut: &term, ErrTTY: true}
	mustRun(t, opts)
	got := term.String()
	for _, want := range []string{"\rcpu: epoch 1/2, batch 1/2", "(1/4)", "\rcpu: epoch 2/2, batch 1/2", "(3/4)"} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, got)
		}
	}
	erased := regexp.MustCompile(`\r +\r(train: [01] )`)
	if n := len(erased.FindAllString(got, -1)); n != 2 {
		t.Errorf("%d epoch lines follow an erased progress line, want 2:\n%q", n, got)
	}
	// Taking out every drawing and erasure leaves the report as it would
	// be without a terminal: no counters, each epoch line at a line start.
	plain := regexp.MustCompile(`(\r[^\r\n]*)*\r`).ReplaceAllString(got, "")
	if strings.Contains(plain, "cpu: epoch") || !strings.Contains(plain, "\ntrain: 0 ") || !strings.Contains(plain, "\ntrain: 1 ") {
		t.Errorf("report with the progress taken out:\n%s", plain)
	}
	if len(strings.Split(plain, "\n")) != len(strings.Split(out.String(), "\n")) {
		t.Errorf("the report has %d lines on a terminal, %d without:\n%s", len(strings.Split(plain, "\n")), len(strings.Split(out.String(), "\n")), plain)
	}
}

// TestSetupNotes runs the small linear workload with a standard error that
// is not a terminal and notes due at once (issue 36 item 20: make run was
// silent for a minute before its first epoch when its output was a log):
// each setup phase, the run's and each mode's in the order they run, is
// one line on standard error, and standard output is as without them. On
// a terminal (where the progress line is drawn) there are none.
func TestSetupNotes(t *testing.T) {
	for _, tt := range []struct {
		name string
		mode bench.Mode
		tty  bool
		want []string
	}{
		{"cpu", bench.ModeCPU, false, []string{
			"setup: building the model and compiling its schedule…",
			"setup: generating the data set from the seed…",
			"cpu: setup: allocating its buffers on host and faulting the memory in…",
			"cpu: setup: drawing the initial parameters and uploading them…",
		}},
		{"cache on sim", bench.ModeCache, false, []string{
			"setup: building the model and compiling its schedule…",
			"setup: generating the data set from the seed…",
			"cache: setup: reserving its memory on sim:64MiB…",
			"cache: setup: allocating its buffers on sim:64MiB and faulting the memory in…",
			"cache: setup: drawing the initial parameters and uploading them…",
		}},
		{"terminal", bench.ModeCPU, true, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(device.LedgerEnv, filepath.Join(t.TempDir(), "ledger"))
			t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no calibrated profile: no prediction phase
			ios, out, errOut := testIO()
			opts := smallLinear(ios, "sim:64MiB")
			opts.Modes, opts.setupNoteAfter = []bench.Mode{tt.mode}, -1
			var term bytes.Buffer
			if tt.tty {
				opts.IO = &IOStreams{Out: out, ErrOut: &term, ErrTTY: true}
			}
			mustRun(t, opts)
			var notes []string
			for _, l := range strings.Split(errOut.String()+term.String(), "\n") {
				if strings.Contains(l, "setup:") {
					notes = append(notes, l)
				}
			}
			if strings.Join(notes, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("setup notes:\n%s\nwant:\n%s", strings.Join(notes, "\n"), strings.Join(tt.want, "\n"))
			}
			if strings.Contains(out.String(), "setup:") {
				t.Errorf("a setup note on standard output:\n%s", out)
			}
		})
	}
}

// TestSetupNotesAfterDelay checks the notes' delay: a phase still going
// when its delay is over gets its line, written from the timer (the test
// waits for the line, within a generous minute); a phase that ends first,
// none, even when its timer has fired and waits for the lock.
func TestSetupNotesAfterDelay(t *testing.T) {
	var mu sync.Mutex
	var w bytes.Buffer
	written := func() string { mu.Lock(); defer mu.Unlock(); return w.String() }
	locked := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return w.Write(p) })
	events := 0
	handle := newSetupNotes(locked, false, time.Millisecond).guard(func(bench.Event) { events++ })
	handle(bench.Event{Mode: bench.ModeCPU, Device: "host", Phase: bench.PhaseLoad})
	want := "cpu: setup: allocating its buffers on host and faulting the memory in…\n"
	for deadline := time.Now().Add(time.Minute); written() != want; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute the notes hold %q, want %q", written(), want)
		}
	}
	handle(bench.Event{Mode: bench.ModeCPU}) // the phase ends

	// A phase that ends before its 20 ms: nothing then, nor 200 ms later
	// (a check that can only pass wrongly on a loaded machine, never fail
	// wrongly).
	later := newSetupNotes(locked, false, 20*time.Millisecond)
	handle = later.guard(func(bench.Event) { events++ })
	handle(bench.Event{Mode: bench.ModeCPU, Device: "host", Phase: bench.PhaseInit})
	handle(bench.Event{Mode: bench.ModeCPU})
	time.Sleep(200 * time.Millisecond)
	later.stop()
	if written() != want || events != 4 {
		t.Errorf("notes %q after a phase that ended before its delay, %d events handled; want %q and 4", written(), events, want)
	}
}

// writerFunc is a function as an io.Writer.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
