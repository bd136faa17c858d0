package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gpuz/internal/bench"
	"gpuz/internal/device"
	"gpuz/internal/models"
	"gpuz/internal/perfmodel"
)

// calibrationTruth is the device the synthetic calibration is timed on.
var calibrationTruth = perfmodel.Profile{
	Name: "truth", FP32: 5e10, MemBandwidth: 1e10, MemoryBytes: 1 << 30,
	PinnedH2D: 5e9, PinnedD2H: 5e9, PageableH2D: 5e9, PageableD2H: 5e9,
	KernelOverhead: 200 * time.Nanosecond,
	Fitted:         &perfmodel.Efficiency{Dense: 0.5, Elementwise: 0.2, Bandwidth: 0.6, Copy: 0.7, CopyOverhead: time.Microsecond},
}

// timedOn returns samples with their times on p's model.
func timedOn(p perfmodel.Profile, samples []perfmodel.Sample) []perfmodel.Sample {
	for i := range samples {
		samples[i].Time = samples[i].Model(p)
	}
	return samples
}

// syntheticCalibration is a measurement of calibrationTruth: products (one
// bound by memory), element-wise kernels (one bound by compute) and copies,
// and the profile before fitting at the default efficiency and the host's
// cost per kernel.
func syntheticCalibration(context.Context, device.Device, int) (perfmodel.Profile, []perfmodel.Sample, error) {
	before := calibrationTruth
	before.Fitted, before.KernelOverhead = nil, perfmodel.HostKernelOverhead
	k := func(name string, launches, flops, bytes int64) perfmodel.Sample {
		return perfmodel.Sample{Name: name, Kernels: []perfmodel.Kernel{{Name: name, Launches: launches, FLOPs: flops, Bytes: bytes}}}
	}
	c := func(up, down, count int64) perfmodel.Sample {
		return perfmodel.Sample{Name: "copy", Copies: perfmodel.Copies{H2DBytes: up, D2HBytes: down, SyncBytes: up + down, Count: count, Pageable: true}}
	}
	return before, timedOn(calibrationTruth, []perfmodel.Sample{
		k("Gemm", 1, 2e9, 1e7), k("Gemm", 1000, 1e9, 1e7), k("Gemm", 100, 5e8, 1e6), k("Gemm", 100, 1e5, 1e8),
		k("Add", 10000, 1e5, 1.2e6), k("Add", 10, 1e8, 1.2e9), k("Add", 100, 1e8, 1.2e9), k("Exp", 10, 1e9, 1e6),
		c(1e9, 0, 10), c(0, 1e6, 10000), c(1e7, 0, 100),
	}), nil
}

// syntheticHeldOut is two held-out runs timed on calibrationTruth.
func syntheticHeldOut(context.Context, *CalibrateOptions, string, perfmodel.Profile) ([]perfmodel.Sample, error) {
	return timedOn(calibrationTruth, []perfmodel.Sample{
		{Name: "small run", Kernels: []perfmodel.Kernel{{Name: "Linear", Launches: 40, FLOPs: 1e6, Bytes: 1e6}, {Name: "Add", Launches: 20, FLOPs: 1e5, Bytes: 1e6}}},
		{Name: "larger run", Kernels: []perfmodel.Kernel{{Name: "Linear", Launches: 400, FLOPs: 1e10, Bytes: 1e8}}, Copies: perfmodel.Copies{H2DBytes: 1e6, Count: 4}},
	}), nil
}

// slowed returns measure and heldOut as in a round where the machine is
// busy: every time doubled (and the rates before fitting halved).
func slowed(measure func(context.Context, device.Device, int) (perfmodel.Profile, []perfmodel.Sample, error),
	heldOut func(context.Context, *CalibrateOptions, string, perfmodel.Profile) ([]perfmodel.Sample, error)) (
	func(context.Context, device.Device, int) (perfmodel.Profile, []perfmodel.Sample, error),
	func(context.Context, *CalibrateOptions, string, perfmodel.Profile) ([]perfmodel.Sample, error)) {
	double := func(samples []perfmodel.Sample) []perfmodel.Sample {
		for i := range samples {
			samples[i].Time *= 2
		}
		return samples
	}
	return func(ctx context.Context, d device.Device, threads int) (perfmodel.Profile, []perfmodel.Sample, error) {
			p, samples, err := measure(ctx, d, threads)
			p.FP32, p.MemBandwidth, p.PageableH2D = p.FP32/2, p.MemBandwidth/2, p.PageableH2D/2
			return p, double(samples), err
		}, func(ctx context.Context, o *CalibrateOptions, spec string, before perfmodel.Profile) ([]perfmodel.Sample, error) {
			runs, err := heldOut(ctx, o, spec, before)
			return double(runs), err
		}
}

