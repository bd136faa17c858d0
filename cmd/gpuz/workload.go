package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"gpuz/internal/bench"
	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/hfconfig"
	"gpuz/internal/levers"
	"gpuz/internal/models"
	"gpuz/internal/perfmodel"
	"gpuz/internal/quant"
	"gpuz/internal/report"
	"gpuz/internal/sysinfo"
	"gpuz/internal/units"
)

// workloadDef is a workload command: the workload, whose sizes give the
// command its size flags, and the command's texts.
type workloadDef struct {
	workload             models.Workload
	short, long, example string
	// flags adds the workload's own flags, if it has any: plain ones to
	// the flag set, sweepable ones to the list flags.
	flags func(*pflag.FlagSet, *listFlags, *WorkloadOptions)
}

// WorkloadOptions are the arguments and flags of a workload command,
// gpuz MODEL train|eval [MODES], and of its plan, gpuz plan MODEL ….
type WorkloadOptions struct {
	IO       *IOStreams
	Workload models.Workload
	Task     bench.Task   // train or eval
	Modes    []bench.Mode // in the order given
	Scale    string       // the size preset: full or small
	// Sizes are the workload's sizes the user set, by name (its flag's);
	// the others are the preset's.
	Sizes   map[string]int
	Warmup  int     // leading epochs reported apart
	LR      float64 // Adam's learning rate
	Seed    uint64  // of the initial weights and the data
	Threads int     // host threads, applied by bench
	// JSON names a file for the results (or the plan) as JSON; "-" is
	// standard output, a shorthand for Format json.
	JSON string
	// BenchOut names a file for the timed epochs in the Go benchmark
	// format (benchstat's, gpuz compare's).
	BenchOut string
	// Format is what goes to standard output: text (the table, the
	// default), markdown, csv or json; the others send the header, the
	// epoch lines and the text table to standard error.
	Format string
	// Wide shows every column of the tables instead of those that fit
	// 100 columns.
	Wide bool
	// Plot names an image (.svg or .png) to draw the results to, as gpuz
	// plot draws their JSON.
	Plot string
	// CPUProfile names a file for a pprof CPU profile of the run.
	CPUProfile string
	// Device names the device of the cuda and cache modes.
	Device string
	// HostProfile names the host profile the cpu mode is predicted on: a
	// built-in one's name or a profile file (perfmodel.OpenHost); ""
	// predicts it on none.
	HostProfile string
	// Cache is how cache mode pages the blocks (--policy, --win-size,
	// --optimizer-on), as it reaches bench's run configuration and the
	// engine's cache unchanged.
	Cache cache.Config
	// PlaceText places each block of the hybrid mode on the GPU, on the
	// host or in the GPU's cache, as --place reads it (bench.ParsePlace).
	PlaceText string
	// Take is the device memory gpuz holds on the cuda and cache modes'
	// device around the run, as take-mem reads it (N linear blocks or a
	// size); "" or "0" holds nothing.
	Take string
	// ManagedPageText is the managed mode's page, as --managed-page reads it
	// (a size: 2MiB, 64KiB).
	ManagedPageText string
	// ManagedAdvise is --managed-advise: none (pages migrate) or host
	// (the pages that do not fit stay in host memory, read in place).
	ManagedAdvise string
	// Recompute is --recompute: none, or blocks (keep only each block's
	// input; run the block's forward again before its gradients).
	Recompute levers.Recompute
	// Precision is --precision: fp32, bf16 or fp16 (storage on the
	// compute device, mixed precision in training).
	Precision levers.Precision
	// GradAccum is --grad-accum: the micro-batches of each training
	// step, whose gradients are added before one optimizer step; 0 is 1.
	GradAccum levers.GradAccum
	// Sweep lists the flags given several values, in the order of the
	// command line: the run is then a sweep over their cross product, each
	// configuration these options with one value of each set (sweepRun).
	// The fields above hold the flags given one value.
	Sweep []SweepFlag
	// PlanOnly prints the memory plan instead of running.
	PlanOnly bool
	// Attention is --attention of the workloads with attention layers:
	// eager or fused; "" is the workload's default.
	Attention levers.Attention
	// LoRA is --lora, --lora-alpha and --lora-targets of the workloads
	// with linear layers to adapt; the zero value is off.
	LoRA levers.LoRA
	// Model is the llm workload's --model: a preset, a config.json or a
	// directory holding one; "" for the other workloads.
	Model string
	// ListModels is the llm workload's --list-models: print the presets.
	ListModels bool
	// Framework is the llm workload's plan --framework: gpuz, torch or
	// torch-1.13 (framework.go).
	Framework string
	// Generate is the generate task's sizes (--prompt, --tokens,
	// --context, --prompt-ids) and cache type (--kv-dtype);
	// promptIDsText and kvDTypeText are --prompt-ids and --kv-dtype as
	// given, promptGiven and tokensGiven whether --prompt and --tokens
	// were given (a zero given is refused, one not given is the scale's
	// default).
	Generate      bench.GenerateOptions
	promptIDsText string
	// kvDTypeText is --kv-dtype as given.
	kvDTypeText string
	// Weights is --weights when it names a quantized kind (the storage of
	// the frozen weights); quant.F32 otherwise. weightsText is --weights
	// as given.
	Weights     quant.Kind
	weightsText string
	// fileWeights is the kind a GGUF model stores its projections in
	// (--model FILE.gguf), which --weights defaults to; quant.F32 for
	// every other model.
	fileWeights quant.Kind
	// gguf is the GGUF model's tensor table (--model FILE.gguf), nil for
	// every other model; LoadWeights is --load-weights (compute with the
	// file's weights).
	gguf        *hfconfig.GGUF
	LoadWeights bool
	// HostMemoryText is plan's and fit's --host-memory: the target host's
	// memory as a size, "" for this machine's.
	HostMemoryText string
	// contextText is --context as given: a number of positions or max.
	contextText              string
	promptGiven, tokensGiven bool
	// modelName names the llm workload's model in the run ("" for the
	// others): resolveModel sets it with the workload.
	modelName string
	// setupNoteAfter is how long a setup phase lasts before a standard
	// error that is not a terminal says what it is doing (setupNotes):
	// 0 is defaultSetupNoteDelay, less than 0 at once (tests).
	setupNoteAfter time.Duration
}

