package bench

import "testing"

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
	if env.Start == "" || env.GoVersion == "" || env.Revision == "" || env.Cores <= 0 {
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