// TestCalibrateWritesTheFittedProfile calibrates on synthetic measurements
// of a known device in three rounds, the second on a busy machine (every
// time doubled): the medians leave that round out, so the profile written
// reads back with LoadProfile with the device's fixed cost per kernel, and
// the report gives the held-out runs' error before (the default factors)
// and after (none), each round's (the busy one's 50% after) and the runs'
// spread.
func TestCalibrateWritesTheFittedProfile(t *testing.T) {
	var out, errOut bytes.Buffer
	path := filepath.Join(t.TempDir(), "host.json")
	round := 0
	busyMeasure, busyHeldOut := slowed(syntheticCalibration, syntheticHeldOut)
	o := &CalibrateOptions{IO: newIOStreams(&out, &errOut), Device: "cpu", Output: path, Threads: 1, Rounds: 3,
		measure: func(ctx context.Context, d device.Device, threads int) (perfmodel.Profile, []perfmodel.Sample, error) {
			round++
			if round == 2 {
				return busyMeasure(ctx, d, threads)
			}
			return syntheticCalibration(ctx, d, threads)
		},
		heldOut: func(ctx context.Context, o *CalibrateOptions, spec string, before perfmodel.Profile) ([]perfmodel.Sample, error) {
			if round == 2 {
				return busyHeldOut(ctx, o, spec, before)
			}
			return syntheticHeldOut(ctx, o, spec, before)
		}}
	if err := calibrateRun(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	p, err := perfmodel.LoadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := p.KernelOverhead - calibrationTruth.KernelOverhead; d < -time.Nanosecond || d > time.Nanosecond || p.Fitted == nil {
		t.Errorf("written profile: kernel overhead %v, fitted %+v; want %v and fitted factors", p.KernelOverhead, p.Fitted, calibrationTruth.KernelOverhead)
	}
	// Columns are compared with their padding folded to one space: the
	// table's widths follow its longest label.
	spaces := regexp.MustCompile(` {2,}`)
	for _, want := range []string{"KernelOverhead 0.500 µs 0.200 µs", "small run", "larger run",
		"held out (not fitted): median model error", "before, 0% after", "% → 0%, ", "% → 50%, ", "products Overhead", "wrote " + path} {
		if !strings.Contains(spaces.ReplaceAllString(out.String(), " "), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestCalibrateDefaultFile: without -o the host's profile goes to
// gpuz/host-profile.json in the configuration directory, which is made.
func TestCalibrateDefaultFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	o := &CalibrateOptions{IO: newIOStreams(&bytes.Buffer{}, &bytes.Buffer{}), Device: "cpu", Threads: 1, Rounds: 1,
		measure: syntheticCalibration, heldOut: syntheticHeldOut}
	if err := calibrateRun(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if _, err := perfmodel.LoadProfile(filepath.Join(dir, "gpuz", "host-profile.json")); err != nil {
		t.Error(err)
	}
}

// TestCalibrateRefuses a simulated device (it runs the host's kernels)
// and a device that is none.
func TestCalibrateRefuses(t *testing.T) {
	for _, tc := range []struct{ device, want string }{
		{"sim:1GiB", "a simulated device runs the host's kernels"},
		{"gpu", `unknown device "gpu"`},
	} {
		o := &CalibrateOptions{IO: newIOStreams(&bytes.Buffer{}, &bytes.Buffer{}), Device: tc.device, Threads: 1, Rounds: 1,
			measure: syntheticCalibration, heldOut: syntheticHeldOut}
		if err := calibrateRun(context.Background(), o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--device %s: error %v, want %q", tc.device, err, tc.want)
		}
	}
}

// TestPlanOnACalibratedProfile plans the tiny linear training with the
// committed calibration of the development machine as the host profile
// and as a simulated GPU: both predictions name it.
func TestPlanOnACalibratedProfile(t *testing.T) {
	privateLedger(t)
	out, err := exec.Command(gpuzBinary, "plan", "linear", "train", "cuda,cpu", "--dims", "16", "--blocks", "2", "--layers-per-block", "2",
		"--samples", "150", "--batch", "150", "--host-profile", "testdata/profiles/calibrated-host.json",
		"--device", "sim:testdata/profiles/calibrated-host.json").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "predicted: model time per epoch on calibrated-host (cuda, cpu)") {
		t.Errorf("plan output does not name the calibrated profile:\n%s", out)
	}
}

// TestHeldOutRuns checks every held-out run's options without running it:
// each is a valid run of the cpu mode for heldOutEpochs, named apart from
// the others, the llm one an evaluation of smollm2-135m on one batch of 2
// at --scale small's other sizes; and all of them together, every epoch,
// do less than 100 GFLOP (39 today; 231 with the llm's training on --scale
// small's 4 samples instead), so that each round's held-out runs take a
// few seconds on a 2-core machine.
func TestHeldOutRuns(t *testing.T) {
	o := &CalibrateOptions{IO: newIOStreams(&bytes.Buffer{}, &bytes.Buffer{}), Threads: 1}
	names := map[string]bool{}
	var flops int64
	for _, r := range heldOutRuns {
		opts, err := r.options(context.Background(), o, "cpu")
		if err != nil {
			t.Fatalf("%s %s: %v", r.workload.Name, r.task, err)
		}
		name := fmt.Sprintf("%s %s %v", opts.ModelName, r.task, r.sizes)
		if names[name] {
			t.Errorf("two held-out runs %s", name)
		}
		names[name] = true
		if r.workload.Name == models.LLM.Name && (opts.ModelName != "llm smollm2-135m" || opts.Task != bench.TaskEval || opts.Samples != 2 || opts.Batch != 2) {
			t.Errorf("llm held-out run: %s %s, %d samples in batches of %d; want llm smollm2-135m eval, 2 in batches of 2",
				opts.ModelName, opts.Task, opts.Samples, opts.Batch)
		}
		if opts.Epochs != heldOutEpochs || len(opts.Modes) != 1 || opts.Modes[0] != bench.ModeCPU {
			t.Errorf("%s: %d epochs of %v, want %d of cpu", name, opts.Epochs, opts.Modes, heldOutEpochs)
		}
		p, err := bench.PlanMemory(opts, bench.PlanOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		flops += p.Schedules[0].Work.FLOPs * int64(p.Batches) * int64(opts.Epochs)
	}
	if flops >= 100e9 {
		t.Errorf("the held-out runs do %.1f GFLOP, want less than 100", float64(flops)/1e9)
	}
	t.Logf("the held-out runs do %.1f GFLOP", float64(flops)/1e9)
}
