package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"

	"github.com/spf13/pflag"

	"gpuz/internal/bench"
	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/kernels"
	"gpuz/internal/models"
	"gpuz/internal/report"
)

// runOptions are the flags every workload command shares.
type runOptions struct {
	Scale   string
	Epochs  int
	Warmup  int
	Batch   int
	Samples int
	LR      float64
	Seed    uint64
	Threads int
	JSON    string
	// CPUProfile names a file for a pprof CPU profile of the run.
	CPUProfile string
	// Device names the device of the cuda and cache modes.
	Device string
	// Policy, WinSize and OptimizerOn place the blocks in cache mode.
	Policy      string
	WinSize     int
	OptimizerOn string
}

// addRunFlags registers the shared flags.
func addRunFlags(fs *pflag.FlagSet, o *runOptions) {
	fs.StringVar(&o.Scale, "scale", models.ScaleFull, "size preset: full (the reference sizes) or small (about a second per mode)")
	fs.IntVar(&o.Epochs, "epochs", 0, "epochs per mode, warm-up included (default: the workload's)")
	fs.IntVar(&o.Warmup, "warmup", 1, "leading epochs reported apart from the statistics")
	fs.IntVar(&o.Batch, "batch", 0, "samples per batch (default: the preset's)")
	fs.IntVar(&o.Samples, "samples", 0, "samples in the data set, a multiple of --batch (default: the preset's)")
	fs.Float64Var(&o.LR, "lr", kernels.DefaultAdam.LR, "Adam learning rate")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the initial weights and the data")
	fs.IntVar(&o.Threads, "threads", runtime.NumCPU(), "host threads for BLAS and element-wise kernels")
	fs.StringVar(&o.JSON, "json", "", "also write the results as JSON to this file (- for standard output)")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a pprof CPU profile of the run to this file")
	fs.StringVar(&o.Device, "device", "auto", "device of the cuda and cache modes: auto, cpu, sim[:SIZE] or cuda[:N]")
	fs.StringVar(&o.Policy, "policy", string(engine.PolicyWindow), "cache policy: window (DictCache's) or auto")
	fs.IntVar(&o.WinSize, "win-size", 3, "blocks resident at once in cache mode (auto policy: 0 sizes it from free memory)")
	fs.StringVar(&o.OptimizerOn, "optimizer-on", "device", "where cache mode runs the optimizer: device or host (auto policy)")
}

// parseTask reads train or eval.
func parseTask(s string) (bench.Task, error) {
	switch t := bench.Task(s); t {
	case bench.TaskTrain, bench.TaskEval:
		return t, nil
	}
	return "", fmt.Errorf("unknown task %q (want train or eval)", s)
}

// parseModes reads a comma list of modes: cuda (or gpu), cache, cpu, each
// at most once.
func parseModes(s string) ([]bench.Mode, error) {
	var modes []bench.Mode
	seen := map[bench.Mode]bool{}
	for _, word := range strings.Split(s, ",") {
		word = strings.TrimSpace(word)
		var m bench.Mode
		switch word {
		case "":
			return nil, fmt.Errorf("empty mode in %q (want a comma list of cuda, cache, cpu)", s)
		case "cuda", "gpu":
			m = bench.ModeCUDA
		case "cache":
			m = bench.ModeCache
		case "cpu":
			m = bench.ModeCPU
		default:
			return nil, fmt.Errorf("unknown mode %q (want cuda, cache or cpu)", word)
		}
		if seen[m] {
			return nil, fmt.Errorf("mode %s given twice in %q", m, s)
		}
		seen[m] = true
		modes = append(modes, m)
	}
	return modes, nil
}

// validate checks the shared flags against a workload's total epochs.
func (o *runOptions) validate(epochs int) error {
	switch {
	case o.Warmup < 0:
		return fmt.Errorf("--warmup must not be negative, got %d", o.Warmup)
	case o.Warmup >= epochs:
		return fmt.Errorf("--warmup (%d) must be less than the epochs (%d) so that some are timed", o.Warmup, epochs)
	case !(o.LR > 0):
		return fmt.Errorf("--lr must be positive, got %g", o.LR)
	case o.Threads <= 0:
		return fmt.Errorf("--threads must be positive, got %d", o.Threads)
	case o.OptimizerOn != "device" && o.OptimizerOn != "host":
		return fmt.Errorf("unknown --optimizer-on %q (want device or host)", o.OptimizerOn)
	}
	return o.placement().Validate()
}

