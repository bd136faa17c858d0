package bench

import (
	"fmt"
	"strings"
	"testing"
)

// TestRunRecordsEnv: the header's Env holds the build and the machine, the
// BLAS and threads in force, the command line and seed given, and the
// description of the GPU device a mode opened (here the simulated one).
func TestRunRecordsEnv(t *testing.T) {
	opts := smallLinearRun(t, TaskEval, ModeCPU, ModeCUDA)
	opts.Epochs, opts.Warmup, opts.Seed = 1, 0, 7
	opts.CommandLine = "gpuz linear eval cpu,cuda --seed 7"
	env := run(t, opts).Header.Env
	if env.CommandLine != opts.CommandLine || env.Seed != 7 || env.Threads != 1 || env.BLAS == "" {
		t.Errorf("env command line %q, seed %d, threads %d, BLAS %q", env.CommandLine, env.Seed, env.Threads, env.BLAS)
	}
	if env.Start.IsZero() || env.GoVersion == "" || env.Revision == "" || env.Cores <= 0 {
		t.Errorf("env lacks the build or the machine: %+v", env)
	}
	if env.GPU["name"] != "sim:64MiB" || env.GPU["kind"] == "" {
		t.Errorf("env.GPU = %v, want the simulated device's description", env.GPU)
	}
	// A run with no GPU mode describes no GPU.
	opts.Modes = []Mode{ModeCPU}
	if gpu := run(t, opts).Header.Env.GPU; gpu != nil {
		t.Errorf("cpu-only run: env.GPU = %v, want nil", gpu)
	}
}

// TestRunReportsBatches: every batch of every epoch is reported, in order,
// before its epoch's event.
func TestRunReportsBatches(t *testing.T) {
	opts := smallLinearRun(t, TaskTrain, ModeCPU)
	opts.Epochs = 2
	var got []string
	opts.Progress = func(e Event) {
		switch {
		case e.Batch != nil:
			b := e.Batch
			got = append(got, fmt.Sprintf("%s batch %d.%d of %d×%d", e.Mode, b.Epoch, b.Batch, b.Epochs, b.Batches))
		case e.Epoch != nil:
			got = append(got, fmt.Sprintf("%s epoch %d", e.Mode, e.Epoch.Index))
		}
	}
	run(t, opts)
	want := []string{"cpu batch 0.0 of 2×2", "cpu batch 0.1 of 2×2", "cpu epoch 0", "cpu batch 1.0 of 2×2", "cpu batch 1.1 of 2×2", "cpu epoch 1"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
