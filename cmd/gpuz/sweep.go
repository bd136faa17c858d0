package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"gpuz/internal/bench"
	"gpuz/internal/cache"
	"gpuz/internal/levers"
	"gpuz/internal/plot"
	"gpuz/internal/report"
)

// SweepFlag is a flag given a comma list of several values: the run is a
// sweep over the cross product of every such flag's values.
type SweepFlag struct {
	Flag   string // the flag's name: "win-size", "take", "dims"
	Values []string
}

// maxConfigurations is the most configurations a sweep may have.
const maxConfigurations = 10000

// listFlag is the value of a flag that takes a comma list: its text as
// given and when it was set, so that a sweep's parameters follow the order
// of the command line.
type listFlag struct {
	text  string
	typ   string
	seq   int
	clock *int // shared by a command's list flags
}

func (f *listFlag) String() string { return f.text }
func (f *listFlag) Type() string   { return f.typ }

// Set keeps the text and the order in which the flag was set.
func (f *listFlag) Set(s string) error {
	f.text = s
	*f.clock++
	f.seq = *f.clock
	return nil
}

// listFlags are a command's flags that take comma lists, by name.
type listFlags struct {
	clock int
	flags map[string]*listFlag
}

// add defines the list flag name on fs with its default text and usage;
// typ names its values in the help ("ints", "strings").
func (l *listFlags) add(fs *pflag.FlagSet, name, typ, def, usage string) {
	if l.flags == nil {
		l.flags = map[string]*listFlag{}
	}
	f := &listFlag{text: def, typ: typ, clock: &l.clock}
	l.flags[name] = f
	fs.Var(f, name, usage)
}

// apply reads the list flags the user set, in the order given: a single
// value sets o's field (WorkloadOptions.set), several make a SweepFlag in
// o.Sweep.
func (l *listFlags) apply(o *WorkloadOptions) error {
	names := slices.Collect(maps.Keys(l.flags))
	names = slices.DeleteFunc(names, func(n string) bool { return l.flags[n].seq == 0 })
	slices.SortFunc(names, func(a, b string) int { return l.flags[a].seq - l.flags[b].seq })
	o.Sweep = nil
	for _, name := range names {
		values, err := parseList(name, l.flags[name].text)
		if err != nil {
			return err
		}
		if len(values) > 1 {
			// Each item is read now, so that one that is not a number is
			// named with its flag; ranges are checked per configuration.
			for _, v := range values {
				if err := o.clone().set(name, v); err != nil {
					return err
				}
			}
			o.Sweep = append(o.Sweep, SweepFlag{Flag: name, Values: values})
			continue
		}
		if err := o.set(name, values[0]); err != nil {
			return err
		}
	}
	return nil
}

// parseList splits a comma list of --flag's values, trimming spaces; an
// empty item is an error.
func parseList(flag, s string) ([]string, error) {
	items := strings.Split(s, ",")
	for i, it := range items {
		items[i] = strings.TrimSpace(it)
		if items[i] == "" {
			return nil, fmt.Errorf("--%s: empty value in %q (want one value or a comma list)", flag, s)
		}
	}
	return items, nil
}

// set sets the option of --flag to one value: a cache setting, the take
// or one of the workload's sizes. Whether the value is in range is
// checked later, with the whole configuration (validate, Configure).
func (o *WorkloadOptions) set(flag, value string) error {
	switch flag {
	case "policy":
		o.Cache.Policy = cache.Policy(value)
	case "optimizer-on":
		if value != "device" && value != "host" {
			return fmt.Errorf("unknown --optimizer-on %q (want device or host)", value)
		}
		o.Cache.OptimizerOnHost = value == "host"
	case "recompute":
		r, err := levers.ParseRecompute(value)
		if err != nil {
			return fmt.Errorf("--recompute: %w", err)
		}
		o.Recompute = r
	case "precision":
		p, err := levers.ParsePrecision(value)
		if err != nil {
			return fmt.Errorf("--precision: %w", err)
		}
		o.Precision = p
	case "grad-accum":
		k, err := levers.ParseGradAccum(value)
		if err != nil {
			return fmt.Errorf("--grad-accum: %w", err)
		}
		o.GradAccum = k
	case "attention":
		a, err := levers.ParseAttention(value)
		if err != nil {
			return fmt.Errorf("--attention: %w", err)
		}
		o.Attention = a
	case "lora":
		n, err := parseWhole(value)
		if err != nil {
			return fmt.Errorf("--lora: invalid argument %q (%w)", value, err)
		}
		o.LoRA.Rank = n
	case "take":
		o.Take = value
	default:
		n, err := parseWhole(value)
		if err != nil {
			return fmt.Errorf("--%s: invalid argument %q (%w)", flag, value, err)
		}
		if flag == "win-size" {
			o.Cache.Window = n
			return nil
		}
		if o.Sizes == nil {
			o.Sizes = map[string]int{}
		}
		o.Sizes[flag] = n
	}
	return nil
}

