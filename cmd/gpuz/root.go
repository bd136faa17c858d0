package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// newRootCmd builds the gpuz command tree writing to the given streams.
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	ios := newIOStreams(stdout, stderr)
	root := &cobra.Command{
		Use:   "gpuz",
		Short: "Compare training on the GPU, on a paged GPU window and on the CPU",
		Long: `gpuz measures, side by side, three ways to train or run a model that does
not fit a small GPU: everything on the GPU (cuda), a window of the model's
blocks on the GPU with the rest paged in from host memory (cache), and the
CPU (cpu). Results come out per epoch and as an Analyze table.`,
		Example: `  gpuz linear train cuda,cache,cpu
  gpuz linear train cpu --scale small
  gpuz take-mem 20
  gpuz version`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	root.CompletionOptions.DisableDefaultCmd = true
	workloads := []workloadDef{linearWorkload, resnetWorkload, attentionWorkload}
	for _, def := range workloads {
		root.AddCommand(newWorkloadCmd(ios, def, false, nil))
	}
	root.AddCommand(newPlanCmd(ios, workloads), newTakeMemCmd(ios, nil), newVersionCmd(ios))
	root.AddCommand(newDevicesCmd(ios, nil), newSelftestCmd(ios, nil))
	// A bare "gpuz" with an unknown word must not fall back to help.
	root.Args = func(_ *cobra.Command, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("unknown command %q (want linear, resnet, attention, plan, take-mem, devices, selftest or version; see gpuz --help)", args[0])
		}
		return nil
	}
	root.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	return root
}
