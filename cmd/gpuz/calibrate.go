package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"gpuz/internal/bench"
	"gpuz/internal/cache"
	"gpuz/internal/calibration"
	"gpuz/internal/device"
	"gpuz/internal/models"
	"gpuz/internal/perfmodel"
	"gpuz/internal/report"
	"gpuz/internal/sysinfo"
)

// calibrateTarget is about how long each kernel or copy sample's timed run
// takes: three of them and a warm-up make a sample, about 100 samples a
// round, so that a round's samples take about two seconds.
const calibrateTarget = 5 * time.Millisecond

// defaultRounds and maxRounds are --rounds' default and largest value.
const defaultRounds, maxRounds = 3, 20

// calibrateGemmSize is the n of the n×n×n SGEMM that gives the host's
// profile before fitting its FP32 rate (a GPU's is bench's 4096).
const calibrateGemmSize = 512

// CalibrateOptions are the settings of gpuz calibrate.
type CalibrateOptions struct {
	IO *IOStreams
	// Device is the device calibrated: auto (a CUDA GPU when there is
	// one, else the host), cpu (the host) or cuda[:N].
	Device string
	// Output is the profile file written; "" is calibratedProfilePath's
	// for the host, and must be given for a GPU.
	Output string
	// Threads is the host's thread count for the samples and the
	// held-out runs.
	Threads int
	// Rounds is how many times the device is measured and the held-out
	// runs are run, interleaved; the fit and the errors use the medians.
	Rounds int
	// measure, when set, replaces measuring the device: it returns the
	// device's profile before fitting and the kernel and copy samples
	// (tests give synthetic ones), stopping when ctx is done.
	measure func(ctx context.Context, dev device.Device, threads int) (perfmodel.Profile, []perfmodel.Sample, error)
	// heldOut, when set, replaces the held-out workload runs.
	heldOut func(ctx context.Context, o *CalibrateOptions, spec string, before perfmodel.Profile) ([]perfmodel.Sample, error)
}

// newCalibrateCmd builds gpuz calibrate; runF, when not nil, is called
// instead of calibrateRun.
func newCalibrateCmd(ios *IOStreams, runF func(context.Context, *CalibrateOptions) error) *cobra.Command {
	opts := &CalibrateOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "calibrate",
		Short: "Fit the performance model to this machine's measured kernels and write its profile",
		Long: `calibrate measures a device with short runs of each op class the workloads
use, launched through the op as a run launches it (products, convolutions,
attention, normalisation, element-wise ops, from a launch its fixed cost
decides to ones its rate decides) and of copies each way, fits the
performance model's factors to the measured times by least squares (for
each class its fractions of the FP32 peak and of the memory bandwidth and
its fixed cost per kernel, and the copies' rate and fixed cost), and writes
the fitted profile as JSON. Between its rounds of samples it runs small
workloads that the fit does not see (linear, attention and resnet at
--scale small, the tiny linear training and a small llm evaluation) and
prints the model's error on them before and after fitting: on the medians
over the rounds, and each round's.

Without a GPU it calibrates the host: the profile, written by default to
gpuz/host-profile.json in the user's configuration directory, is the one
--host-profile FILE takes (and the commands that rank the cpu mode read from
there when --host-profile is not given). With --device cuda it calibrates the
GPU, for --device sim:FILE; -o is then required. About five seconds on a
2-core machine per round (--rounds, 3 by default). docs/model.md says how
the fit works; docs/fit.md gives its errors on the development machine.`,
		Example: "  gpuz calibrate\n  gpuz calibrate -o host.json\n  gpuz calibrate --device cuda -o gpu.json",
		Args:    noArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			// -o '' names no file: refused, not read as the default.
			if f := cmd.Flags().Lookup("output"); f.Changed && f.Value.String() == "" {
				return usagef("-o: empty file name (leave -o out to write the default file)")
			}
			return nil
		},
		RunE: runWith(opts, runF, calibrateRun),
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Device, "device", "auto", "device to calibrate: auto (a CUDA GPU when there is one, else the host), cpu or cuda[:N]")
	fs.StringVarP(&opts.Output, "output", "o", "", "profile file to write (default: gpuz/host-profile.json in the user's configuration directory, for the host)")
	fs.IntVar(&opts.Threads, "threads", min(runtime.NumCPU(), maxThreads()), fmt.Sprintf("host threads for BLAS and element-wise kernels in the samples and the held-out runs, at most %d (4 per CPU, %d at most)", maxThreads(), threadCap))
	fs.IntVar(&opts.Rounds, "rounds", defaultRounds, fmt.Sprintf("rounds of samples and held-out runs, interleaved; the fit and the errors use their medians (1 to %d)", maxRounds))
	return cmd
}

