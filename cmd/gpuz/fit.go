package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"gpuz/internal/bench"
	"gpuz/internal/fit"
	"gpuz/internal/levers"
	"gpuz/internal/models"
	"gpuz/internal/perfmodel"
	"gpuz/internal/quant"
	"gpuz/internal/report"
)

// FitOptions are the arguments and flags of gpuz fit MODEL train|eval:
// the workload command's (its sizes, --device, --host-profile, --take,
// --format) and fit's own.
type FitOptions struct {
	*WorkloadOptions
	// Margin is the percentage of the device's free memory (after --take)
	// kept free.
	Margin float64
	// Verify is how many of the best configurations to run, with the cpu,
	// after the search; 0 runs none.
	Verify int
	// SeqLenMax is --seq-len max: the search looks for the longest
	// sequence a configuration on the device fits, and ranks at it.
	SeqLenMax bool
}

// seqLenMaxFrom is the sequence the search starts from under --seq-len
// max: one token, where every configuration that fits a longer sequence
// fits too.
const seqLenMaxFrom = 1

// fitSearched are the workload command's flags that choose a
// configuration, which fit searches itself and so refuses.
var fitSearched = []string{"policy", "win-size", "optimizer-on", "place", "managed-page", "managed-advise", "recompute", "precision", "grad-accum", "attention", "bench-out", "wide", "plot"}

// newFitCmd builds "gpuz fit MODEL train|eval": for each workload, its
// command's flags less those fit searches, and --margin and --verify.
// runF, when not nil, is called instead of fitRun.
func newFitCmd(ios *IOStreams, workloads []workloadDef, runF func(context.Context, *FitOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fit MODEL train|eval",
		Short: "Find how to run a workload in the device memory free, best first (ties within 5% the simpler first)",
		Long: `fit plans every configuration gpuz can run the workload in (cuda; cache under
each policy, window and optimizer place; hybrid splits at block boundaries;
managed; the cpu; each with the recompute and precision levers, gradient
accumulation in training (--grad-accum 1, 2, 4, … where it divides the batch),
and the attention's for a workload with attention layers; --batch 4,8 ranks
each batch, by the time of an epoch of the same samples), keeps those whose device
need fits the free memory less --margin and whose host need fits the host,
and ranks them by the model's predicted epoch time on the device's profile
(sim:PROFILE, or a real GPU's measured one) and, for the cpu, on the host
profile: --host-profile, else the one gpuz calibrate saved, else the cpu is
listed unranked. Predictions within 5% tie, the simpler first; a lever that
changes the results (16 bits, the other attention) must be 25% faster to rank
above one that does not. It prints the ten best with the command line that
runs each, and what it recommends and why. --take is subtracted from the free
memory without holding anything, and the command lines carry it, so that
running one reproduces the pressure; --verify K runs the K best and the
cpu, holding --take, and prints predicted against measured. Exit status 3
when nothing fits, with the smallest need found. docs/fit.md says how the
search works.`,
		Example: `  gpuz fit linear train --device sim:rtx4060-laptop --take 20
  gpuz fit attention eval --device sim:rtx4060-laptop --host-profile cpu-i7-13700h
  gpuz fit linear train --scale demo --device sim:rtx4060-laptop --take 20 --verify 3`,
	}
	for _, def := range workloads {
		cmd.AddCommand(newFitWorkloadCmd(ios, def, runF))
	}
	// A word that names no workload is left to the parent: refuse it.
	cmd.Args = func(_ *cobra.Command, args []string) error {
		problem := "missing model"
		if len(args) > 0 {
			problem = fmt.Sprintf("unknown model %q", args[0])
		}
		return usagef("%s (see gpuz fit --help)", problem)
	}
	cmd.RunE = func(*cobra.Command, []string) error { return nil }
	return cmd
}

