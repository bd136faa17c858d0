package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"gpuz/internal/device"
	"gpuz/internal/memhog"
	"gpuz/internal/termsafe"
	"gpuz/internal/units"
)

// TakeMemOptions are the arguments and flags of gpuz take-mem.
type TakeMemOptions struct {
	IO     *IOStreams
	Amount string // N blocks or a size
	Device string
	For    time.Duration // 0: until interrupted
	Busy   bool
	// List lists the simulated device's holders instead of holding
	// memory (Amount is then empty).
	List bool
	// afterFunc arms the --for timer: time.AfterFunc when nil (tests
	// see when it is armed).
	afterFunc func(time.Duration, func()) *time.Timer
}

// newTakeMemCmd builds gpuz take-mem; runF, when not nil, is called instead
// of takeMemRun.
func newTakeMemCmd(ios *IOStreams, runF func(context.Context, *TakeMemOptions) error) *cobra.Command {
	o := &TakeMemOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "take-mem N|SIZE | --list",
		Short: "Hold device memory until interrupted, as a second program on the GPU would",
		Long: `take-mem holds memory on a device until it is interrupted (Ctrl-C) or --for
elapses, so that a benchmark run in another shell meets a device with less
free memory. N is a number of linear blocks, each 10 × Linear(2000→2000)
weights and biases (160,080,000 bytes) as the reference's take-mem held:
12 ≈ 1.8 GiB, 20 ≈ 3 GiB. SIZE is an amount with a unit: 512MiB, 4GiB, 4GB.

On a simulated device (sim, sim:SIZE, and auto without a CUDA GPU) the
memory is recorded in a ledger file shared by your gpuz processes
without taking host memory; a benchmark's sim device sees it taken. The
ledger is gpuz-sim-ledger in $XDG_RUNTIME_DIR, else gpuz-sim-ledger-UID in
the temporary directory; set $GPUZ_SIM_LEDGER to choose the file, which
users share by pointing it at the same file writable by each. When the
memory is not free the error names who holds it (pid, user, bytes);
--list lists every holder, one line each, with its command line.

With --busy, a forward pass through the held layers runs every second, so
that the device is busy as well as full. On a simulated device the memory
is not real, so the pass runs one Linear(2000→2000) layer per held block on
one real layer: real work on the CPU that the simulation runs on.`,
		Example: `  gpuz take-mem 20
  gpuz take-mem 4GiB --device sim:8GiB --for 10m
  gpuz take-mem 12 --busy
  gpuz take-mem --list --device sim:8GiB`,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case o.List && len(args) > 0:
				return usagef("--list takes no amount: it lists what others hold")
			case o.List:
				return nil
			}
			switch len(args) {
			case 0:
				return usagef("missing amount: a number of linear blocks (20) or a size (4GiB)")
			case 1:
				return nil
			}
			return usagef("too many arguments: %q (want N|SIZE)", strings.Join(args, " "))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("for") && o.For <= 0 {
				return usagef("--for must be positive, got %v", o.For)
			}
			if !o.List {
				o.Amount = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return takeMemReporting(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Device, "device", "auto", "device to hold memory on: auto, cpu, sim, sim:SIZE, sim:PROFILE, sim:FILE or cuda:N")
	fs.DurationVar(&o.For, "for", 0, "release after this long, e.g. 30s or 10m (default: until interrupted)")
	fs.BoolVar(&o.Busy, "busy", false, "run a forward pass through the held layers every second")
	fs.BoolVar(&o.List, "list", false, "list who holds the simulated device's memory (pid, user, bytes, command), one line each, instead of holding any")
	return cmd
}

// takeMemReporting runs takeMemRun with its standard output kept in an
// errWriter: lines that could not be written (standard output on a full
// disk) do not stop the holding, and the error is returned once
// takeMemRun has returned, the memory released, so the status is 1 as for
// the other commands (a signal still wins).
func takeMemReporting(ctx context.Context, o *TakeMemOptions) error {
	out := &errWriter{w: o.IO.Out}
	ios := *o.IO
	ios.Out = out
	with := *o
	with.IO = &ios
	err := takeMemRun(ctx, &with)
	if out.err != nil {
		err = errors.Join(err, fmt.Errorf("writing to standard output: %w", out.err))
	}
	return err
}

// takeMemAmount reads N|SIZE: the bytes to hold and, for N, the blocks.
func takeMemAmount(s string) (bytes int64, blocks int, err error) {
	if s != "" && strings.Trim(s, "0123456789") == "" {
		n, err := strconv.Atoi(s)
		if err != nil || int64(n) > math.MaxInt64/memhog.BlocksBytes(1) {
			return 0, 0, fmt.Errorf("too many blocks: %s", s)
		}
		if n == 0 {
			return 0, 0, errors.New("the number of blocks must be positive, got 0")
		}
		return memhog.BlocksBytes(n), n, nil
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, 0, fmt.Errorf("invalid amount %q: want a whole number of blocks or a size with a unit (4GiB)", s)
	}
	b, err := units.ParseBytes(s)
	if err != nil {
		return 0, 0, fmt.Errorf("invalid amount: %w", err)
	}
	if b == 0 {
		return 0, 0, fmt.Errorf("the amount must be positive, got %q", s)
	}
	return b, 0, nil
}

