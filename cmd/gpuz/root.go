package main

import (
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// newRootCmd builds the gpuz command tree writing to the given streams,
// for a command line it does not know (newRootCmdOn).
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	return newRootCmdOn(newIOStreams(stdout, stderr))
}

// newRootCmdOn builds the gpuz command tree on ios: its streams and the
// command line that started gpuz.
func newRootCmdOn(ios *IOStreams) *cobra.Command {
	root := &cobra.Command{
		// The usage line shows the main form, gpuz MODEL train|eval
		// [MODES]; the command's name is still its first word.
		Use:   "gpuz MODEL train|eval [MODES]",
		Short: "Compare training on the GPU, on a paged GPU window and on the CPU",
		Long: `gpuz measures, side by side, ways to train or run a model that does not fit
a small GPU: everything on the GPU (cuda), a window of the model's blocks on
the GPU with the rest paged in from host memory (cache), every block in
managed memory that the driver pages (managed), each block on the GPU, on
the host or paged as --place says (hybrid), and the CPU (cpu). Results come
out per epoch and as an Analyze table.`,
		Example: `  gpuz linear train cuda,cache,cpu
  gpuz linear train cpu --scale small
  gpuz take-mem 20
  gpuz version`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		if strings.Contains(err.Error(), "flag needs an argument: --json") {
			return usagef("%w (a file, or - for standard output)", err)
		}
		return usage(err)
	})
	root.SetHelpCommand(newHelpCmd())
	root.CompletionOptions.DisableDefaultCmd = true
	workloads := []workloadDef{linearWorkload, resnetWorkload, attentionWorkload, llmWorkload}
	for _, def := range workloads {
		root.AddCommand(newWorkloadCmd(ios, def, false, nil))
	}
	if llm, _, err := root.Find([]string{llmWorkload.workload.Name}); err == nil {
		llm.AddCommand(newExportCmd(ios, nil))
	}
	root.AddCommand(newPlanCmd(ios, workloads), newFitCmd(ios, workloads, nil), newTakeMemCmd(ios, nil), newVersionCmd(ios))
	root.AddCommand(newDevicesCmd(ios, nil), newSelftestCmd(ios, nil), newCompareCmd(ios, nil), newPlotCmd(ios, nil), newCalibrateCmd(ios, nil))
	decimalFlags(root)
	// A bare "gpuz" with an unknown word must not fall back to help.
	root.Args = func(_ *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usagef("unknown command %q (want linear, resnet, attention, llm, plan, fit, compare, plot, take-mem, devices, selftest, calibrate or version; see gpuz --help)", args[0])
		}
		return nil
	}
	root.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	return root
}

// newHelpCmd builds "gpuz help [COMMAND]": cobra's help command, except
// that an unknown topic is a usage error (status 2, one line) rather than
// the usage text and status 0.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]",
		Short: "Help about any command",
		Long:  "help prints the help of a command: gpuz help COMMAND, or gpuz help plan MODEL.",
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := cmd.Root().Find(args)
			// A word that names no command is left in rest; the words after
			// a command without subcommands are its arguments.
			unknown := len(rest) > 0 && (target == cmd.Root() || target.HasSubCommands())
			if err != nil || target == nil || unknown {
				return usagef("unknown help topic %q (see gpuz --help)", strings.Join(args, " "))
			}
			target.InitDefaultHelpFlag()
			target.InitDefaultVersionFlag()
			return target.Help()
		},
	}
}
