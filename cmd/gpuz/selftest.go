package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"gpuz/internal/device"
	"gpuz/internal/report"
	"gpuz/internal/selftest"
)

// simSelftestNote says what a self-test of the simulated device shows.
const simSelftestNote = "note: %s runs the host kernels, so every check is equal by construction; this checks the self-test's machinery, not a GPU (run the GPU build: gpuz selftest --device cuda)\n"

// SelftestOptions are the flags of gpuz selftest.
type SelftestOptions struct {
	IO *IOStreams
	// Device names the device to test.
	Device string
}

// newSelftestCmd builds gpuz selftest; runF, when not nil, is called
// instead of selftestRun.
func newSelftestCmd(ios *IOStreams, runF func(context.Context, *SelftestOptions) error) *cobra.Command {
	opts := &SelftestOptions{IO: ios, Device: "sim"}
	if device.CUDASupport {
		opts.Device = "cuda"
	}
	cmd := &cobra.Command{
		Use:   "selftest [--device D]",
		Short: "Check a device's kernels and training steps against the host",
		Long: `selftest runs every kernel of a device on small random inputs against the
host kernels (within a stated tolerance, bit-identical from run to run, and
failing where the host fails), then two training steps of each workload
(linear, resnet, attention at small scale) in cuda mode against the host's
cpu mode, and in cache mode, which must equal cuda mode bit for bit. It
prints a pass/fail table with the largest errors and the tolerances, and
exits with status 1 if any check fails. Run it first on a new GPU:
gpuz selftest --device cuda. The default device is cuda in the GPU build and
sim otherwise (where the checks are equal by construction).`,
		Example: "  gpuz selftest",
		Args:    noArgs,
		RunE:    runWith(opts, runF, selftestRun),
	}
	cmd.Flags().StringVar(&opts.Device, "device", opts.Device, "device to test: cuda[:N], sim[:SIZE], sim:PROFILE, sim:FILE or cpu")
	return cmd
}

// selftestRun checks the device against the host and writes the table; a
// failed check is a failure (status 1). Stopped by a signal, it writes the
// table of the checks of the phases (kernels, training) that completed.
func selftestRun(ctx context.Context, opts *SelftestOptions) error {
	stdout := opts.IO.Out
	dev, _, err := device.Parse(opts.Device, openLedger(ctx, opts.IO))
	if err != nil {
		return usagef("--device: %w", err)
	}
	defer dev.Close()
	caps := dev.Caps()
	if caps.Simulated {
		fmt.Fprintf(stdout, simSelftestNote, dev.Name())
	}
	if caps.Kind == device.KindHost {
		fmt.Fprintf(stdout, "note: cpu is the host itself; every check is equal by construction\n")
	}
	r := selftest.Result{Device: dev.Name()}
	for _, phase := range []func(device.Device) []selftest.Check{selftest.Kernels, selftest.Training} {
		var checks []selftest.Check
		if !untilDone(ctx, func() { checks = phase(dev) }) {
			break
		}
		r.Checks = append(r.Checks, checks...)
	}
	if err := report.WriteSelftest(stdout, r); err != nil {
		return fmt.Errorf("writing the self-test table: %w", err)
	}
	if ctx.Err() != nil {
		return errInterrupted
	}
	if n := r.Failed(); n > 0 {
		return fmt.Errorf("%s: %d of %d self-test checks failed", dev.Name(), n, len(r.Checks))
	}
	return nil
}