// takeMemRun holds the memory until ctx is done or o.For has passed since
// it was held. When ctx is cancelled by a signal it still releases the
// memory (or stops taking it) and returns nil; run then exits with the
// signal's status.
func takeMemRun(ctx context.Context, o *TakeMemOptions) error {
	if o.List {
		return takeMemList(ctx, o)
	}
	stdout := o.IO.Out
	bytes, blocks, err := takeMemAmount(o.Amount)
	if err != nil {
		return usage(err)
	}
	// what says what is held: "20 linear blocks = 2.98 GiB" or "4.00 GiB";
	// blocksNote adds the blocks to the size in the out-of-memory line.
	what, blocksNote := units.Bytes(bytes), ""
	if blocks > 0 {
		n := fmt.Sprintf("%d linear blocks", blocks)
		if blocks == 1 {
			n = "1 linear block"
		}
		what, blocksNote = n+" = "+what, " ("+n+")"
	}
	if o.Busy && bytes < memhog.BusyMinBytes {
		return usagef("--busy needs at least %s held (one Linear(2000→2000) layer and its input), got %s",
			units.Bytes(memhog.BusyMinBytes), units.Bytes(bytes))
	}
	dev, warning, err := device.Parse(o.Device, openLedger(ctx, o.IO))
	if err != nil {
		return usagef("--device: %w", err)
	}
	defer dev.Close()
	if warning != "" {
		fmt.Fprintf(stdout, "warning: %s\n", warning)
	}
	before, _, err := dev.MemInfo()
	if err != nil {
		return fmt.Errorf("reading the free memory of %s: %w", dev.Name(), err)
	}
	// --for counts from when the memory is held: writing gigabytes of
	// host memory takes seconds.
	holdCtx, release := context.WithCancel(ctx)
	defer release()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	err = memhog.Hold(holdCtx, dev, bytes, o.Busy, func(e memhog.Event) {
		switch e.Kind {
		case memhog.Holding:
			fmt.Fprintf(stdout, "holding %s on %s\n", what, dev.Name())
			if now, _, err := dev.MemInfo(); err == nil {
				fmt.Fprintf(stdout, "free on %s: %s before, %s now\n", dev.Name(), units.Bytes(before), units.Bytes(now))
			}
			if o.For > 0 {
				fmt.Fprintf(stdout, "releasing after %v or on Ctrl-C\n", o.For)
				// Armed after the lines: whoever reads "holding" sees
				// the memory held for at least --for from then on.
				afterFunc := o.afterFunc
				if afterFunc == nil {
					afterFunc = time.AfterFunc
				}
				timer = afterFunc(o.For, release)
			} else {
				fmt.Fprintln(stdout, "releasing on Ctrl-C")
			}
		case memhog.BusyPass:
			if e.Pass == 1 {
				fmt.Fprintf(stdout, "busy: a forward pass every %v; the first took %s\n", memhog.BusyInterval, units.Sig3(e.Duration.Seconds())+" s")
			}
		case memhog.Released:
			fmt.Fprintf(stdout, "released %s on %s", units.Bytes(bytes), dev.Name())
			if now, _, err := dev.MemInfo(); err == nil {
				fmt.Fprintf(stdout, "; %s free", units.Bytes(now))
			}
			fmt.Fprintln(stdout)
		}
	})
	var oom *device.OutOfMemoryError
	switch {
	case err != nil && ctx.Err() != nil:
		// Stopped by a signal while taking the memory: nothing is held,
		// and run reports the signal.
		return nil
	case errors.As(err, &oom):
		heldBy := ""
		if h := oom.HeldBy(); h != "" {
			heldBy = "; " + h
		}
		return fmt.Errorf("%s: not enough free memory: needs %s%s, %s of %s free%s",
			oom.Device, units.Bytes(oom.Requested), blocksNote, units.Bytes(oom.Free), units.Bytes(oom.Total), heldBy)
	case err != nil:
		return fmt.Errorf("holding %s on %s: %w", what, dev.Name(), err)
	}
	return nil
}

// takeMemList writes the holders of the simulated device's ledger: a line
// naming the ledger, the total held and what that leaves free on the
// device of --device, then one line per holder.
func takeMemList(ctx context.Context, o *TakeMemOptions) error {
	ledger := openLedger(ctx, o.IO)
	dev, _, err := device.Parse(o.Device, ledger)
	if err != nil {
		return usagef("--device: %w", err)
	}
	defer dev.Close()
	if dev.Caps().Kind != device.KindSim {
		return usagef("--list lists the simulated device's holders; --device %s is not a simulated device", o.Device)
	}
	entries, err := ledger.Entries()
	if err != nil {
		return fmt.Errorf("listing the holders of %s: %w", dev.Name(), err)
	}
	var held int64
	for _, e := range entries {
		held += min(e.Bytes, math.MaxInt64-held) // saturating: entries are not negative
	}
	capacity := dev.Stats().TotalBytes // a simulated device's capacity, held in its meter
	free := units.Bytes(max(capacity-held, 0)) + " of " + units.Bytes(capacity) + " free"
	w := o.IO.Out
	switch len(entries) {
	case 0:
		fmt.Fprintf(w, "ledger %s: no holders; %s has %s\n", ledger.Path(), dev.Name(), free)
		return nil
	case 1:
		fmt.Fprintf(w, "ledger %s: 1 holder, %s held; %s has %s\n", ledger.Path(), units.Bytes(held), dev.Name(), free)
	default:
		fmt.Fprintf(w, "ledger %s: %d holders, %s held; %s has %s\n", ledger.Path(), len(entries), units.Bytes(held), dev.Name(), free)
	}
	for _, e := range entries {
		label := ""
		if e.Label != "" {
			label = ": " + termsafe.String(e.Label) // written by another process
		}
		fmt.Fprintf(w, "pid %d (%s) holds %s%s\n", e.PID, e.User, units.Bytes(e.Bytes), label)
	}
	return nil
}