// placement is cache mode's placement of the blocks.
func (o *runOptions) placement() engine.Placement {
	return engine.Placement{Paged: true, Policy: engine.Policy(o.Policy), Window: o.WinSize, OptimizerOnHost: o.OptimizerOn == "host"}
}

// gpu checks --device and returns the factory of fresh devices for the cuda
// and cache modes (nil for --device cpu), their name and a warning line, if
// any.
func (o *runOptions) gpu() (func() (device.Device, error), string, string, error) {
	ledger := device.OpenLedger(device.DefaultLedgerPath())
	dev, warning, err := device.Parse(o.Device, ledger)
	if err != nil {
		return nil, "", "", err
	}
	if _, host := dev.(*device.Host); host {
		return nil, "", warning, nil
	}
	first := true
	return func() (device.Device, error) {
		if first {
			first = false
			return dev, nil
		}
		d, _, err := device.Parse(o.Device, ledger)
		return d, err
	}, dev.Name(), warning, nil
}

// sizeFlag is an integer flag whose zero default means "the preset's".
type sizeFlag struct {
	name  string
	value *int
}

// overrideSizes copies every size flag the user set over the preset's value,
// rejecting non-positive ones.
func overrideSizes(fs *pflag.FlagSet, flags []sizeFlag, preset []*int) error {
	for i, f := range flags {
		if !fs.Changed(f.name) {
			continue
		}
		if *f.value <= 0 {
			return fmt.Errorf("--%s must be positive, got %d", f.name, *f.value)
		}
		*preset[i] = *f.value
	}
	return nil
}

// parseWorkloadArgs reads "train|eval [MODES]".
func parseWorkloadArgs(args []string) (bench.Task, []bench.Mode, error) {
	if len(args) == 0 {
		return "", nil, errors.New("missing task: train or eval")
	}
	if len(args) > 2 {
		return "", nil, fmt.Errorf("too many arguments: %q (want train|eval [MODES])", strings.Join(args, " "))
	}
	task, err := parseTask(args[0])
	if err != nil {
		return "", nil, err
	}
	modes := "cuda,cache,cpu"
	if len(args) == 2 {
		modes = args[1]
	}
	m, err := parseModes(modes)
	return task, m, err
}

// benchmark runs the matrix and prints the header, one line per epoch and
// the Analyze table; with --json it also writes the results there.
func benchmark(ctx context.Context, stdout, stderr io.Writer, o *runOptions, opts bench.Options) error {
	newGPU, gpuName, warning, err := o.gpu()
	if err != nil {
		return err
	}
	if warning != "" {
		// JSON on standard output must stay parseable: the warning then
		// goes to standard error.
		w := stdout
		if o.JSON == "-" {
			w = stderr
		}
		fmt.Fprintf(w, "warning: %s\n", warning)
	}
	opts.NewGPU, opts.GPUName, opts.Cache = newGPU, gpuName, o.placement()
	if planOnly(ctx) {
		kernels.SetThreads(o.Threads)
		return printPlan(stdout, o, opts)
	}
	opts.Progress = func(e bench.Event) {
		if e.Header != nil {
			report.WriteHeader(stdout, *e.Header)
			return
		}
		if e.Epoch == nil {
			fmt.Fprintf(stdout, "\n== %s on %s ==\n", e.Mode, e.Device)
			return
		}
		report.WriteEpoch(stdout, opts.Task, *e.Epoch, e.Warmup, e.Device)
	}
	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err != nil {
			return &runFailure{fmt.Errorf("creating the profile: %w", err)}
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return &runFailure{fmt.Errorf("starting the profile: %w", err)}
		}
		defer pprof.StopCPUProfile()
	}
	res, err := bench.Run(ctx, opts)
	if err != nil {
		return &runFailure{err}
	}
	fmt.Fprintln(stdout)
	if err := report.WriteAnalyze(stdout, res); err != nil {
		return &runFailure{fmt.Errorf("writing the table: %w", err)}
	}
	if o.JSON != "" {
		if err := writeJSONFile(stdout, o.JSON, res); err != nil {
			return &runFailure{err}
		}
	}
	if ctx.Err() != nil {
		return errInterrupted
	}
	return nil
}

func writeJSONFile(stdout io.Writer, path string, res bench.Result) error {
	if path == "-" {
		return report.WriteJSON(stdout, res)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	if err := report.WriteJSON(f, res); err != nil {
		f.Close()
		return fmt.Errorf("writing results to %s: %w", path, err)
	}
	return f.Close()
}
