package main

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"gpuz/internal/plot"
	"gpuz/internal/report"
)

// PlotOptions are the arguments of gpuz plot RESULTS -o FILE.
type PlotOptions struct {
	IO *IOStreams
	// Results names a gpuz JSON file: a run's (--json) or a sweep's.
	Results string
	// Output names the image to write; its extension, .svg or .png, is
	// the format.
	Output string
	// Read reads the results file; nil is report.ReadResults (tests pass
	// one that blocks, as a slow file system would).
	Read func(path string) ([]byte, error)
}

// newPlotCmd builds gpuz plot RESULTS -o FILE; runF, when not nil, is
// called instead of plotRun.
func newPlotCmd(ios *IOStreams, runF func(context.Context, *PlotOptions) error) *cobra.Command {
	opts := &PlotOptions{IO: ios}
	run := runWith(opts, runF, plotRun)
	cmd := &cobra.Command{
		Use:   "plot RESULTS -o FILE.svg|FILE.png",
		Short: "Draw a run's or a sweep's epoch times as SVG or PNG",
		Long: `plot reads a gpuz JSON file and draws it, as SVG or PNG after the extension
of -o. A run's file (--json) gives a bar per mode: the median of its timed
epochs with its 95% confidence interval as an error bar, a mode that did not
complete a cross at zero labelled with its status (OOM, skipped …). A
sweep's file gives the epoch time against the free device memory (a sweep
over take) or the cache window (over win_size): a line per mode, the cpu as
a shaded band (its median and interval, since it does not depend on device
memory), and a cross at the top of the axis where a mode ran out of memory.
The title names the workload, task, device and the gpuz revision. The same
drawing comes from a run's --plot FILE.`,
		Example: `  gpuz linear train cpu,cache --scale small --json run.json
  gpuz plot run.json -o run.svg`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("plot takes one results file; got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Results = args[0]
			return run(cmd, args)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "the image to write: FILE.svg or FILE.png (required)")
	return cmd
}

// plotRun checks the output, reads the results and draws them. A bad output
// path, or a results file that is missing, not gpuz JSON or has nothing to
// draw, is a usage error; a failed write is not. The results are read in a
// goroutine that a signal (ctx) stops waiting for: nothing is written
// then, and run exits with the signal's status.
func plotRun(ctx context.Context, opts *PlotOptions) error {
	if opts.Output == "" {
		return usagef("plot needs -o FILE.svg or -o FILE.png")
	}
	if err := checkOutputs(outputFile{"-o", opts.Output, false}); err != nil {
		return err
	}
	if err := checkPlotFormat("-o", opts.Output); err != nil {
		return err
	}
	read := opts.Read
	if read == nil {
		read = report.ReadResults
	}
	var chart plot.Chart
	var err error
	if !untilDone(ctx, func() { chart, err = readChart(read, opts.Results) }) {
		return errNothingRead
	}
	if err != nil {
		return err
	}
	return writePlot(opts.Output, chart)
}

// readChart reads the results file path with read and builds its chart; a
// file that cannot be read, parsed or drawn is a usage error.
func readChart(read func(string) ([]byte, error), path string) (plot.Chart, error) {
	data, err := read(path)
	if err != nil {
		return plot.Chart{}, usage(err)
	}
	doc, err := plot.Parse(path, data)
	if err != nil {
		return plot.Chart{}, usage(err)
	}
	chart, err := plot.Build(doc)
	if err != nil {
		return plot.Chart{}, usagef("%s: %w", path, err)
	}
	return chart, nil
}

// checkPlotFormat checks that path, when given, names an image format:
// .svg or .png.
func checkPlotFormat(flag, path string) error {
	if path == "" {
		return nil
	}
	if _, err := plot.FormatOf(path); err != nil {
		return usagef("%s %w", flag, err)
	}
	return nil
}

// writePlot draws chart to path in the format its extension names.
func writePlot(path string, chart plot.Chart) error {
	f, err := plot.FormatOf(path)
	if err != nil {
		return usagef("%w", err)
	}
	return writeFile(path, "the plot", func(w io.Writer) error { return plot.Render(w, chart, f) })
}

// plotJSON draws to path (--plot) the results that writeJSON writes as gpuz
// JSON (a run's or a sweep's), read back by the reader gpuz plot uses. A
// run with nothing to draw (no mode has a timed epoch) gets a warning line
// on human, not an error: the run's own status says why.
func plotJSON(human io.Writer, path string, writeJSON func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := writeJSON(&buf); err != nil {
		return fmt.Errorf("drawing the plot: %w", err)
	}
	doc, err := plot.Parse("the results", buf.Bytes())
	if err != nil {
		return fmt.Errorf("drawing the plot: %w", err)
	}
	chart, err := plot.Build(doc)
	if err != nil {
		fmt.Fprintf(human, "warning: --plot %s not drawn: %v\n", path, err)
		return nil
	}
	return writePlot(path, chart)
}