// calibrateRun measures the device, fits its profile, checks it on the
// held-out runs, writes the profile and then prints the report (a report
// that cannot be printed does not lose the profile).
func calibrateRun(ctx context.Context, o *CalibrateOptions) error {
	if o.Threads < 1 || o.Threads > maxThreads() {
		return usagef("--threads must be from 1 to %d, got %d", maxThreads(), o.Threads)
	}
	if o.Rounds < 1 || o.Rounds > maxRounds {
		return usagef("--rounds must be from 1 to %d, got %d", maxRounds, o.Rounds)
	}
	dev, spec, err := calibratedDevice(o.Device)
	if err != nil {
		return err
	}
	defer dev.Close()
	host := dev.Caps().Kind == device.KindHost
	path := o.Output
	if path == "" && !host {
		return usagef("calibrating %s: give the profile file with -o (the default file is the host's)", dev.Name())
	}
	if path == "" {
		if path, err = calibratedProfilePath(); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("creating the directory of the calibrated profile: %w", err)
		}
	}
	if err := checkOutputs(outputFile{"-o", path, false}); err != nil {
		return err
	}
	measure := o.measure
	if measure == nil {
		measure = measureForCalibration
	}
	heldOut := o.heldOut
	if heldOut == nil {
		heldOut = runHeldOut
	}
	var befores []perfmodel.Profile
	var rounds, held [][]perfmodel.Sample
	for r := range o.Rounds {
		fmt.Fprintf(o.IO.ErrOut, "calibrating %s, round %d of %d: timing the ops and copies…\n", dev.Name(), r+1, o.Rounds)
		before, samples, err := measure(ctx, dev, o.Threads)
		if err != nil {
			return calibrationStopped(ctx, path, fmt.Errorf("calibrating %s: %w", dev.Name(), err))
		}
		if ctx.Err() != nil {
			return calibrationStopped(ctx, path, nil)
		}
		fmt.Fprintf(o.IO.ErrOut, "calibrating %s, round %d of %d: small workload runs held out of the fit…\n", dev.Name(), r+1, o.Rounds)
		runs, err := heldOut(ctx, o, spec, before)
		if err != nil {
			return calibrationStopped(ctx, path, fmt.Errorf("calibrating %s: held-out runs: %w", dev.Name(), err))
		}
		if ctx.Err() != nil {
			return calibrationStopped(ctx, path, nil)
		}
		befores, rounds, held = append(befores, before), append(rounds, samples), append(held, runs)
	}
	before, err := calibration.MedianProfile(befores)
	if err != nil {
		return fmt.Errorf("calibrating %s: %w", dev.Name(), err)
	}
	samples, err := calibration.MedianSamples(rounds)
	if err != nil {
		return fmt.Errorf("calibrating %s: %w", dev.Name(), err)
	}
	fit, err := perfmodel.Fit(before, samples)
	if err != nil {
		return fmt.Errorf("calibrating %s: %w", dev.Name(), err)
	}
	// The profile first: a report that cannot be printed (standard
	// output on a full disk) must not lose what was measured.
	if err := writeFile(path, "the calibrated profile", func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(fit.Profile)
	}); err != nil {
		return err
	}
	err = report.WriteCalibration(o.IO.Out, report.Calibration{Before: before, After: fit.Profile, Kept: fit.Kept,
		Samples: samples, HeldOut: held})
	if err == nil {
		_, err = fmt.Fprintf(o.IO.Out, "wrote %s (--host-profile %s, --device sim:%s)\n", path, profileArg(path), profileArg(path))
	}
	if err != nil {
		return fmt.Errorf("wrote the profile to %s; writing the report to standard output: %w", path, err)
	}
	return nil
}