// newFitWorkloadCmd builds "gpuz fit NAME train|eval": the workload's plan
// command with the flags fit searches hidden and refused, and fit's own.
func newFitWorkloadCmd(ios *IOStreams, def workloadDef, runF func(context.Context, *FitOptions) error) *cobra.Command {
	fo := &FitOptions{Margin: fit.DefaultMarginPercent}
	sub := newWorkloadCmd(ios, def, true, func(ctx context.Context, o *WorkloadOptions) error {
		fo.WorkloadOptions = o
		if fw, err := o.framework(); err != nil || fw.IsTorch() {
			if err != nil {
				return err
			}
			return fitFrameworkRun(ctx, fo, fw)
		}
		if runF != nil {
			return runF(ctx, fo)
		}
		return fitRun(ctx, fo)
	})
	sub.Use = def.workload.Name + " train|eval"
	sub.Short = "Find how to run " + def.workload.Name + " in the device memory free"
	sub.Long = "fit " + def.workload.Name + " searches the configurations of the " + def.workload.Name +
		" workload (see gpuz fit --help)."
	sub.Example = fmt.Sprintf(`  gpuz fit %[1]s train --device sim:rtx4060-laptop --take 20
  gpuz fit %[1]s eval --scale small --device sim:4GiB --format json`, def.workload.Name)
	flags := sub.Flags()
	for _, name := range fitSearched {
		if flags.Lookup(name) == nil && name == "attention" {
			continue // a workload without attention layers
		}
		if err := flags.MarkHidden(name); err != nil {
			panic(err) // a name above that the workload command lacks
		}
	}
	// fit takes one value per flag: the workload's list flags do not sweep
	// here.
	flags.VisitAll(func(f *pflag.Flag) { f.Usage = strings.TrimSuffix(f.Usage, "; a comma list sweeps") })
	if f := flags.Lookup("seq-len"); f != nil && def.workload.Name == models.LLM.Name {
		f.Usage = strings.Replace(f.Usage, " (default:", ", or max: the longest sequence each mode on the device fits (at batch 1 unless --batch is given), ranked at the longest (default:", 1)
	}
	flags.Lookup("json").Usage = "print the fit as JSON to this file instead of the table (- for standard output)"
	flags.Lookup("take").Usage = "device memory counted as taken, as take-mem's N blocks or SIZE: subtracted from the free memory (held only by --verify) and carried by the command lines"
	flags.Lookup("format").Usage = "what goes to standard output: text, markdown, csv or json"
	flags.Lookup("epochs").Usage = strings.Replace(flags.Lookup("epochs").Usage, "epochs per mode", "epochs per configuration --verify runs", 1)
	flags.Float64Var(&fo.Margin, "margin", fit.DefaultMarginPercent, "percentage of the device's free memory (after --take) kept free: what the plan does not count (docs/fit.md)")
	flags.IntVar(&fo.Verify, "verify", 0, "run the best K configurations and the cpu at the scale given, holding --take (the managed mode the margin too, so that it sees the free memory its plan assumed), and print predicted against measured; on sim a peak other than its plan fails the check")
	sub.PreRunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 1 {
			return usagef("fit takes no MODES: it searches every mode (got %q)", args[1])
		}
		if err := refuseSearched(cmd.Flags()); err != nil {
			return err
		}
		return fo.takeSeqLenMax(cmd.Flags(), def.workload)
	}
	return sub
}

// loraSettings takes --lora's ranks out of the options: fit ranks every
// rank given together (--lora 0,16: full fine-tuning and LoRA), each with
// --lora-alpha and --lora-targets, so the workload is searched without
// LoRA of its own and each row names its own. Each setting is checked
// against the workload (a target it lacks is a usage error); nil when no
// --lora is given.
func (o *FitOptions) loraSettings() ([]levers.LoRA, error) {
	base := o.LoRA
	values := []string{strconv.Itoa(base.Rank)}
	if i := slices.IndexFunc(o.Sweep, func(f SweepFlag) bool { return f.Flag == "lora" }); i >= 0 {
		values = o.Sweep[i].Values
		o.Sweep = slices.Delete(o.Sweep, i, i+1)
	} else if base == (levers.LoRA{}) {
		return nil, nil
	}
	var out []levers.LoRA
	for _, v := range values {
		rank, err := parseWhole(v)
		if err != nil {
			return nil, usagef("--lora: invalid argument %q (%w)", v, err)
		}
		l := base
		l.Rank = rank
		if rank == 0 {
			l = levers.LoRA{} // full fine-tuning: alpha and targets do not apply
		}
		if err := o.Workload.Check(levers.Set{LoRA: l}); err != nil {
			return nil, usage(err)
		}
		cfg, _, err := o.Workload.Configure(o.Scale, o.Sizes)
		if err != nil {
			return nil, usage(err)
		}
		if _, err := models.Apply(cfg, levers.Set{LoRA: l}); err != nil {
			return nil, usage(err)
		}
		out = append(out, l)
	}
	o.LoRA = levers.LoRA{}
	return out, nil
}

