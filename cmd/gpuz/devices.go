package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"gpuz/internal/device"
	"gpuz/internal/perfmodel"
	"gpuz/internal/report"
)

// devicesGemmSize is the n of the n×n×n SGEMM that gpuz devices times.
const devicesGemmSize = 2000

// DevicesOptions are the settings of gpuz devices.
type DevicesOptions struct {
	IO *IOStreams
	// Specs are the devices to list; nil lists cpu, sim and every CUDA GPU.
	Specs []string
	// GemmSize is the n of the n×n×n SGEMM timed on each device.
	GemmSize int
	// Profiles lists the built-in GPU profiles (what --device
	// sim:PROFILE takes) instead of measuring devices.
	Profiles bool
}

// newDevicesCmd builds gpuz devices; runF, when not nil, is called instead
// of devicesRun.
func newDevicesCmd(ios *IOStreams, runF func(context.Context, *DevicesOptions) error) *cobra.Command {
	opts := &DevicesOptions{IO: ios, GemmSize: devicesGemmSize}
	cmd := &cobra.Command{
		Use:   "devices",
		Short: "List the devices with their memory, copy rates and SGEMM speed",
		Long: `devices lists every device gpuz can run on: the host (cpu), the simulated
GPU (sim) and, in the GPU build (make cuda), each CUDA GPU. For each it prints
the compute capability, free and total memory, and measured figures: copy
rates between host and device memory (from pinned and from pageable host
memory, each way) and the speed of a 2000×2000×2000 SGEMM. The host and the
simulated device copy within host memory (memcpy rates) and run the host's
BLAS; a few seconds in all.

With --profiles it lists instead the GPU profiles that --device sim:PROFILE
takes (a simulated device of that GPU's memory size, standing for it): each
GPU's published peak FP32 rate, memory bandwidth and size, its host link and
copy rates. docs/model.md gives their sources.`,
		Example: "  gpuz devices\n  gpuz devices --profiles",
		Args:    noArgs,
		RunE:    runWith(opts, runF, devicesRun),
	}
	cmd.Flags().BoolVar(&opts.Profiles, "profiles", false, "list the GPU profiles of --device sim:PROFILE instead of measuring devices")
	return cmd
}

// devicesRun measures each device and writes the table, or with Profiles
// writes the table of GPU profiles. Stopped by a signal, it writes the
// table of the devices measured so far.
func devicesRun(ctx context.Context, opts *DevicesOptions) error {
	if opts.Profiles {
		return report.WriteProfiles(opts.IO.Out, perfmodel.Profiles())
	}
	specs := opts.Specs
	if specs == nil {
		specs = []string{"cpu", "sim"}
		n, err := device.CUDACount()
		if err != nil {
			fmt.Fprintf(opts.IO.ErrOut, "gpuz: no CUDA GPUs listed: %v\n", err)
		}
		for i := range n {
			specs = append(specs, fmt.Sprintf("cuda:%d", i))
		}
	}
	var infos []device.Info
	for _, spec := range specs {
		var info device.Info
		var err error
		if !untilDone(ctx, func() { info, err = measureDevice(ctx, spec, opts.GemmSize, opts.IO) }) {
			break
		}
		if err != nil {
			return err
		}
		infos = append(infos, info)
	}
	if err := report.WriteDevices(opts.IO.Out, infos); err != nil {
		return fmt.Errorf("writing the devices table: %w", err)
	}
	if ctx.Err() != nil {
		return errInterrupted
	}
	return nil
}

// measureDevice opens, measures and closes the device spec names. It is the
// one place that names where the measurement lives.
func measureDevice(ctx context.Context, spec string, gemmSize int, ios *IOStreams) (device.Info, error) {
	dev, _, err := device.Parse(spec, openLedger(ctx, ios))
	if err != nil {
		return device.Info{}, fmt.Errorf("opening %s: %w", spec, err)
	}
	info, err := device.Measure(dev, gemmSize)
	closeErr := dev.Close()
	if err != nil {
		return device.Info{}, fmt.Errorf("measuring %s: %w", dev.Name(), err)
	}
	if closeErr != nil {
		return device.Info{}, fmt.Errorf("closing %s: %w", dev.Name(), closeErr)
	}
	return info, nil
}

// openLedger returns the simulated device's ledger at its default path for
// a command: a wait of more than device.WaitNotice for the file's lock
// (another gpuz process stopped inside a transaction) is reported in one
// line on ios.ErrOut, ctx ends the wait, and the entries are labelled with
// the command line (ledgerLabel).
func openLedger(ctx context.Context, ios *IOStreams) *device.Ledger {
	timeout := ledgerLockTimeout
	return device.OpenLedgerWith("", device.LedgerOptions{Context: ctx, Label: ledgerLabel(ios.CommandLine), Timeout: timeout, OnWait: func(path string) {
		fmt.Fprintf(ios.ErrOut, "gpuz: waiting for the simulated device's ledger %s: another gpuz process holds its lock (giving up after %v)\n",
			path, timeout)
	}})
}

// ledgerLockTimeout is the longest a command waits for the ledger's lock;
// tests shorten it.
var ledgerLockTimeout = device.DefaultLockTimeout

// ledgerLabel is the label of a command line's ledger entries: the
// program's base name and its arguments, separated by spaces, as in
// "gpuz take-mem 20".
func ledgerLabel(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	return strings.Join(append([]string{filepath.Base(argv[0])}, argv[1:]...), " ")
}