// calibrationStopped is err, or where ctx is done (a signal stopped the
// calibration: its measuring, a held-out run) the one line that says so
// in err's place, whose chain (the held-out run "skipped: run
// interrupted", the context's error) says nothing more: main prints it
// after "stopped by SIGINT: ".
func calibrationStopped(ctx context.Context, path string, err error) error {
	if ctx.Err() == nil {
		return err
	}
	return fmt.Errorf("calibration not finished; %s not written", path)
}

// calibratedDevice opens the device --device names for calibration and
// returns it with the spec that opens it again (for the held-out runs):
// auto is the first CUDA GPU when there is one, else the host. A
// simulated device is refused: it runs the host's kernels.
func calibratedDevice(spec string) (device.Device, string, error) {
	if spec == "auto" {
		if dev, _, err := device.Parse("cuda", nil); err == nil {
			return dev, "cuda", nil
		}
		spec = "cpu"
	}
	if kind, _, _ := strings.Cut(spec, ":"); kind == "sim" {
		return nil, "", usagef("--device %s: a simulated device runs the host's kernels; calibrate the host (--device cpu) or a GPU (cuda[:N])", spec)
	}
	dev, _, err := device.Parse(spec, nil)
	if err != nil {
		return nil, "", usagef("--device: %w", err)
	}
	return dev, spec, nil
}

// measureForCalibration returns dev's profile from its measured rates
// (perfmodel.HostProfile for the host, perfmodel.Measured for a GPU: the
// model before fitting) and its op and copy samples (calibration.Samples,
// on threads host threads), stopping between its timings when ctx is
// done.
func measureForCalibration(ctx context.Context, dev device.Device, threads int) (perfmodel.Profile, []perfmodel.Sample, error) {
	host := dev.Caps().Kind == device.KindHost
	n := calibrateGemmSize
	if !host {
		n = 4096
	}
	info, err := device.MeasureContext(ctx, dev, n)
	if err != nil {
		return perfmodel.Profile{}, nil, err
	}
	var p perfmodel.Profile
	if host {
		p = perfmodel.HostProfile(info.GemmFLOPS, info.UploadPageable)
		p.Name, p.MemoryBytes = "calibrated-host", info.Total
		p.Title = "this host (" + sysinfo.Collect().CPU + "), calibrated by gpuz calibrate"
	} else {
		p = perfmodel.Measured(strings.ReplaceAll(dev.Name(), ":", "-"), info.Total, info.GemmFLOPS, info.Bandwidth,
			info.UploadPinned, info.DownloadPinned, info.UploadPageable, info.DownloadPageable)
	}
	samples, err := calibration.Samples(ctx, dev, calibrateTarget, threads)
	return p, samples, err
}

// heldOutRun is a small workload run that calibration checks the fit on.
type heldOutRun struct {
	workload models.Workload
	task     bench.Task
	sizes    map[string]int
	// model is the llm workload's --model (its workload is then the
	// model's, as resolveModel gives it); "" for the others.
	model string
}