// newWorkloadCmd builds "gpuz NAME train|eval [MODES]", or with planOnly
// its plan, with the shared flags and a flag for each of the workload's
// sizes. runF, when not nil, is called instead of workloadRun.
func newWorkloadCmd(ios *IOStreams, def workloadDef, planOnly bool, runF func(context.Context, *WorkloadOptions) error) *cobra.Command {
	opts := &WorkloadOptions{IO: ios, Workload: def.workload, PlanOnly: planOnly,
		Cache: cache.Config{Policy: cache.Window, Window: 3}}
	var lists listFlags
	cmd := &cobra.Command{
		Use:     def.workload.Name + " " + tasksOf(def.workload) + " [MODES]",
		Short:   def.short,
		Long:    def.long,
		Example: def.example,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.ListModels {
				return writeModelList(opts)
			}
			var err error
			if opts.Task, opts.Modes, err = parseWorkloadArgs(args); err != nil {
				return usage(err)
			}
			if err := opts.resolveModel(cmd.Context()); err != nil {
				return err
			}
			if err := opts.checkTaskFlags(cmd.Flags()); err != nil {
				return usage(err)
			}
			if err := emptyFlagError(cmd.Flags()); err != nil {
				return usage(err)
			}
			if err := finiteFloatFlags(cmd.Flags()); err != nil {
				return usage(err)
			}
			opts.Sizes = map[string]int{}
			if err := lists.apply(opts); err != nil {
				return usage(err)
			}
			if err := opts.weightsKind(cmd.Flags()); err != nil {
				return usage(err)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return workloadRun(cmd.Context(), opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Scale, "scale", models.ScaleFull, "size preset: full (the reference sizes), small (the same shapes shrunk: a tenth of a second or less per mode, a few seconds for llm) or demo (the offload story in seconds on sim:256MiB: see --take)")
	for _, s := range def.workload.Sizes {
		lists.add(fs, s.Name, "ints", "", s.Usage+"; a comma list sweeps")
	}
	if def.flags != nil {
		def.flags(fs, &lists, opts)
	}
	if planOnly {
		addFrameworkFlag(fs, opts)
	}
	fs.IntVar(&opts.Warmup, "warmup", 1, "leading epochs reported apart from the statistics")
	fs.Float64Var(&opts.LR, "lr", bench.DefaultLR, "Adam learning rate")
	fs.Uint64Var(&opts.Seed, "seed", 1, "seed of the initial weights and the data")
	fs.IntVar(&opts.Threads, "threads", min(runtime.NumCPU(), maxThreads()), fmt.Sprintf("host threads for BLAS and element-wise kernels, at most %d (4 per CPU, %d at most)", maxThreads(), threadCap))
	fs.StringVar(&opts.JSON, "json", "", "also write the results as JSON to this file (- for standard output, the report then going to standard error)")
	fs.StringVar(&opts.BenchOut, "bench-out", "", "also write every timed epoch to this file in the Go benchmark format (for benchstat and gpuz compare)")
	fs.StringVar(&opts.Format, "format", string(report.FormatText), "what goes to standard output: text, markdown, csv or json (the others send the epochs and the text table to standard error)")
	fs.BoolVar(&opts.Wide, "wide", false, "show every column of the table (mean, stddev, min, max, setup, copies each way, copy rate), past 100 columns")
	fs.StringVar(&opts.CPUProfile, "cpuprofile", "", "write a pprof CPU profile of the run to this file")
	fs.StringVar(&opts.Device, "device", "auto", "device of the cuda and cache modes: auto, cpu, sim[:SIZE], sim:PROFILE (gpuz devices --profiles), sim:FILE (a profile file: a name ending in .json or with a slash) or cuda[:N]")
	fs.StringVar(&opts.HostProfile, "host-profile", "", "predict the cpu mode on this host profile: "+strings.Join(perfmodel.HostNames(), ", ")+" (the reference laptop's CPU), or a profile file (a name ending in .json or with a slash) such as gpuz calibrate writes; docs/model.md")
	lists.add(fs, "policy", "strings", string(cache.Window), "cache policy: window (DictCache's: Adam's state resident on the device, blocks paged), window-paged (Adam's state paged with its block) or auto; a comma list sweeps")
	lists.add(fs, "win-size", "ints", "3", "blocks resident at once in cache mode (auto policy: 0 sizes it from free memory); 3 as DictCache's demos pass, the class's own default being 1; a comma list sweeps")
	lists.add(fs, "optimizer-on", "strings", "device", "where cache mode runs the optimizer: device or host (auto policy); a comma list sweeps")
	fs.StringVar(&opts.ManagedPageText, "managed-page", "", "the managed mode's page, its unit of migration: a power of two from 4KiB (default 2MiB: the block NVIDIA's driver migrates)")
	fs.StringVar(&opts.ManagedAdvise, "managed-advise", "none", "the managed mode's advice: none (pages migrate to the GPU as kernels touch them, least recently used out first) or host (the pages that do not fit stay in host memory and kernels read them there across the bus, as the Windows driver's fallback)")
	fs.StringVar(&opts.PlaceText, "place", "", "the hybrid mode's placement: PLACE:N or PLACE:N-M, comma-separated, PLACE cuda (resident on the GPU), host (resident and computed on the host) or cache (paged through the GPU under --policy, --win-size and --optimizer-on), blocks counted from 0 as the model's, each placed once (e.g. host:0-1,cuda:2-13 or host:0-1,cache:2-13 for attention)")
	lists.add(fs, "recompute", "strings", string(levers.RecomputeNone), "activations in training: none (keep every one the backward pass reads) or blocks (keep only each block's input and run the block's forward again before its gradients, as torch.utils.checkpoint per block); eval is unchanged; a comma list sweeps")
	lists.add(fs, "precision", "strings", string(levers.FP32), "storage precision on the compute device: fp32, bf16 or fp16 (products' operands, results and weights in 16 bits as automatic mixed precision keeps them, softmax, layer norm and the losses in fp32; training keeps fp32 masters with Adam's moments, and fp16 scales the loss as PyTorch's GradScaler does, skipping a step whose gradients overflow); a comma list sweeps")
	lists.add(fs, "grad-accum", "ints", "1", "gradient accumulation in training: each batch runs as K micro-batches of batch/K samples (the batch a multiple of K) whose gradients are added before one optimizer step on their mean, so the step is the batch's and the saved activations a micro-batch's; a comma list sweeps")
	lists.add(fs, "take", "strings", "", "device memory to hold during the run, as take-mem's N blocks or SIZE (0: none); a comma list sweeps")
	if planOnly {
		// --json takes a value here as in the runs: with an optional value
		// (pflag's NoOptDefVal) "--json FILE" would read FILE as MODES, and
		// "plan linear train --json cpu" cannot tell a file from a mode.
		fs.Lookup("json").Usage = "print the plan as JSON to this file instead of the table (- for standard output)"
		fs.Lookup("take").Usage = "device memory to plan without, as take-mem's N blocks or SIZE: subtracted from the free memory, nothing held (0: none)"
		fs.StringVar(&opts.HostMemoryText, "host-memory", "", "the memory of the host you plan for, a SIZE (16GiB): planned against instead of what this machine has available, a simulated GPU's memory then counted apart from it as the real card's (default: this machine's)")
		fs.StringVar(&opts.Plot, "plot", "", "also draw the device memory over one batch's steps to this image, FILE.svg or FILE.png: a panel per mode, placement and recompute setting, stacked by what holds it")
		fs.Lookup("recompute").Usage = "activations in training: none (keep every one the backward pass reads) or blocks (keep only each block's input and run the block's forward again before its gradients); a comma list plans each, a row per mode and setting; eval is unchanged"
		fs.Lookup("precision").Usage = "storage precision on the compute device: fp32, bf16 or fp16 (products' operands, results and weights in 16 bits as automatic mixed precision keeps them, softmax, layer norm and the losses in fp32; training keeps fp32 masters with Adam's moments); each kind's bytes are planned at the precision it is stored in; one value"
	} else {
		fs.StringVar(&opts.Plot, "plot", "", "also draw the results to this image, FILE.svg or FILE.png (as gpuz plot)")
	}
	return cmd
}

// parseWorkloadArgs reads "train|eval [MODES]".
func parseWorkloadArgs(args []string) (bench.Task, []bench.Mode, error) {
	if len(args) == 0 {
		return "", nil, errors.New("missing task: train, eval or, for llm, generate")
	}
	if len(args) > 2 {
		return "", nil, fmt.Errorf("too many arguments: %q (want a task and MODES)", strings.Join(args, " "))
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

// parseTask reads train or eval.
func parseTask(s string) (bench.Task, error) {
	switch t := bench.Task(s); t {
	case bench.TaskTrain, bench.TaskEval, bench.TaskGenerate:
		return t, nil
	}
	return "", fmt.Errorf("unknown task %q (want train, eval or, for llm, generate)", s)
}

// parseModes reads a comma list of modes (bench.ParseMode: cuda or gpu,
// cache, cpu, hybrid, managed), each at most once.
func parseModes(s string) ([]bench.Mode, error) {
	var modes []bench.Mode
	seen := map[bench.Mode]bool{}
	for _, word := range strings.Split(s, ",") {
		word = strings.TrimSpace(word)
		m, ok := bench.ParseMode(word)
		switch {
		case word == "":
			return nil, fmt.Errorf("empty mode in %q (want a comma list of cuda, cache, cpu)", s)
		case !ok:
			return nil, fmt.Errorf("unknown mode %q (want %s)", word, modeList())
		}
		if seen[m] {
			return nil, fmt.Errorf("mode %s given twice in %q", m, s)
		}
		seen[m] = true
		modes = append(modes, m)
	}
	return modes, nil
}

// modeList names every mode as a list in words: "cuda, cache, cpu,
// hybrid or managed".
func modeList() string {
	names := make([]string, 0, len(bench.Modes()))
	for _, m := range bench.Modes() {
		names = append(names, string(m))
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// finiteFloatFlags rejects a float flag set to infinity or NaN, which
// strconv (and so pflag) accepts as numbers: no rate, size or threshold of
// a run means anything there. It checks every float flag the user set, so a
// float flag added later is covered without a line here.
func finiteFloatFlags(fs *pflag.FlagSet) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err != nil || (f.Value.Type() != "float64" && f.Value.Type() != "float32") {
			return
		}
		v, perr := strconv.ParseFloat(f.Value.String(), 64)
		if perr != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			err = fmt.Errorf("--%s must be a finite number, got %s", f.Name, f.Value.String())
		}
	})
	return err
}

// threadCap is the most host threads --threads accepts on any machine.
const threadCap = 512

// maxThreads is the most host threads --threads accepts here: 4 per CPU,
// threadCap at most. More only adds threads that wait for a core, and
// OpenBLAS starts each of them, which under a memory limit aborts the
// process in pthread_create.
func maxThreads() int { return min(4*runtime.NumCPU(), threadCap) }

// validate checks the shared settings against the workload's total epochs.
func (o *WorkloadOptions) validate(epochs int) error {
	switch {
	case o.Warmup < 0:
		return fmt.Errorf("--warmup must not be negative, got %d", o.Warmup)
	case o.Warmup >= epochs:
		return fmt.Errorf("--warmup (%d) must be less than the epochs (%d) so that some are timed", o.Warmup, epochs)
	case math.IsNaN(o.LR) || math.IsInf(o.LR, 0):
		return fmt.Errorf("--lr must be a finite number, got %g", o.LR)
	case !(o.LR > 0):
		return fmt.Errorf("--lr must be positive, got %g", o.LR)
	case math.IsInf(float64(float32(o.LR)), 0):
		return fmt.Errorf("--lr %g is infinite in float32, which the models compute in (the largest float32 is %s)", o.LR, strconv.FormatFloat(math.MaxFloat32, 'g', -1, 32))
	case float32(o.LR) == 0:
		return fmt.Errorf("--lr %g is 0 in float32, which the models compute in (the smallest float32 above 0 is %s)", o.LR, strconv.FormatFloat(math.SmallestNonzeroFloat32, 'g', -1, 32))
	case o.Threads <= 0:
		return fmt.Errorf("--threads must be positive, got %d", o.Threads)
	case o.Threads > maxThreads():
		return fmt.Errorf("--threads must be at most %d (4 per CPU, %d at most), got %d", maxThreads(), threadCap, o.Threads)
	}
	if err := o.validateFormat(); err != nil {
		return err
	}
	return o.Cache.Validate()
}

// validateFormat checks --format and that it and --json do not both claim
// the same output: standard output (--json - beside a format other than
// json), or, for plan, the one output the plan is written to.
func (o *WorkloadOptions) validateFormat() error {
	if o.Format == "" {
		return nil
	}
	f, err := report.ParseFormat(o.Format)
	if err != nil {
		return fmt.Errorf("--format: %w", err)
	}
	switch {
	case o.JSON == "-" && f != report.FormatText && f != report.FormatJSON:
		return fmt.Errorf("--json - and --format %s both write to standard output; give one", f)
	case o.PlanOnly && o.JSON != "" && f != report.FormatText && f != report.FormatJSON:
		return fmt.Errorf("--json and --format %s both choose the plan's output; give one", f)
	}
	return nil
}

// format is what goes to standard output: --format's, or json for
// --json -.
func (o *WorkloadOptions) format() report.Format {
	if o.JSON == "-" {
		return report.FormatJSON
	}
	if f, err := report.ParseFormat(o.Format); err == nil {
		return f
	}
	return report.FormatText
}

// place reads --place into opts.Place for the model cfg builds: the
// hybrid mode needs it, and it applies to that mode only.
func (o *WorkloadOptions) place(cfg models.Config, opts *bench.Options) error {
	hybrid := slices.ContainsFunc(o.Modes, bench.Mode.PlacesBlocks)
	switch {
	case hybrid && o.PlaceText == "":
		return errors.New("the hybrid mode needs --place (e.g. host:0,cuda:1-11)")
	case !hybrid && o.PlaceText != "":
		return errors.New("--place places the hybrid mode's blocks; add hybrid to the modes")
	case !hybrid:
		return nil
	case strings.Contains(o.PlaceText, ";"):
		return errors.New("--place: a sweep over several placements is not supported yet")
	}
	// The blocks are counted without building the model, which the run
	// builds once for its modes (models.BlockCount).
	var err error
	if opts.Place, err = bench.ParsePlace(o.PlaceText, models.BlockCount(cfg)); err != nil {
		return fmt.Errorf("--place: %w", err)
	}
	return nil
}

// gpu checks the device and returns the factory of fresh devices for the
// cuda and cache modes (nil for cpu, and when no mode uses it), their name
// and a warning line, if any. The device opened for the check is closed at
// once, so that none is left open when no cuda or cache mode runs; ctx
// ends a wait for the simulated device's ledger. A --device that does not
// name a device is a usage error; a device that cannot be used (its free
// memory unreadable: the simulated device's ledger corrupt, or its lock
// not had) is a failure, status 1, and is not tried when no mode uses it,
// so that the cpu mode alone still runs.
func (o *WorkloadOptions) gpu(ctx context.Context) (func() (device.Device, error), string, string, error) {
	used := o.usesGPU()
	var ledger *device.Ledger // nil: a simulated device is not used, its ledger not read
	if used {
		ledger = openLedger(ctx, o.IO)
	}
	dev, warning, err := device.Parse(o.Device, ledger)
	if err != nil {
		return nil, "", "", usagef("--device: %w", err)
	}
	name := dev.Name()
	host := dev.Caps().Kind == device.KindHost
	// Reading the free memory reads the simulated device's ledger: a
	// ledger that cannot be used is reported here, before anything runs.
	if used {
		if _, _, err := dev.MemInfo(); err != nil {
			dev.Close()
			return nil, "", "", err
		}
	}
	if err := dev.Close(); err != nil {
		return nil, "", "", fmt.Errorf("closing %s after checking it: %w", name, err)
	}
	if host {
		return nil, "", warning, nil
	}
	if !used {
		return nil, name, warning, nil
	}
	return func() (device.Device, error) {
		d, _, err := device.Parse(o.Device, ledger)
		return d, err
	}, name, warning, nil
}

// usesGPU reports whether the run uses the device of --device: a mode
// other than cpu, or memory to take on it (--take, one value or a sweep).
func (o *WorkloadOptions) usesGPU() bool {
	if slices.ContainsFunc(o.Modes, func(m bench.Mode) bool { return !m.OnHost() }) {
		return true
	}
	if o.Take != "" && o.Take != "0" {
		return true
	}
	return slices.ContainsFunc(o.Sweep, func(f SweepFlag) bool { return f.Flag == "take" })
}

// benchOptions puts the sizes the user set over the preset, checks
// everything, opens the device, writes its warning if any, and returns the
// runner's options.
func (o *WorkloadOptions) benchOptions(ctx context.Context) (bench.Options, error) {
	opts, err := o.check()
	if err != nil {
		return bench.Options{}, err
	}
	take, err := o.takeBytes()
	if err != nil {
		return bench.Options{}, usage(err)
	}
	if opts.NewGPU, opts.GPUName, err = o.openOutputsAndGPU(ctx); err != nil {
		return bench.Options{}, err
	}
	if take > 0 && opts.NewGPU == nil {
		return bench.Options{}, usagef("--take holds memory on the device of the cuda and cache modes; --device %s has none", o.Device)
	}
	return opts, nil
}

// levers returns the levers the flags set, as one value.
func (o *WorkloadOptions) levers() levers.Set {
	return levers.Set{Recompute: o.Recompute, Precision: o.Precision, Attention: o.Attention, LoRA: o.LoRA, Weights: o.Weights, GradAccum: o.GradAccum}
}

// check puts the sizes the user set over the preset and checks them and
// every other setting, and returns the runner's options without a device;
// its errors are usage errors.
func (o *WorkloadOptions) check() (bench.Options, error) {
	set := o.levers()
	if err := o.Workload.Check(set); err != nil {
		return bench.Options{}, usage(err)
	}
	if set.GradAccum.On() && o.Task != bench.TaskTrain {
		return bench.Options{}, usagef("--grad-accum %d: only training accumulates gradients, not %s", set.GradAccum, o.Task)
	}
	if o.Task == bench.TaskGenerate {
		if err := o.generateSizes(); err != nil {
			return bench.Options{}, usage(err)
		}
	}
	cfg, scale, err := o.Workload.Configure(o.Scale, o.Sizes)
	if err != nil {
		return bench.Options{}, usage(err)
	}
	// The run applies the levers where it builds the model; they are
	// checked against the sizes here, as usage.
	if _, err := models.Apply(cfg, set); err != nil {
		return bench.Options{}, usage(err)
	}
	s := models.FeedOf(cfg)
	if err := o.validate(s.Epochs); err != nil {
		return bench.Options{}, usage(err)
	}
	gen := bench.Options{Workload: cfg, Task: o.Task, Generate: o.Generate, Batch: s.Batch, Config: bench.Config{Set: set}}
	if err := gen.CheckGeneration(); err != nil {
		return bench.Options{}, usage(err)
	}
	if w, ok := cfg.(interface{ Warnings() []string }); ok {
		for _, line := range w.Warnings() {
			fmt.Fprintf(o.human(), "warning: %s\n", line)
		}
	}
	name := o.Workload.Name
	if o.modelName != "" {
		name += " " + o.modelName
	}
	// "" in the options (callers of the run function) is the default;
	// the flags refuse an empty value given (emptyFlagError).
	if o.ManagedAdvise != "" {
		if err := checkManagedAdvise(o.ManagedAdvise); err != nil {
			return bench.Options{}, usage(err)
		}
	}
	var page int64 // the default unless --managed-page is given
	if o.ManagedPageText != "" {
		if page, err = parseManagedPage(o.ManagedPageText); err != nil {
			return bench.Options{}, usage(err)
		}
	}
	var host *perfmodel.Profile
	if o.HostProfile != "" {
		p, err := perfmodel.OpenHost(o.HostProfile)
		if err != nil {
			return bench.Options{}, usagef("--host-profile: %v", err)
		}
		host = &p
	}
	adam := bench.DefaultAdam()
	adam.LR = o.LR
	opts := bench.Options{
		HostProfile: host,
		ModelName:   name, Scale: scale, Workload: cfg, Task: o.Task, Generate: o.Generate, Modes: o.Modes,
		Samples: s.Samples, Batch: s.Batch, Epochs: s.Epochs, Warmup: o.Warmup,
		Adam: adam, ClipNorm: 1, Seed: o.Seed, Threads: o.Threads,
		Config: bench.Config{Placements: bench.Placements{Cache: o.Cache, ManagedPage: page, ManagedAdviseHost: o.ManagedAdvise == "host"}, Set: set}, CommandLine: sysinfo.CommandLine(o.IO.CommandLine),
		ProcessStart: o.IO.Started,
	}
	if err := o.place(cfg, &opts); err != nil {
		return bench.Options{}, usage(err)
	}
	if opts.LoadWeights, err = o.loadWeightsFile(); err != nil {
		return bench.Options{}, usage(err)
	}
	if o.HostMemoryText != "" {
		if opts.HostMemory, err = units.ParseBytes(o.HostMemoryText); err != nil {
			return bench.Options{}, usagef("--host-memory: %v", err)
		}
		if opts.HostMemory <= 0 {
			return bench.Options{}, usagef("--host-memory must be positive, got %s", o.HostMemoryText)
		}
	}
	return opts, nil
}

// openOutputsAndGPU checks the output files, opens the device, writes its
// warning if any, and returns the factory of the cuda and cache modes'
// devices (nil for --device cpu) and their name.
func (o *WorkloadOptions) openOutputsAndGPU(ctx context.Context) (func() (device.Device, error), string, error) {
	if err := checkOutputs(outputFile{"--json", o.JSON, true}, outputFile{"--bench-out", o.BenchOut, false}, outputFile{"--cpuprofile", o.CPUProfile, false}, outputFile{"--plot", o.Plot, false}); err != nil {
		return nil, "", err
	}
	if err := checkPlotFormat("--plot", o.Plot); err != nil {
		return nil, "", err
	}
	newGPU, gpuName, warning, err := o.gpu(ctx)
	if err != nil {
		return nil, "", err
	}
	if warning != "" {
		// JSON on standard output must stay parseable: the warning then
		// goes to standard error.
		fmt.Fprintf(o.human(), "warning: %s\n", warning)
	}
	return newGPU, gpuName, nil
}

// human is the stream of the human report (header, epoch lines, text
// table, warnings): standard output for the text format, else standard
// error, standard output then holding only the formatted results.
func (o *WorkloadOptions) human() io.Writer {
	if o.format() != report.FormatText {
		return o.IO.ErrOut
	}
	return o.IO.Out
}

// workloadRun runs the matrix and prints the header, one line per epoch and
// the Analyze table (every column with Wide); with a format other than text
// those go to standard error and the results in that format to standard
// output; with JSON naming a file it also writes the results there. With
// PlanOnly it prints the memory plan instead (planRun).
//
// Its error says how the run ended: nil when every mode completed,
// errInterrupted (joined with any write error) when ctx was cancelled, the
// write errors of the JSON and the profile (status 1), else an
// *incompleteError when some mode's status is not ok (status 3). In every
// case after the run started the table of what completed is printed first.
func workloadRun(ctx context.Context, o *WorkloadOptions) error {
	if o.PlanOnly {
		return planRun(ctx, o)
	}
	if len(o.Sweep) > 0 {
		return sweepRun(ctx, o)
	}
	opts, err := o.benchOptions(ctx)
	if err != nil {
		return err
	}
	if err := checkRunAddressSpace(ctx, opts); err != nil {
		return err
	}
	out := o.human()
	// The progress line goes to standard error when it is a terminal.
	progress := newModeProgress(o.IO.ErrOut, o.IO.ErrTTY)
	notes := newSetupNotes(o.IO.ErrOut, o.IO.ErrTTY, o.setupNoteAfter)
	defer notes.stop()
	opts.Progress = notes.guard(func(e bench.Event) {
		switch {
		case e.Sweep != nil: // the one configuration of a run with --take
		case e.Phase != "": // noted by notes
		case e.Header != nil:
			report.WriteHeader(out, *e.Header)
		case e.Batch != nil:
			progress.batch(e.Mode, *e.Batch)
		case e.End != nil:
			progress.clear()
			report.WriteModeEnd(out, e.Mode, e.Device, *e.End)
		case e.Epoch == nil:
			progress.clear()
			report.WriteModeStart(out, e.Mode, e.Device)
			progress.start(e.Mode, opts.Epochs, opts.Samples/opts.Batch)
		default:
			progress.around(func() { report.WriteEpoch(out, opts.Task, *e.Epoch, e.Warmup, e.Device) })
		}
	})
	return o.measure(ctx, out, "running", progress, func() (outputs, error) {
		res, err := o.runHolding(ctx, opts)
		notes.stop()
		return outputsOf("results", res, report.WriteResults, report.WriteJSON, report.WriteBenchfmt, incomplete), err
	})
}

// measure runs do, a run or a sweep, under --cpuprofile (when set), clears
// the progress line after it and writes the outputs that do returns
// (writeOutputs), the profile's error reported after them. An error of do
// comes back as "VERB WORKLOAD TASK: …", joined with the profile's.
func (o *WorkloadOptions) measure(ctx context.Context, out io.Writer, verb string, progress *modeProgress, do func() (outputs, error)) error {
	stopProfile, err := startCPUProfile(o.CPUProfile)
	if err != nil {
		return err
	}
	x, err := do()
	progress.clear()
	profErr := stopProfile()
	if err != nil {
		return errors.Join(fmt.Errorf("%s %s %s: %w", verb, o.Workload.Name, o.Task, err), profErr)
	}
	fmt.Fprintln(out)
	return o.writeOutputs(ctx, out, x, profErr)
}

// outputs are the ways to write one kind of result (a run's or a
// sweep's): its table in a format, its JSON, its benchmark lines, and the
// error that says which modes did not complete.
type outputs struct {
	what  string // "results" or "sweep", as errors name it
	table func(io.Writer, report.Options) error
	json  func(io.Writer) error
	bench func(io.Writer) error
	notOK func() error
}

// outputsOf is the outputs of a result res, of a run or a sweep, that the
// given functions of package report write; notOK is the error that says
// which of its modes did not complete.
func outputsOf[R any](what string, res R, writeTable func(io.Writer, R, report.Options) error,
	writeJSON, writeBench func(io.Writer, R) error, notOK func(R) error) outputs {
	return outputs{
		what:  what,
		table: func(w io.Writer, opts report.Options) error { return writeTable(w, res, opts) },
		json:  func(w io.Writer) error { return writeJSON(w, res) },
		bench: func(w io.Writer) error { return writeBench(w, res) },
		notOK: func() error { return notOK(res) },
	}
}

// writeOutputs writes what a run or sweep produced: the text table on out
// (the human report), the --format output on standard output, --json,
// --bench-out and --plot. Its error says how the run ended, as workloadRun
// documents: errInterrupted (joined with any write error) when ctx was
// cancelled, the write errors and the profile's (status 1), else notOK's.
func (o *WorkloadOptions) writeOutputs(ctx context.Context, out io.Writer, x outputs, profErr error) error {
	var writeErr error
	if err := x.table(out, report.Options{Format: report.FormatText, Wide: o.Wide}); err != nil {
		writeErr = fmt.Errorf("writing the %s table: %w", x.what, err)
	}
	if f := o.format(); f != report.FormatText {
		if err := x.table(o.IO.Out, report.Options{Format: f, Wide: o.Wide}); err != nil {
			writeErr = errors.Join(writeErr, fmt.Errorf("writing the %s as %s to standard output: %w", x.what, f, err))
		}
	}
	if o.JSON != "" && o.JSON != "-" {
		writeErr = errors.Join(writeErr, writeJSON(o.IO.Out, o.JSON, x.what, x.json))
	}
	if o.BenchOut != "" {
		writeErr = errors.Join(writeErr, writeFile(o.BenchOut, "benchmark lines", x.bench))
	}
	if o.Plot != "" {
		writeErr = errors.Join(writeErr, plotJSON(out, o.Plot, x.json))
	}
	writeErr = errors.Join(writeErr, profErr)
	if ctx.Err() != nil {
		return errors.Join(errInterrupted, writeErr)
	}
	if writeErr != nil {
		return writeErr
	}
	return x.notOK()
}

// runHolding runs opts with --take's memory held around the run, as a
// sweep of one configuration, or without a take as bench.Run.
func (o *WorkloadOptions) runHolding(ctx context.Context, opts bench.Options) (bench.Result, error) {
	take, err := o.takeBytes()
	if err != nil || take == 0 {
		return bench.Run(ctx, opts)
	}
	s, err := bench.Sweep(ctx, bench.SweepOptions{Configs: []bench.SweepConfig{{TakeBytes: take, Options: opts}}, Progress: opts.Progress})
	if err != nil || len(s.Rows) == 0 {
		return bench.Result{}, err
	}
	return s.Rows[0].Result, nil
}

// incomplete returns an *incompleteError naming the modes of res whose
// status is not ok (OOM, unavailable, skipped, failed, diverged …), or nil.
func incomplete(res bench.Result) error {
	var notOK []string
	for _, m := range res.Modes {
		if m.Status.Kind != bench.StatusOK {
			notOK = append(notOK, fmt.Sprintf("%s (%s)", m.Mode, m.Status.Kind))
		}
	}
	if notOK == nil {
		return nil
	}
	return &incompleteError{Modes: notOK, Total: len(res.Modes)}
}

// writeJSON writes JSON with write to stdout (path "-") or to the file
// path; what names it in errors.
func writeJSON(stdout io.Writer, path, what string, write func(io.Writer) error) error {
	if path == "-" {
		if err := write(stdout); err != nil {
			return fmt.Errorf("writing %s to standard output: %w", what, err)
		}
		return nil
	}
	return writeFile(path, what, write)
}

// emptyFlagError reports a string flag given an empty value where empty
// names nothing (--format, --managed-page, --managed-advise,
// --lora-targets), and --lora-alpha given 0 (the options' default, never
// a value to give: issue 44 item 3), with the
// error the flag's own check gives for it; "" in the options (callers of
// the run function) stays the default.
func emptyFlagError(fs *pflag.FlagSet) error {
	for _, f := range []struct {
		name  string
		check func(string) error
	}{
		{"format", func(s string) error {
			_, err := report.ParseFormat(s)
			return fmt.Errorf("--format: %w", err)
		}},
		{"managed-page", func(s string) error { _, err := parseManagedPage(s); return err }},
		{"managed-advise", checkManagedAdvise},
		{"lora-targets", func(string) error {
			return errors.New("--lora-targets: empty (want a comma list of layers; leave the flag out for the default targets)")
		}},
	} {
		if v, _ := fs.GetString(f.name); fs.Changed(f.name) && v == "" {
			return f.check(v)
		}
	}
	// α = 0 stands for R in the options, but given on the command line
	// it is a scale of 0, not the default.
	if a, err := fs.GetFloat64("lora-alpha"); err == nil && fs.Changed("lora-alpha") && a == 0 {
		return fmt.Errorf("--lora-alpha must be a positive number, got %s (leave the flag out for the default α = R)", fs.Lookup("lora-alpha").Value.String())
	}
	return nil
}

// parseManagedPage reads --managed-page: a size that is a power of two of
// at least 4KiB.
func parseManagedPage(s string) (int64, error) {
	page, err := units.ParseBytes(s)
	if err == nil {
		err = cache.CheckPageSize(page)
	}
	if err != nil {
		return 0, fmt.Errorf("--managed-page %q: %v", s, err)
	}
	return page, nil
}

// checkManagedAdvise checks --managed-advise: none or host.
func checkManagedAdvise(s string) error {
	if s != "none" && s != "host" {
		return fmt.Errorf("unknown --managed-advise %q (want none or host)", s)
	}
	return nil
}