// takeBytes reads --take: 0 (or nothing) holds nothing, else N linear
// blocks or a size, as gpuz take-mem reads its amount.
func (o *WorkloadOptions) takeBytes() (int64, error) {
	if o.Take == "" || o.Take == "0" {
		return 0, nil
	}
	b, _, err := takeMemAmount(o.Take)
	if err != nil {
		return 0, fmt.Errorf("--take: %w", err)
	}
	return b, nil
}

// sweepConfig is one configuration of a sweep: its settings and the
// options that run it, with one value per flag.
type sweepConfig struct {
	settings []bench.Setting
	opts     *WorkloadOptions
}

// paramName is a flag's name as a sweep's parameter: snake_case.
func paramName(flag string) string { return strings.ReplaceAll(flag, "-", "_") }

// configurations returns the cross product of o.Sweep's values, the first
// flag varying slowest and the last fastest, each a copy of o with those
// values set.
func (o *WorkloadOptions) configurations() ([]sweepConfig, error) {
	n := 1
	for _, f := range o.Sweep {
		n *= len(f.Values)
		if n > maxConfigurations {
			return nil, fmt.Errorf("the sweep has more than %d configurations", maxConfigurations)
		}
	}
	configs := []sweepConfig{{opts: o.clone()}}
	for _, f := range o.Sweep {
		next := make([]sweepConfig, 0, len(configs)*len(f.Values))
		for _, c := range configs {
			for _, v := range f.Values {
				d := c.opts.clone()
				if err := d.set(f.Flag, v); err != nil {
					return nil, err
				}
				next = append(next, sweepConfig{settings: append(slices.Clone(c.settings), bench.Setting{Name: paramName(f.Flag), Value: v}), opts: d})
			}
		}
		configs = next
	}
	return configs, nil
}

// clone copies o with its own Sizes and no Sweep.
func (o *WorkloadOptions) clone() *WorkloadOptions {
	d := *o
	d.Sizes = maps.Clone(o.Sizes)
	d.Sweep = nil
	return &d
}

// label names a configuration in errors and progress lines: "take=8 win_size=3".
func (c sweepConfig) label() string { return bench.SettingsString(c.settings) }

// sweepOptions checks every configuration of the sweep, then the outputs
// and the device, before anything runs, and returns the sweep's options.
// A configuration that cannot run is a usage error naming it.
func (o *WorkloadOptions) sweepOptions(ctx context.Context) (bench.SweepOptions, error) {
	configs, err := o.configurations()
	if err != nil {
		return bench.SweepOptions{}, usage(err)
	}
	so := bench.SweepOptions{}
	for _, f := range o.Sweep {
		so.Parameters = append(so.Parameters, paramName(f.Flag))
	}
	if o.Plot != "" {
		// A run with nothing to draw warns after it (plotJSON); a sweep
		// that can never be drawn is refused before it runs.
		if err := plot.CheckSweep(so.Parameters); err != nil {
			return bench.SweepOptions{}, usagef("--plot: %w", err)
		}
	}
	taking := false
	for _, c := range configs {
		opts, err := c.opts.check()
		if err == nil {
			var take int64
			if take, err = c.opts.takeBytes(); err == nil {
				taking = taking || take > 0
				so.Configs = append(so.Configs, bench.SweepConfig{Settings: c.settings, TakeBytes: take, Options: opts})
				continue
			}
		}
		return bench.SweepOptions{}, usagef("%s: %w", c.label(), err)
	}
	newGPU, gpuName, err := o.openOutputsAndGPU(ctx)
	if err != nil {
		return bench.SweepOptions{}, err
	}
	if taking && newGPU == nil {
		return bench.SweepOptions{}, usagef("--take holds memory on the device of the cuda and cache modes; --device %s has none", o.Device)
	}
	for i := range so.Configs {
		so.Configs[i].Options.NewGPU, so.Configs[i].Options.GPUName = newGPU, gpuName
	}
	return so, nil
}