// batchSettings takes a --batch list out of the options: fit ranks every
// batch given together (--batch 4,8), each candidate naming its own, at
// the same samples an epoch. Each batch is checked against the sizes (the
// samples a multiple of it) as a usage error; nil when --batch gives one
// value or none. A list is refused with --seq-len max and for a
// generation, whose searches run at a batch of their own.
func (o *FitOptions) batchSettings() ([]int, error) {
	i := slices.IndexFunc(o.Sweep, func(f SweepFlag) bool { return f.Flag == "batch" })
	if i < 0 {
		return nil, nil
	}
	values := o.Sweep[i].Values
	switch {
	case o.SeqLenMax:
		return nil, usagef("--seq-len max searches at one batch; --batch has %d", len(values))
	case o.Task == bench.TaskGenerate:
		return nil, usagef("fit ranks a list of batches in training and evaluation; a generation takes one --batch, got %d", len(values))
	}
	o.Sweep = slices.Delete(o.Sweep, i, i+1)
	var out []int
	for _, v := range values {
		n, err := parseWhole(v)
		if err != nil {
			return nil, usagef("--batch: invalid argument %q (%w)", v, err)
		}
		if slices.Contains(out, n) {
			return nil, usagef("--batch: %d given twice in %s", n, strings.Join(values, ","))
		}
		sizes := maps.Clone(o.Sizes)
		sizes["batch"] = n
		if _, _, err := o.Workload.Configure(o.Scale, sizes); err != nil {
			return nil, usage(err)
		}
		out = append(out, n)
	}
	return out, nil
}

// weightSettings takes the storage of the frozen weights out of the
// options: fit ranks the kinds together, each candidate naming its own.
// A quantized --weights (or a GGUF file's kind) is the one searched; a
// float kind (f32, f16 or bf16, all alike here: fit searches the
// precision) keeps the weights in floats; without one, evaluation and
// generation of a Llama-family model search q8_0 and q4_k beside the
// floats, and training the floats (a quantized base is LoRA's, asked for
// with --weights).
func (o *FitOptions) weightSettings() ([]quant.Kind, error) {
	given := o.Weights
	o.Weights = quant.F32
	switch {
	case given.Quantized():
		return []quant.Kind{given}, nil
	case o.weightsText != "" || o.Task == bench.TaskTrain || o.Workload.Check(levers.Set{Weights: quant.Q8_0}) != nil:
		return nil, nil
	}
	return []quant.Kind{quant.F32, quant.Q8_0, quant.Q4_K}, nil
}

// refuseSearched refuses a flag that chooses what fit searches.
func refuseSearched(fs *pflag.FlagSet) error {
	for _, name := range fitSearched {
		if fs.Changed(name) {
			return usagef("fit searches --%s itself (or does not use it); drop it", name)
		}
	}
	return nil
}

// takeSeqLenMax reads --seq-len max: the search then starts from one
// token, at one sequence a batch unless --batch says otherwise, and
// looks for the longest sequence that fits (fitRun). It is the llm
// workload's, in training and evaluation: its model's maximum positions
// bound the search, and a generation's length is --context.
func (o *FitOptions) takeSeqLenMax(fs *pflag.FlagSet, w models.Workload) error {
	f := fs.Lookup("seq-len")
	if f == nil || !f.Changed || f.Value.String() != "max" {
		return nil
	}
	if w.Name != models.LLM.Name {
		return usagef("--seq-len max is the llm workload's, whose model's maximum positions bound it; give %s a number", w.Name)
	}
	o.SeqLenMax = true
	if err := fs.Set("seq-len", strconv.Itoa(seqLenMaxFrom)); err != nil {
		return err
	}
	if !fs.Changed("batch") {
		return fs.Set("batch", "1")
	}
	return nil
}

