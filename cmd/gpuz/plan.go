package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"gpuz/internal/bench"
	"gpuz/internal/levers"
	"gpuz/internal/plot"
	"gpuz/internal/report"
)

// newPlanCmd builds "gpuz plan MODEL train|eval": each workload command
// again, with every flag, printing the memory plan instead of running.
func newPlanCmd(ios *IOStreams, workloads []workloadDef) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plan MODEL train|eval [MODES]",
		Short: "Print the memory each mode and cache policy needs, before allocating any",
		Long: `plan compiles the workload as a run would and prints, without allocating
anything, the bytes of parameters, gradients, optimizer state, saved
activations and temporaries, then for each mode and cache policy the memory
it needs on the device and on the host, and whether that fits the device's
free memory and the host's available memory. It takes every flag of the
workload's command; --format markdown, csv or json prints the plan in that
form instead of the table, --wide shows every column, --json FILE writes
the plan as JSON to FILE instead of the table, and --json - is --format
json. --recompute none,blocks plans both settings, a row per mode and
setting; --take subtracts from the device's free memory without holding
anything. --plot FILE.svg draws the device memory over one batch's steps,
stacked by what holds it (weights, gradients, optimizer state, saved
activations, temporaries, inputs, paging slots, idle), a panel per mode,
placement and setting, with the device's capacity and free memory as
lines and the peak in use marked. The plan is printed whether or not each
mode fits: its status is 0.`,
		Example: `  gpuz plan linear train
  gpuz plan linear eval cuda,cache --device sim:4GiB --json -
  gpuz plan attention train --format csv
  gpuz plan resnet train cuda --recompute none,blocks --device sim:8GiB --take 4GiB --plot memory.svg`,
	}
	for _, def := range workloads {
		sub := newWorkloadCmd(ios, def, true, nil)
		sub.Example = planExample(def.workload.Name)
		cmd.AddCommand(sub)
	}
	cmd.Args = func(_ *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usagef("missing model (see gpuz plan --help)")
		}
		return usagef("unknown model %q (see gpuz plan --help)", args[0])
	}
	cmd.RunE = func(*cobra.Command, []string) error { return nil }
	return cmd
}

// planExample is the Example of "gpuz plan NAME": plan command lines, not
// the workload's own run examples.
func planExample(name string) string {
	return fmt.Sprintf(`  gpuz plan %[1]s train
  gpuz plan %[1]s train cuda,cache --device sim:4GiB
  gpuz plan %[1]s eval --scale small --json -`, name)
}

// planOptions reads what a plan compares beyond one run: each value of
// --recompute, the one flag whose comma list a plan takes (a row per mode
// and value), and --take's bytes, which the plan takes from the device's
// free memory without holding them.
func (o *WorkloadOptions) planOptions() (bench.PlanOptions, error) {
	var po bench.PlanOptions
	for _, f := range o.Sweep {
		if f.Flag != "recompute" {
			return po, usagef("plan takes one value per flag but --recompute; --%s has %d", f.Flag, len(f.Values))
		}
		for _, v := range f.Values {
			r, err := levers.ParseRecompute(v)
			if err != nil {
				return po, usagef("--recompute: %w", err)
			}
			if slices.Contains(po.Recomputes, r) {
				return po, usagef("--recompute: %s given twice in %s", r, strings.Join(f.Values, ","))
			}
			po.Recomputes = append(po.Recomputes, r)
		}
	}
	take, err := o.takeBytes()
	if err != nil {
		return po, usage(err)
	}
	po.TakeBytes = take
	return po, nil
}

// planRun prints the memory plan of a workload in --format's format (the
// text table, every column with --wide), or with JSON set as JSON (to
// standard output for "-"). Stopped by a signal while it
// compiles, it returns errInterrupted having printed nothing.
func planRun(ctx context.Context, o *WorkloadOptions) error {
	po, err := o.planOptions()
	if err != nil {
		return err
	}
	opts, err := o.benchOptions(ctx)
	if err != nil {
		return err
	}
	tp, err := o.frameworkPlan(opts)
	if err != nil {
		return err
	}
	var p bench.MemoryPlan
	if !untilDone(ctx, func() { p, err = bench.PlanMemory(opts, po) }) {
		return errInterrupted
	}
	if err != nil {
		return fmt.Errorf("planning %s %s: %w", o.Workload.Name, o.Task, err)
	}
	if o.JSON != "" && o.JSON != "-" {
		return writeJSON(o.IO.Out, o.JSON, "the plan", func(w io.Writer) error { return report.WritePlanJSONFramework(w, p, tp) })
	}
	if err := report.WritePlanAs(o.IO.Out, p, report.Options{Format: o.format(), Wide: o.Wide, Framework: tp}); err != nil {
		return fmt.Errorf("writing the plan: %w", err)
	}
	if o.Plot != "" {
		return plotPlan(o.human(), o.Plot, p)
	}
	return nil
}

// plotPlan draws the memory picture of p to path (--plot). A plan with no
// timeline to draw (only managed or device-less modes) gets a warning
// line on human, not an error: the plan itself is printed.
func plotPlan(human io.Writer, path string, p bench.MemoryPlan) error {
	pic, err := report.PlanPicture(p)
	if err != nil {
		fmt.Fprintf(human, "warning: --plot %s not drawn: %v\n", path, err)
		return nil
	}
	f, err := plot.FormatOf(path)
	if err != nil {
		return usagef("--plot %w", err)
	}
	return writeFile(path, "the memory picture", func(w io.Writer) error { return plot.RenderMemory(w, pic, f) })
}
