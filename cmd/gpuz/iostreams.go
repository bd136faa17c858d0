package main

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
)

// IOStreams are the streams a command writes to, injected rather than
// taken from os.Stdout and os.Stderr, with whether each is a terminal, and
// the command line that started gpuz.
type IOStreams struct {
	Out, ErrOut    io.Writer
	OutTTY, ErrTTY bool
	// CommandLine is the command line, the program's name first, as main
	// reads it from os.Args (runCommandLine): the results record it (a
	// run's header, --json and --bench-out) and the simulated device's
	// ledger entries name it. Nil where a test gives none.
	CommandLine []string
	// Started is when the process started (processStart), from which a
	// run counts the time to its first epoch (bench.Options.ProcessStart);
	// zero where a test gives none, and the run then counts none.
	Started time.Time
}

// newIOStreams wraps the given streams, each a terminal when it is an
// *os.File on one.
func newIOStreams(out, errOut io.Writer) *IOStreams {
	return &IOStreams{Out: out, ErrOut: errOut, OutTTY: isTerminal(out), ErrTTY: isTerminal(errOut)}
}

// isTerminal reports whether w is a file on a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// runWith returns a command's RunE for a command that takes no arguments:
// it calls runF with the command's context and opts, or run where runF is
// nil (tests pass a runF to see the options the flags filled).
func runWith[O any](opts O, runF, run func(context.Context, O) error) func(*cobra.Command, []string) error {
	if runF == nil {
		runF = run
	}
	return func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), opts) }
}

// noArgs is cobra.NoArgs as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	return usage(cobra.NoArgs(cmd, args))
}

// untilDone runs f in a goroutine and waits for it to return or for ctx to
// end, whichever comes first; it reports whether f returned. Where ctx ends
// first f is left running: the command returns at once and the process
// exits with the signal's status, which is what a signal asks for when the
// work (a device measurement, a self-test phase) cannot be stopped midway.
// Where ctx has ended already, f is not started.
func untilDone(ctx context.Context, f func()) bool {
	if ctx.Err() != nil {
		return false
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}