// searchOptions opens what a search plans on: modes (the device's and
// the host's, whose planners open them), the bytes --take counts as
// taken, and the run options of the workload's flags.
func (o *FitOptions) searchOptions(ctx context.Context, modes ...bench.Mode) (bench.Options, int64, error) {
	o.Modes = modes
	take, err := o.takeBytes()
	if err != nil {
		return bench.Options{}, 0, usage(err)
	}
	opts, err := o.benchOptions(ctx)
	return opts, take, err
}

// validate checks fit's own flags and that the workload's flags take one
// value each.
func (o *FitOptions) validate() error {
	switch {
	case len(o.Sweep) > 0:
		return usagef("fit takes one value per flag; --%s has %d", o.Sweep[0].Flag, len(o.Sweep[0].Values))
	case o.Margin < 0 || o.Margin >= 100:
		return usagef("--margin must be a percentage from 0 up to (not including) 100, got %g", o.Margin)
	case o.Verify < 0:
		return usagef("--verify must not be negative, got %d", o.Verify)
	}
	return nil
}

// fitRun searches the configurations of a workload and prints the fastest
// that fit in --format's format (or with --json as JSON), then with
// --verify runs the best and the cpu. Its error is a *fit.NothingFitsError
// (status 3) when nothing fits, and a verification's failure (status 1)
// when a recommended configuration did not complete; a --cpuprofile that
// cannot be written is joined to it (status 1 where nothing else failed).
func fitRun(ctx context.Context, o *FitOptions) (err error) {
	loras, err := o.loraSettings()
	if err != nil {
		return err
	}
	weights, err := o.weightSettings()
	if err != nil {
		return err
	}
	batches, err := o.batchSettings()
	if err != nil {
		return err
	}
	if err := o.validate(); err != nil {
		return err
	}
	// The modes are fit's to choose; cuda and cpu open the device and
	// the host as every mode needs them.
	opts, take, err := o.searchOptions(ctx, bench.ResidentMode(true), bench.ResidentMode(false))
	if err != nil {
		return err
	}
	// --cpuprofile (checked with the other outputs by benchOptions)
	// profiles the search and any verification; its write error comes
	// after the fit is printed, status 1.
	stopProfile, err := startCPUProfile(o.CPUProfile)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProfile()) }()
	if opts.HostProfile == nil {
		if opts.HostProfile, err = calibratedProfile(); err != nil {
			return err
		}
	}
	fopts := fit.Options{Bench: opts, TakeBytes: take, MarginPercent: o.Margin, Command: o.commandLine, LoRA: loras, Weights: weights, Batches: batches}
	// --context max: the search plans the least context a generation
	// needs, then the longest the fastest configuration fits.
	longest := opts.Generate.ContextMax
	fopts.Bench.Generate.ContextMax = false
	progress := newSearchProgress(o.IO.ErrOut, o.IO.ErrTTY)
	fopts.Progress = progress.update
	var res fit.Result
	searched := untilDone(ctx, func() { res, err = fit.Search(fopts) })
	progress.clear()
	if !searched {
		return errInterrupted
	}
	if err != nil {
		return fmt.Errorf("fitting %s %s: %w", o.Workload.Name, o.Task, err)
	}
	if err := res.Err(); err != nil {
		return err
	}
	if o.SeqLenMax {
		res, err = o.longestSequence(ctx, &fopts, res)
		progress.clear()
		if err != nil {
			return err
		}
	}
	fopts.Progress = nil // the searches' alone: --verify shows its runs
	if best, ok := res.Best(); ok && longest {
		g := fopts.Bench.Generate
		if !untilDone(ctx, func() {
			res.LongestContext, err = fit.LongestContext(fopts, best.Candidate, res.Budget, g.Prompt+g.Tokens-1, opts.MaxPositions())
		}) {
			return errInterrupted
		}
		if err != nil {
			return fmt.Errorf("fitting %s %s: the longest context: %w", o.Workload.Name, o.Task, err)
		}
	}
	jsonFile := o.JSON != "" && o.JSON != "-"
	if o.Verify > 0 && (jsonFile || o.format() == report.FormatJSON) {
		// One JSON document holds the fit and its verification, written
		// once both are known.
		v, err := o.runVerify(ctx, fopts, res)
		if err != nil {
			return err
		}
		path := o.JSON
		if !jsonFile {
			path = "-"
		}
		if err := writeJSON(o.IO.Out, path, "the fit", func(w io.Writer) error { return report.WriteFitJSON(w, res, &v) }); err != nil {
			return err
		}
		if jsonFile {
			if err := o.printVerify(o.IO.ErrOut, report.FormatText, v); err != nil {
				return err
			}
		}
		return v.Err()
	}
	if jsonFile {
		err = writeJSON(o.IO.Out, o.JSON, "the fit", func(w io.Writer) error { return report.WriteFitJSON(w, res, nil) })
	} else {
		err = report.WriteFitAs(o.IO.Out, res, report.Options{Format: o.format()})
	}
	if err != nil {
		return fmt.Errorf("writing the fit: %w", err)
	}
	if o.Verify == 0 {
		return nil
	}
	v, err := o.runVerify(ctx, fopts, res)
	if err != nil {
		return err
	}
	// A CSV holds one table: the verification goes to standard error as
	// text; text and Markdown follow the fit.
	out, f := o.IO.Out, o.format()
	if f == report.FormatCSV {
		out, f = o.IO.ErrOut, report.FormatText
	}
	if err := o.printVerify(out, f, v); err != nil {
		return err
	}
	return v.Err()
}