// heldOutRuns are the three workloads at --scale small, each task, the
// tiny linear training of issue 22 (2 blocks of 2 layers of 16, 150
// samples), and the llm workload's evaluation of smollm2-135m at --scale
// small (2 layers, sequences of 32, batches of 2) on one batch an epoch,
// 8 epochs each. The llm run's time is mostly its head's product with the
// 49152-token vocabulary; its training would add the products' gradients
// and Adam's update of the tied embedding, 770 MiB and about twice the
// time on a 2-core machine where its evaluation takes 150 MiB and about
// 0.8 s of CPU a round.
var heldOutRuns = []heldOutRun{
	{workload: models.Linear, task: bench.TaskTrain}, {workload: models.Linear, task: bench.TaskEval},
	{workload: models.Attention, task: bench.TaskTrain}, {workload: models.Attention, task: bench.TaskEval},
	{workload: models.Resnet, task: bench.TaskTrain}, {workload: models.Resnet, task: bench.TaskEval},
	{workload: models.Linear, task: bench.TaskTrain, sizes: map[string]int{"dims": 16, "blocks": 2, "layers-per-block": 2, "samples": 150, "batch": 150}},
	{workload: models.LLM, task: bench.TaskEval, sizes: map[string]int{"samples": 2}, model: "smollm2-135m"},
}

// heldOutEpochs and heldOutWarmup are each held-out run's epochs and
// leading epochs left out of its median.
const heldOutEpochs, heldOutWarmup = 8, 2

// runHeldOut runs heldOutRuns on the calibrated device (the cpu mode on
// the host, the cuda mode on a GPU) and returns each as a sample: its
// epoch as the model counts it and the median of its timed epochs.
func runHeldOut(ctx context.Context, o *CalibrateOptions, spec string, before perfmodel.Profile) ([]perfmodel.Sample, error) {
	var samples []perfmodel.Sample
	for _, r := range heldOutRuns {
		opts, err := r.options(ctx, o, spec)
		if err != nil {
			return nil, err
		}
		opts.HostProfile = &before
		res, err := bench.Run(ctx, opts)
		if err != nil {
			return nil, err
		}
		m := res.Modes[0]
		name := fmt.Sprintf("%s %s %s", opts.ModelName, r.task, res.Header.Scale)
		if m.Status.Kind != bench.StatusOK || m.Prediction == nil {
			return nil, fmt.Errorf("%s: %s, no prediction", name, m.Status)
		}
		var times []time.Duration
		for _, e := range m.Timed() {
			times = append(times, e.Duration())
		}
		slices.Sort(times)
		samples = append(samples, perfmodel.Sample{Name: name, Kernels: m.Prediction.Kernels, Copies: m.Prediction.Copies,
			Time: times[len(times)/2]})
	}
	return samples, nil
}

// options returns the runner's options of r on the device spec opens (the
// cpu mode on the host, the cuda mode on a GPU) with o's threads, before
// the profile it is predicted on is set; errInterrupted where ctx ends
// while its model is read.
func (r heldOutRun) options(ctx context.Context, o *CalibrateOptions, spec string) (bench.Options, error) {
	sizes := map[string]int{"epochs": heldOutEpochs}
	for k, v := range r.sizes {
		sizes[k] = v
	}
	mode := bench.ResidentMode(spec != "cpu")
	w := &WorkloadOptions{IO: o.IO, Workload: r.workload, Task: r.task, Modes: []bench.Mode{mode},
		Scale: models.ScaleSmall, Sizes: sizes, Warmup: heldOutWarmup, LR: bench.DefaultLR, Seed: 1, Threads: o.Threads, Device: spec,
		Cache: cache.Config{Policy: cache.Window, Window: 3}, Model: r.model}
	if err := w.resolveModel(ctx); err != nil {
		return bench.Options{}, err
	}
	opts, err := w.check()
	if err != nil {
		return bench.Options{}, err
	}
	if !mode.OnHost() {
		opts.NewGPU = func() (device.Device, error) { d, _, err := device.Parse(spec, nil); return d, err }
		opts.GPUName = spec
	}
	return opts, nil
}
