// Command gpuz measures, side by side, three ways to train or run a model
// that does not fit a small GPU: everything on the GPU (cuda), a window of
// the model's blocks on the GPU with the rest paged in from host memory
// (cache), and the CPU (cpu).
//
// Usage:
//
//	gpuz MODEL train|eval [MODES] [flags]
//	gpuz plan MODEL train|eval [MODES] [flags]
//	gpuz take-mem N|SIZE [--device D] [--for DURATION] [--busy]
//	gpuz devices
//	gpuz selftest [--device D]
//	gpuz version
//
// MODEL is a workload: linear (12 blocks of 10 × Linear(2000→2000) +
// LeakyReLU), resnet (24 blocks of 5×5 convolutions nested in 12 residual
// levels, on 512×512 images) or attention (a 12-layer transformer decoder).
// MODES is a comma list of cuda, cache and cpu (gpu is accepted for cuda);
// the default is all three. Each mode prints one line per epoch, and the run
// ends with an Analyze table: mean, spread and first (cold) epoch time per
// mode, speed relative to cpu, peak device memory, bytes copied each way per
// epoch, and status (ok, OOM with what was needed and free, unavailable or
// skipped with the reason, interrupted).
//
// The cuda and cache modes run on --device: a CUDA GPU, or without one the
// simulated GPU sim:SIZE (default 8GiB), whose every copy is real and
// counted and whose times are host times, labelled sim. Cache mode pages
// blocks by --policy window (DictCache's: at most --win-size blocks) or auto
// (window from free memory, prefetch, optimizer on --optimizer-on). plan
// prints the memory each mode and policy needs without allocating it.
// take-mem, run in a second shell, holds device memory until interrupted.
// devices lists the devices with their memory, copy rates and SGEMM speed;
// selftest checks a device's kernels and training steps against the host
// (the GPU build, make cuda, adds the CUDA device: see docs/gpu.md).
//
// Examples:
//
//	gpuz linear train cuda,cache,cpu
//	gpuz take-mem 20          # in a second shell, then run the first again
//	gpuz linear train cpu --scale small
//	gpuz plan linear train --device sim:4GiB
//
// Exit status: 0 when the run completes (modes that could not run are
// reported in the table), 1 when the run itself fails, 2 for bad input,
// 130 when interrupted (the table of what completed is still printed).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"gpuz/internal/bench"
)

func main() {
	reexecForBLAS()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// reexecForBLAS re-executes gpuz with the environment settings the BLAS
// reads only when it loads (bench.BLASEnv), unless the user set them. It
// returns, and gpuz runs without them, only if the re-execution fails.
func reexecForBLAS() {
	var missing []string
	for _, kv := range bench.BLASEnv() {
		name, _, _ := strings.Cut(kv, "=")
		if _, set := os.LookupEnv(name); !set {
			missing = append(missing, kv)
		}
	}
	if len(missing) == 0 {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	syscall.Exec(exe, os.Args, append(os.Environ(), missing...))
}

// Exit statuses.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitInterrupted = 130
)

// run executes the command line args and returns the exit status. Every
// error is reported as one line on stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "gpuz: %v\n", err)
	var rf *runFailure
	switch {
	case errors.Is(err, errInterrupted):
		return exitInterrupted
	case errors.As(err, &rf):
		return exitFailure
	default:
		// Anything else was found before the run started: a bad command,
		// argument or flag.
		return exitUsage
	}
}

// runFailure marks an error that happened while running, as opposed to bad
// input.
type runFailure struct{ err error }

func (e *runFailure) Error() string { return e.err.Error() }
func (e *runFailure) Unwrap() error { return e.err }

// errInterrupted reports a run stopped by a signal after printing what it
// completed.
var errInterrupted = errors.New("interrupted; the results above cover what completed")
