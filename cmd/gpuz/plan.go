package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"gpuz/internal/bench"
	"gpuz/internal/report"
)

// planKey marks a command context in which a workload command prints its
// memory plan instead of running.
type planKey struct{}

// planOnly reports whether ctx asks for the memory plan only.
func planOnly(ctx context.Context) bool {
	on, _ := ctx.Value(planKey{}).(bool)
	return on
}

// newPlanCmd builds "gpuz plan MODEL train|eval": each workload command
// again, with every flag, printing the memory plan instead of running.
func newPlanCmd(stdout, stderr io.Writer, workloads []func(io.Writer, io.Writer) *cobra.Command) *cobra.Command {
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
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			cmd.SetContext(context.WithValue(cmd.Context(), planKey{}, true))
		},
	}
	for _, newWorkload := range workloads {
		w := newWorkload(stdout, stderr)
		// A plan is printed, not saved: --json alone prints it as JSON.
		js := w.Flags().Lookup("json")
		js.NoOptDefVal, js.Usage = "-", "print the plan as JSON (--json=FILE writes it to FILE)"
		cmd.AddCommand(w)
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

// printPlan writes the memory plan of opts, as text or, with --json, as JSON.
func printPlan(stdout io.Writer, o *runOptions, opts bench.Options) error {
	p, err := bench.Plan(opts)
	if err != nil {
		return &runFailure{err}
	}
	if o.JSON == "" {
		return report.WritePlan(stdout, p)
	}
	if o.JSON == "-" {
		return report.WritePlanJSON(stdout, p)
	}
	f, err := os.Create(o.JSON)
	if err != nil {
		return &runFailure{fmt.Errorf("writing the plan: %w", err)}
	}
	if err := report.WritePlanJSON(f, p); err != nil {
		f.Close()
		return &runFailure{fmt.Errorf("writing the plan to %s: %w", o.JSON, err)}
	}
	return f.Close()
}
