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
	"gpuz/internal/device"
	"gpuz/internal/models"
	"gpuz/internal/perfmodel"
	"gpuz/internal/report"
	"gpuz/internal/sysinfo"
)

// calibrateTarget is about how long each kernel or copy sample's timed run
// takes: three of them and a warm-up make a sample, about 40 samples a
// calibration, so that the kernels take a few seconds.
const calibrateTarget = 10 * time.Millisecond

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
	// Threads is the host's thread count for the held-out runs.
	Threads int
	// measure, when set, replaces measuring the device: it returns the
	// device's profile before fitting and the kernel and copy samples
	// (tests give synthetic ones).
	measure func(dev device.Device) (perfmodel.Profile, []perfmodel.Sample, error)
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
		Long: `calibrate measures a device with short runs of each kernel class (products,
element-wise kernels, copies each way, from a few floats to buffers beyond the
caches), fits the performance model's efficiency factors and its fixed costs
per kernel and per copy to the measured times by least squares, and writes
the fitted profile as JSON. It then runs small workloads that the fit did not
see (the three workloads at --scale small, and the tiny linear training) and
prints the model's error on them before and after fitting.

Without a GPU it calibrates the host: the profile, written by default to
gpuz/host-profile.json in the user's configuration directory, is the one
--host-profile FILE takes (and the commands that rank the cpu mode read from
there when --host-profile is not given). With --device cuda it calibrates the
GPU, for --device sim:FILE; -o is then required. About ten seconds on a
2-core machine. docs/model.md says how the fit works.`,
		Example: "  gpuz calibrate\n  gpuz calibrate -o host.json\n  gpuz calibrate --device cuda -o gpu.json",
		Args:    noArgs,
		RunE:    runWith(opts, runF, calibrateRun),
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Device, "device", "auto", "device to calibrate: auto (a CUDA GPU when there is one, else the host), cpu or cuda[:N]")
	fs.StringVarP(&opts.Output, "output", "o", "", "profile file to write (default: gpuz/host-profile.json in the user's configuration directory, for the host)")
	fs.IntVar(&opts.Threads, "threads", min(runtime.NumCPU(), maxThreads()), fmt.Sprintf("host threads for BLAS and element-wise kernels in the held-out runs, at most %d (4 per CPU, %d at most)", maxThreads(), threadCap))
	return cmd
}

// calibrateRun measures the device, fits its profile, checks it on the
// held-out runs, prints the report and writes the profile.
func calibrateRun(ctx context.Context, o *CalibrateOptions) error {
	if o.Threads < 1 || o.Threads > maxThreads() {
		return usagef("--threads must be from 1 to %d, got %d", maxThreads(), o.Threads)
	}
	dev, spec, err := calibratedDevice(o.Device)
	if err != nil {
		return err
	}
	defer dev.Close()
	_, host := dev.(*device.Host)
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
	fmt.Fprintf(o.IO.ErrOut, "calibrating %s: timing products, element-wise kernels and copies…\n", dev.Name())
	before, samples, err := measure(dev)
	if err != nil {
		return fmt.Errorf("calibrating %s: %w", dev.Name(), err)
	}
	fit, err := perfmodel.Fit(before, samples)
	if err != nil {
		return fmt.Errorf("calibrating %s: %w", dev.Name(), err)
	}
	heldOut := o.heldOut
	if heldOut == nil {
		heldOut = runHeldOut
	}
	fmt.Fprintf(o.IO.ErrOut, "checking the fit on small workload runs…\n")
	runs, err := heldOut(ctx, o, spec, before)
	if err != nil {
		return fmt.Errorf("calibrating %s: held-out runs: %w", dev.Name(), err)
	}
	if err := report.WriteCalibration(o.IO.Out, report.Calibration{Before: before, After: fit.Profile, Kept: fit.Kept,
		Samples: samples, HeldOut: runs}); err != nil {
		return err
	}
	if err := writeFile(path, "the calibrated profile", func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(fit.Profile)
	}); err != nil {
		return err
	}
	fmt.Fprintf(o.IO.Out, "wrote %s (--host-profile %s, --device sim:%s)\n", path, path, path)
	return nil
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
// model before fitting) and its kernel and copy samples.
func measureForCalibration(dev device.Device) (perfmodel.Profile, []perfmodel.Sample, error) {
	_, host := dev.(*device.Host)
	n := calibrateGemmSize
	if !host {
		n = 4096
	}
	info, err := device.Measure(dev, n)
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
	samples, err := device.CalibrationSamples(dev, calibrateTarget)
	return p, samples, err
}

// heldOutRun is a small workload run that calibration checks the fit on.
type heldOutRun struct {
	workload models.Workload
	task     bench.Task
	sizes    map[string]int
}

// heldOutRuns are the three workloads at --scale small, each task, and the
// tiny linear training of issue 22 (2 blocks of 2 layers of 16, 150
// samples), 8 epochs each.
var heldOutRuns = []heldOutRun{
	{models.Linear, bench.TaskTrain, nil}, {models.Linear, bench.TaskEval, nil},
	{models.Attention, bench.TaskTrain, nil}, {models.Attention, bench.TaskEval, nil},
	{models.Resnet, bench.TaskTrain, nil}, {models.Resnet, bench.TaskEval, nil},
	{models.Linear, bench.TaskTrain, map[string]int{"dims": 16, "blocks": 2, "layers-per-block": 2, "samples": 150, "batch": 150}},
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
		sizes := map[string]int{"epochs": heldOutEpochs}
		for k, v := range r.sizes {
			sizes[k] = v
		}
		mode := bench.ModeCPU
		if spec != "cpu" {
			mode = bench.ModeCUDA
		}
		w := &WorkloadOptions{IO: o.IO, Workload: r.workload, Task: r.task, Modes: []bench.Mode{mode},
			Scale: models.ScaleSmall, Sizes: sizes, Warmup: heldOutWarmup, LR: bench.DefaultLR, Seed: 1, Threads: o.Threads, Device: spec,
			Cache: cache.Config{Policy: cache.Window, Window: 3}}
		opts, err := w.check()
		if err != nil {
			return nil, err
		}
		opts.HostProfile = &before
		if mode == bench.ModeCUDA {
			opts.NewGPU = func() (device.Device, error) { d, _, err := device.Parse(spec, nil); return d, err }
			opts.GPUName = spec
		}
		res, err := bench.Run(ctx, opts)
		if err != nil {
			return nil, err
		}
		m := res.Modes[0]
		name := fmt.Sprintf("%s %s %s", r.workload.Name, r.task, res.Header.Scale)
		if m.Status.Kind != bench.StatusOK || m.Prediction == nil {
			return nil, fmt.Errorf("%s: %s, no prediction", name, m.Status)
		}
		var times []time.Duration
		for _, e := range m.Timed() {
			times = append(times, e.Duration)
		}
		slices.Sort(times)
		samples = append(samples, perfmodel.Sample{Name: name, Kernels: m.Prediction.Kernels, Copies: m.Prediction.Copies,
			Time: times[len(times)/2]})
	}
	return samples, nil
}