// calibratedProfile reads the host profile gpuz calibrate saved for this
// machine (calibratedProfilePath), nil when there is none.
func calibratedProfile() (*perfmodel.Profile, error) {
	path, err := calibratedProfilePath()
	if err != nil {
		return nil, nil // no configuration directory: no calibration either
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	p, err := perfmodel.LoadProfile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the calibrated host profile: %w", err)
	}
	return &p, nil
}

// commandLine is the gpuz command line that runs candidate c with the
// sizes, device, --take and --host-profile this fit was given.
func (o *FitOptions) commandLine(c fit.Candidate) string {
	words := []string{"gpuz", o.Workload.Name, string(o.Task), string(c.Mode)}
	if o.Model != "" {
		words = append(words, "--model", shellWord(o.Model))
	}
	words = append(words, c.Placement().Flags()...)
	if c.Recompute.On() {
		words = append(words, "--recompute", c.Recompute.String())
	}
	if c.Precision.Half() {
		words = append(words, "--precision", c.Precision.String())
	}
	if c.Attention != "" {
		words = append(words, "--attention", string(c.Attention))
	}
	if c.Weights.Quantized() {
		words = append(words, "--weights", c.Weights.String())
	}
	if c.GradAccum.On() {
		words = append(words, "--grad-accum", c.GradAccum.String())
	}
	if c.LoRA.On() {
		words = append(words, "--lora", strconv.Itoa(c.LoRA.Rank))
		if c.LoRA.Alpha != 0 {
			words = append(words, "--lora-alpha", strconv.FormatFloat(c.LoRA.Alpha, 'g', -1, 64))
		}
		if c.LoRA.Targets != "" {
			words = append(words, "--lora-targets", shellWord(c.LoRA.Targets))
		}
	}
	if o.Scale != "" && o.Scale != "full" {
		words = append(words, "--scale", o.Scale)
	}
	generate := o.Task == bench.TaskGenerate
	for _, s := range o.Workload.Sizes {
		if generate && (s.Name == "seq-len" || s.Name == "samples") {
			continue // a generation's, from --prompt and --batch (generateSizes)
		}
		if s.Name == "batch" && c.Batch != 0 {
			words = append(words, "--batch", strconv.Itoa(c.Batch))
		} else if n, ok := o.Sizes[s.Name]; ok {
			words = append(words, "--"+s.Name, strconv.Itoa(n))
		}
	}
	if generate {
		words = append(words, o.generateWords()...)
	}
	if c.Mode.PlacesBlocks() && generate && o.HostProfile != "" {
		words = append(words, "--host-profile", o.HostProfile) // the host layers' profile
	}
	if !c.Mode.OnHost() {
		if o.Device != "" && o.Device != "auto" {
			words = append(words, "--device", o.Device)
		}
		if o.Take != "" && o.Take != "0" {
			words = append(words, "--take", o.Take)
		}
	} else if o.HostProfile != "" {
		words = append(words, "--host-profile", o.HostProfile)
	}
	return strings.Join(words, " ")
}