// sweepRun runs a sweep: every configuration of o.Sweep's cross product,
// each with its --take held, then the sweep table (one row per
// configuration × mode) in the chosen format, and the sweep's JSON and
// benchmark lines where asked. On a terminal, standard error shows a line
// per configuration and the running mode's progress. Its error says how
// the sweep ended, as workloadRun's does.
func sweepRun(ctx context.Context, o *WorkloadOptions) error {
	so, err := o.sweepOptions(ctx)
	if err != nil {
		return err
	}
	configs := make([]bench.Options, len(so.Configs))
	for i, c := range so.Configs {
		configs[i] = c.Options
	}
	if err := checkRunAddressSpace(ctx, configs...); err != nil {
		return err
	}
	out := o.human()
	progress := newModeProgress(o.IO.ErrOut, o.IO.ErrTTY)
	headerShown := false
	takeVaries := slices.ContainsFunc(so.Configs, func(c bench.SweepConfig) bool { return c.TakeBytes != so.Configs[0].TakeBytes })
	var epochs, batches int
	notes := newSetupNotes(o.IO.ErrOut, o.IO.ErrTTY, o.setupNoteAfter)
	defer notes.stop()
	so.Progress = notes.guard(func(e bench.Event) {
		switch {
		case e.Phase != "": // noted by notes
		case e.Sweep != nil:
			progress.clear()
			c := so.Configs[e.Sweep.Index].Options
			epochs, batches = c.Epochs, c.Samples/c.Batch
			if o.IO.ErrTTY {
				fmt.Fprintf(o.IO.ErrOut, "[%d/%d] %s\n", e.Sweep.Index+1, e.Sweep.Total, bench.SettingsString(e.Sweep.Settings))
			}
		case e.Header != nil:
			if !headerShown {
				// The first configuration's header: what it held is no
				// figure of a sweep over --take.
				h := *e.Header
				if takeVaries {
					h.TakeBytes = 0
				}
				report.WriteHeader(out, h)
				if takeVaries {
					fmt.Fprintf(out, "held: each configuration's --take on %s (the take column)\n", h.GPU)
				}
				headerShown = true
			}
		case e.Batch != nil:
			progress.batch(e.Mode, *e.Batch)
		case e.End != nil:
			progress.clear()
		case e.Epoch == nil:
			progress.start(e.Mode, epochs, batches)
		}
	})
	return o.measure(ctx, out, "sweeping", progress, func() (outputs, error) {
		res, err := bench.Sweep(ctx, so)
		notes.stop()
		return outputsOf("sweep", res, report.WriteSweep, report.WriteSweepJSON, report.WriteSweepBenchfmt, sweepIncomplete), err
	})
}

// sweepIncomplete returns an *incompleteError naming each configuration's
// modes whose status is not ok, or nil.
func sweepIncomplete(res bench.SweepResult) error {
	var notOK []string
	total := 0
	for _, row := range res.Rows {
		total += len(row.Result.Modes)
		for _, m := range row.Result.Modes {
			if m.Status.Kind != bench.StatusOK {
				notOK = append(notOK, fmt.Sprintf("%s %s (%s)", bench.SettingsString(row.Settings), m.Mode, m.Status.Kind))
			}
		}
	}
	if notOK == nil {
		return nil
	}
	return &incompleteError{Modes: notOK, Total: total}
}
