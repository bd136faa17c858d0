package main

import (
	"io"
	"os"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
)

// IOStreams are the streams a command writes to, injected rather than
// taken from os.Stdout and os.Stderr, with whether each is a terminal.
type IOStreams struct {
	Out, ErrOut    io.Writer
	OutTTY, ErrTTY bool
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
// it calls runF with opts, or run where runF is nil (tests pass a runF to
// see the options the flags filled).
func runWith[O any](opts O, runF, run func(O) error) func(*cobra.Command, []string) error {
	if runF == nil {
		runF = run
	}
	return func(*cobra.Command, []string) error { return runF(opts) }
}