// longestSequence answers --seq-len max from res, the search at one
// token: the longest sequence a configuration on the device fits
// (fit.LongestSequences: each mode's, up to the model's maximum positions), then the
// search again at that length, so that the ranking, the commands and
// --verify are the longest sequence's; fopts and the sizes the commands
// print are set to it. Where nothing on the device fits one token, res
// stays as it is and a line on standard error says so.
func (o *FitOptions) longestSequence(ctx context.Context, fopts *fit.Options, res fit.Result) (fit.Result, error) {
	var (
		longest []fit.Longest
		err     error
	)
	if !untilDone(ctx, func() { longest, err = fit.LongestSequences(*fopts, res, fopts.Bench.MaxPositions()) }) {
		return res, errInterrupted
	}
	if err != nil {
		return res, fmt.Errorf("fitting %s %s: the longest sequence: %w", o.Workload.Name, o.Task, err)
	}
	if len(longest) == 0 {
		fmt.Fprintf(o.IO.ErrOut, "gpuz: --seq-len max: no configuration on the device fits a sequence of %d token; ranked at that length\n", seqLenMaxFrom)
		return res, nil
	}
	for i := range longest {
		o.Sizes["seq-len"] = longest[i].Tokens
		longest[i].Command = o.commandLine(longest[i].Candidate)
	}
	n := longest[0].Tokens
	at, err := fopts.AtSeqLen(res, n)
	if err != nil {
		return res, fmt.Errorf("fitting %s %s at %d tokens: %w", o.Workload.Name, o.Task, n, err)
	}
	*fopts, o.Sizes["seq-len"] = at, n
	if !untilDone(ctx, func() { res, err = fit.Search(*fopts) }) {
		return res, errInterrupted
	}
	if err != nil {
		return res, fmt.Errorf("fitting %s %s at %d tokens: %w", o.Workload.Name, o.Task, n, err)
	}
	res.LongestSequences = longest
	return res, res.Err()
}

// runVerify runs the best --verify configurations of res and the cpu,
// with the progress line on a terminal, and returns what they measured.
func (o *FitOptions) runVerify(ctx context.Context, fopts fit.Options, res fit.Result) (fit.Verification, error) {
	progress := newModeProgress(o.IO.ErrOut, o.IO.ErrTTY)
	epochs, batches := fopts.Bench.Epochs, fopts.Bench.Samples/fopts.Bench.Batch
	v, err := fit.Verify(ctx, fopts, res, o.Verify, func(e bench.Event) {
		switch {
		case e.Batch != nil:
			progress.batch(e.Mode, *e.Batch)
		case e.End != nil:
			progress.clear()
		case e.Header == nil && e.Sweep == nil && e.Epoch == nil:
			progress.start(e.Mode, epochs, batches)
		}
	})
	progress.clear()
	if ctx.Err() != nil {
		return fit.Verification{}, errInterrupted
	}
	if err != nil {
		return fit.Verification{}, fmt.Errorf("verifying the fit: %w", err)
	}
	return v, nil
}

// printVerify writes the verification to out in format f, after a blank
// line in text and Markdown. Its status (v.Err: a configuration that did
// not complete, a peak on sim other than planned) is the caller's.
func (o *FitOptions) printVerify(out io.Writer, f report.Format, v fit.Verification) error {
	if f == report.FormatText || f == report.FormatMarkdown {
		fmt.Fprintln(out)
	}
	if err := report.WriteVerifyAs(out, v, report.Options{Format: f}); err != nil {
		return fmt.Errorf("writing the verification: %w", err)
	}
	return nil
}
