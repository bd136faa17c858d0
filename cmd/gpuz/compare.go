package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"gpuz/internal/report"
)

// CompareOptions are the arguments of gpuz compare A B.
type CompareOptions struct {
	IO *IOStreams
	// A and B name the result files: gpuz --json files or files in the Go
	// benchmark format (gpuz --bench-out, go test -bench).
	A, B string
	// Read reads a result file; nil is report.ReadResults (tests pass one
	// that blocks, as a slow file system would).
	Read func(path string) ([]byte, error)
}

// newCompareCmd builds gpuz compare A B; runF, when not nil, is called
// instead of compareRun.
func newCompareCmd(ios *IOStreams, runF func(context.Context, *CompareOptions) error) *cobra.Command {
	opts := &CompareOptions{IO: ios}
	run := runWith(opts, runF, compareRun)
	return &cobra.Command{
		Use:   "compare A B",
		Short: "Compare the epoch times of two runs, with a significance test",
		Long: `compare reads two result files, each written by a workload command's
--bench-out (the Go benchmark format, which benchstat reads too) or --json,
a run's or a sweep's (a sweep's rows are configurations, named by their
settings), and prints for each configuration (workload, task, mode, device,
cache policy and window, scale) the median epoch time of A and of B with its 95%
confidence interval, and the change from A to B with the p-value of a
Mann-Whitney U test; ~ marks a change that is not significant (p ≥ 0.05).
A warning says when a configuration has too few timed epochs for an interval
or for the test ever to find a difference: run more --epochs.`,
		Example: `  gpuz linear train cpu,cache --scale small --bench-out a.txt
  gpuz linear train cpu,cache --scale small --bench-out b.txt
  gpuz compare a.txt b.txt`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usagef("compare takes two result files, A and B; got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.A, opts.B = args[0], args[1]
			return run(cmd, args)
		},
	}
}

// compareRun reads both files and writes the comparison. A file that
// cannot be read, does not parse or holds no timed epoch is a usage error.
// The files are read and compared in a goroutine that a signal (ctx) stops
// waiting for: nothing is written then, and run exits with the signal's
// status.
func compareRun(ctx context.Context, opts *CompareOptions) error {
	read := opts.Read
	if read == nil {
		read = report.ReadResults
	}
	var table bytes.Buffer
	var err error
	if !untilDone(ctx, func() { err = compareFiles(&table, read, opts.A, opts.B) }) {
		return errNothingRead
	}
	if err != nil {
		return err
	}
	if _, err := opts.IO.Out.Write(table.Bytes()); err != nil {
		return fmt.Errorf("writing the comparison: %w", err)
	}
	return nil
}

// compareFiles reads the result files a and b with read and writes their
// comparison to w; a file that cannot be read or parsed is a usage error.
func compareFiles(w io.Writer, read func(string) ([]byte, error), a, b string) error {
	var files [2]report.RunFile
	for i, path := range []string{a, b} {
		data, err := read(path)
		if err == nil {
			files[i], err = report.ParseRunFile(path, data)
		}
		if err != nil {
			return usage(err)
		}
	}
	return report.WriteCompare(w, files[0], files[1])
}

// errNothingRead is the error of compare or plot stopped by a signal
// before its input was read.
var errNothingRead = errors.New("the results were not read; nothing written")
