package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"gpuz/internal/bench"
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
workload's command; --json prints the plan as JSON.`,
		Example: `  gpuz plan linear train
  gpuz plan linear eval cuda,cache --device sim:4GiB --json`,
	}
	for _, def := range workloads {
		cmd.AddCommand(newWorkloadCmd(ios, def, true, nil))
	}
	cmd.Args = func(_ *cobra.Command, args []string) error {
		if len(args) == 0 {
			return fmt.Errorf("missing model (see gpuz plan --help)")
		}
		return fmt.Errorf("unknown model %q (see gpuz plan --help)", args[0])
	}
	cmd.RunE = func(*cobra.Command, []string) error { return nil }
	return cmd
}

// planRun prints the memory plan of a workload, as text or, with JSON
// set, as JSON.
func planRun(o *WorkloadOptions) error {
	opts, err := o.benchOptions()
	if err != nil {
		return err
	}
	p, err := bench.PlanMemory(opts)
	if err != nil {
		return &runFailure{err}
	}
	switch o.JSON {
	case "":
		return report.WritePlan(o.IO.Out, p)
	case "-":
		return report.WritePlanJSON(o.IO.Out, p)
	}
	if err := writeJSON(o.IO.Out, o.JSON, "the plan", func(w io.Writer) error { return report.WritePlanJSON(w, p) }); err != nil {
		return &runFailure{err}
	}
	return nil
}
