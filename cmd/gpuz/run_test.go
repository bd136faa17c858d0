package main

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"gpuz/internal/bench"
	"gpuz/internal/cache"
	"gpuz/internal/models"
	"gpuz/internal/report/reporttest"
)

// testIO returns streams that write to buffers, neither a terminal.
func testIO() (*IOStreams, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return newIOStreams(&out, &errOut), &out, &errOut
}

// smallLinear returns the options of "gpuz linear train cpu --scale small
// --device D" with the flags' defaults, writing to ios.
func smallLinear(ios *IOStreams, dev string) *WorkloadOptions {
	return &WorkloadOptions{
		IO: ios, Workload: models.Linear, Task: bench.TaskTrain, Modes: []bench.Mode{bench.ModeCPU},
		Scale: models.ScaleSmall, Warmup: 1, LR: bench.DefaultLR, Seed: 1, Threads: 1,
		Device: dev, Cache: cache.Config{Policy: cache.Window, Window: 3},
	}
}

// mustRun runs opts through workloadRun, failing the test on an error with
// what the run wrote to standard error.
func mustRun(t *testing.T, opts *WorkloadOptions) {
	t.Helper()
	if err := workloadRun(context.Background(), opts); err != nil {
		t.Fatalf("%v; stderr: %s", err, opts.IO.ErrOut)
	}
}

// runSmallLinear runs smallLinear's workload on the cpu through
// workloadRun, writing to testIO's buffers, with set changing the options
// first; it returns the options and what the run wrote to standard output
// and error. An error fails the test.
func runSmallLinear(t *testing.T, set func(*WorkloadOptions)) (opts *WorkloadOptions, out, errOut *bytes.Buffer) {
	t.Helper()
	ios, out, errOut := testIO()
	opts = smallLinear(ios, "cpu")
	set(opts)
	mustRun(t, opts)
	return opts, out, errOut
}

// TestWorkloadRunWritesTable runs the small linear workload on the cpu
// through workloadRun: the header, the epochs and the table come out, and
// the header reports the threads the options gave.
func TestWorkloadRunWritesTable(t *testing.T) {
	_, out, _ := runSmallLinear(t, func(o *WorkloadOptions) { o.Sizes = map[string]int{"epochs": 2} })
	for _, want := range []string{"gpuz linear train (scale small): 8 samples in batches of 4", ", 1 thread\n",
		"== cpu on host ==", "train: 1  mean loss:", "Analyze"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if row := reporttest.TableRows(out.String())["cpu"]; status(row) != "ok" {
		t.Errorf("cpu row %q, want ok", row)
	}
}

// TestOOMSaysWhyInItsSection runs the cuda mode on a simulated device far
// too small: its section says why at once, before the table.
func TestOOMSaysWhyInItsSection(t *testing.T) {
	privateLedger(t)
	ios, out, _ := testIO()
	opts := smallLinear(ios, "sim:1KiB")
	opts.Modes = []bench.Mode{bench.ModeCUDA}
	if err := workloadRun(context.Background(), opts); err == nil {
		t.Fatal("a run whose mode ran out of memory returned no error")
	}
	section, _, ok := strings.Cut(out.String(), "Analyze")
	if !ok || !strings.Contains(section, "== cuda on sim:1KiB ==\ncuda: OOM: needs ") {
		t.Errorf("the cuda section does not say why before the table:\n%s", out)
	}
}

// TestPlanRunWritesPlan prints the plan of the small linear workload on a
// simulated device, and then refuses bad sizes with the flag's message.
func TestPlanRunWritesPlan(t *testing.T) {
	privateLedger(t)
	ios, out, _ := testIO()
	opts := smallLinear(ios, "sim:1GiB")
	opts.PlanOnly, opts.Modes = true, []bench.Mode{bench.ModeCUDA, bench.ModeCache}
	if err := planRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gpuz linear train (scale small)", "\ncuda ", "window 3/3", "sim:1GiB"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	opts.Sizes = map[string]int{"dims": 0}
	if err := workloadRun(context.Background(), opts); err == nil || err.Error() != "--dims must be positive, got 0" {
		t.Errorf("a zero --dims gave %v", err)
	}
}

// TestDevicesRunOnSim measures the simulated device with a small SGEMM.
func TestDevicesRunOnSim(t *testing.T) {
	ios, out, _ := testIO()
	if err := devicesRun(context.Background(), &DevicesOptions{IO: ios, Specs: []string{"sim:1GiB"}, GemmSize: 64}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "sim:1GiB") {
		t.Errorf("the table lacks the device:\n%s", out)
	}
	if err := devicesRun(context.Background(), &DevicesOptions{IO: ios, Specs: []string{"gpu"}, GemmSize: 64}); err == nil {
		t.Error("an unknown device was measured")
	}
}

// TestDevicesProfiles lists the GPU profiles without measuring anything.
func TestDevicesProfiles(t *testing.T) {
	ios, out, _ := testIO()
	if err := devicesRun(context.Background(), &DevicesOptions{IO: ios, Profiles: true, Specs: []string{"gpu"}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rtx4060-laptop ", "h100-sxm ", "docs/model.md"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("gpuz devices --profiles lacks %q:\n%s", want, out)
		}
	}
}

// TestSelftestRunNotes self-tests the simulated device and the host:
// every check passes, after the note, for each, that they are equal by
// construction.
func TestSelftestRunNotes(t *testing.T) {
	for _, tt := range []struct{ device, note string }{
		{"sim:1GiB", "note: sim:1GiB runs the host kernels"},
		{"cpu", "note: cpu is the host itself; every check is equal by construction\n"},
	} {
		ios, out, _ := testIO()
		if err := selftestRun(context.Background(), &SelftestOptions{IO: ios, Device: tt.device}); err != nil {
			t.Fatalf("--device %s: %v\n%s", tt.device, err, out)
		}
		if !strings.HasPrefix(out.String(), tt.note) {
			t.Errorf("--device %s: output does not start with the note %q:\n%.300s", tt.device, tt.note, out)
		}
	}
}

// TestWorkloadRunRejectsNonFiniteLR calls the run function directly, past
// the flags' own check: a learning rate that is not a finite number is
// refused before anything runs.
func TestWorkloadRunRejectsNonFiniteLR(t *testing.T) {
	for _, lr := range []float64{math.Inf(1), math.Inf(-1), math.NaN()} {
		ios, out, _ := testIO()
		opts := smallLinear(ios, "cpu")
		opts.LR = lr
		err := workloadRun(context.Background(), opts)
		if err == nil || !strings.Contains(err.Error(), "--lr must be a finite number") {
			t.Errorf("--lr %g gave %v", lr, err)
		}
		if out.Len() != 0 {
			t.Errorf("--lr %g wrote %q", lr, out)
		}
	}
}

// TestWindowOOMWherePagedFits is the acceptance on a 1 MiB
// simulated device with a window of one block: the plan says DictCache's
// window policy, which keeps all of Adam's state on the device, does not
// fit, while window-paged and the auto policy with the optimizer on the
// host do; and runs agree: window is out of memory, the other two
// complete.
func TestWindowOOMWherePagedFits(t *testing.T) {
	privateLedger(t)
	ios, out, _ := testIO()
	opts := smallLinear(ios, "sim:1MiB")
	opts.PlanOnly, opts.Modes, opts.Cache.Window = true, []bench.Mode{bench.ModeCache}, 1
	if err := planRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	fits := map[string]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		for _, pl := range []string{"window 1/3 ", "window-paged 1/3 ", "opt. on host "} {
			// The memory table comes first; the copies table repeats the rows.
			if _, seen := fits[pl]; !seen && strings.HasPrefix(line, "cache  ") && strings.Contains(line, pl) {
				fits[pl] = line
			}
		}
	}
	if !strings.HasSuffix(fits["window 1/3 "], "no: device") {
		t.Errorf("the plan's window row %q, want it not to fit the device:\n%s", fits["window 1/3 "], out)
	}
	for _, pl := range []string{"window-paged 1/3 ", "opt. on host "} {
		if !strings.HasSuffix(fits[pl], "yes") {
			t.Errorf("the plan's %q row %q, want it to fit:\n%s", pl, fits[pl], out)
		}
	}
	for _, tc := range []struct {
		policy cache.Policy
		onHost bool
		oom    bool
	}{
		{cache.Window, false, true},
		{cache.WindowPaged, false, false},
		{cache.Auto, true, false},
	} {
		ios, _, errOut := testIO()
		o := smallLinear(ios, "sim:1MiB")
		o.Modes, o.Cache = []bench.Mode{bench.ModeCache}, cache.Config{Policy: tc.policy, Window: 1, OptimizerOnHost: tc.onHost}
		o.Sizes = map[string]int{"epochs": 2}
		err := workloadRun(context.Background(), o)
		var inc *incompleteError
		switch {
		case tc.oom && (!errors.As(err, &inc) || len(inc.Modes) != 1 || inc.Modes[0] != "cache (OOM)"):
			t.Errorf("%s: %v, want cache out of memory; stderr: %s", tc.policy, err, errOut)
		case !tc.oom && err != nil:
			t.Errorf("%s, optimizer on the host %v: %v; stderr: %s", tc.policy, tc.onHost, err, errOut)
		}
	}
}
