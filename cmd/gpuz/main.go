// Command gpuz measures, side by side, ways to train or run a model that
// does not fit a small GPU: everything on the GPU (cuda), a window of the
// model's blocks on the GPU with the rest paged in from host memory
// (cache), every block in managed memory that the driver pages (managed),
// each block on the GPU, on the host or paged as --place says (hybrid), and
// the CPU (cpu).
//
// Usage:
//
//	gpuz MODEL train|eval [MODES] [flags]
//	gpuz plan MODEL train|eval [MODES] [flags]
//	gpuz fit MODEL train|eval [--device D] [--take N|SIZE] [--margin PCT] [--verify K]
//	gpuz take-mem N|SIZE [--device D] [--for DURATION] [--busy]
//	gpuz compare A B
//	gpuz plot RESULTS -o FILE.svg|FILE.png
//	gpuz calibrate [--device D] [-o FILE]
//	gpuz devices
//	gpuz selftest [--device D]
//	gpuz version
//
// MODEL is a workload: linear (12 blocks of 10 × Linear(2000→2000) +
// LeakyReLU), resnet (24 blocks of 5×5 convolutions nested in 12 residual
// levels, on 512×512 images), attention (a 12-layer transformer decoder) or
// llm (your model: a Llama-family or GPT-2 decoder from a Hugging Face
// config.json, --model a preset, a file or a snapshot directory).
// MODES is a comma list of cuda, cache, managed, hybrid and cpu (gpu is
// accepted for cuda); the default is cuda,cache,cpu. Each mode prints one line per epoch, and the run
// ends with an Analyze table: mean, spread and first (cold) epoch time per
// mode, speed relative to cpu, peak device memory, bytes copied each way per
// epoch, and status (ok, OOM with what was needed and free, unavailable or
// skipped with the reason, interrupted, diverged at an epoch and batch).
//
// The cuda and cache modes run on --device: a CUDA GPU, or without one the
// simulated GPU sim:SIZE (default 8GiB), whose every copy is real and
// counted and whose times are host times, labelled sim. Cache mode pages
// blocks by --policy window (DictCache's: at most --win-size blocks) or auto
// (window from free memory, prefetch, optimizer on --optimizer-on). plan
// prints the memory each mode and policy needs without allocating it; fit
// searches the configurations that fit the free memory and ranks them by
// the model's predicted time.
// take-mem, run in a second shell, holds device memory until interrupted;
// --take holds it from the run itself. A comma list in --take, --win-size,
// --policy, --optimizer-on, --recompute, --precision or a size flag runs a
// sweep over the cross product, one table row per configuration and mode.
// compare reads two runs' --bench-out (Go benchmark format) or --json files
// and prints each configuration's median epoch times and their change with
// a significance test. plot draws a run's or a sweep's --json file as SVG
// or PNG (a run's --plot FILE draws its own results).
// calibrate fits the performance model to this machine's measured kernels
// and copies and writes its profile (--host-profile FILE, --device
// sim:FILE).
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
// Output: the header, the epoch lines, the table and any warning go to
// standard output, except with --json -, when standard output holds only
// the JSON and the rest goes to standard error. Errors are one line on
// standard error.
//
// Exit status:
//
//	0    every requested mode completed (status ok)
//	1    a failure: the run itself, a device, a write of --json or --cpuprofile,
//	     an address-space limit (ulimit -v) below what gpuz or the run needs
//	2    bad input (unknown command, task, mode, flag or value, an output path
//	     that cannot be written): one line on standard error, nothing run
//	3    the run completed but some mode did not (OOM, unavailable, skipped,
//	     failed, diverged); the full table is printed; or fit found no
//	     configuration that fits (one line naming the smallest need)
//	129  stopped by SIGHUP, 130 by SIGINT (Ctrl-C), 143 by SIGTERM: what
//	     completed is kept (a run prints the table of it); a second signal
//	     exits at once with the status of that signal
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"gpuz/internal/bench"
	"gpuz/internal/fit"
	"gpuz/internal/sysinfo"
)

func main() {
	started := time.Now()
	reexecForBLAS()
	if err := checkStartAddressSpace(runtime.GOMAXPROCS(0)); err != nil {
		fmt.Fprintf(os.Stderr, "gpuz: %v\n", err)
		os.Exit(exitFailure)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	stopSignals := cancelOnSignal(cancel, os.Stderr)
	code := runCommandLine(ctx, os.Args, processStart(started), os.Stdout, os.Stderr)
	stopSignals()
	os.Exit(code)
}

// cancelOnSignal cancels the context on the first SIGINT, SIGTERM or SIGHUP,
// with a *signalError naming it as the cause, so that the command stops,
// keeps what completed and exits with that signal's status. A second signal
// exits at once with the second signal's status, after one line on stderr.
// signal.Notify on a channel (not signal.NotifyContext) is what tells which
// signal came. The returned function stops the watching.
func cancelOnSignal(cancel context.CancelCauseFunc, stderr io.Writer) func() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, stopSignals...)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			cancel(&signalError{sig})
		case <-done:
			return
		}
		select {
		case sig := <-sigs:
			fmt.Fprintf(stderr, "gpuz: %s again: exiting at once\n", signalName(sig))
			os.Exit(signalStatus(sig))
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
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

// processStart is when this process started, as the system says
// (sysinfo.ProcessStart: before the loader, the runtime and the
// re-execution of reexecForBLAS), or main's start, mainStarted, where it
// does not.
func processStart(mainStarted time.Time) time.Time {
	if t, ok := sysinfo.ProcessStart(); ok {
		return t
	}
	return mainStarted
}

// Exit statuses; a signal's is 128 plus its number (signalStatus).
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitIncomplete  = 3
	exitInterrupted = 130 // SIGINT's, and a cancelled context's without a signal
)

// stopSignals are the signals that stop every command.
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// run executes gpuz with the arguments args, the words after the program's
// name, as the command line "gpuz ARGS…" (runCommandLine) of a process
// that starts now, and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runCommandLine(ctx, append([]string{"gpuz"}, args...), time.Now(), stdout, stderr)
}

// runCommandLine executes the command line argv, the program's name first
// as in os.Args, of the process that started at started, and returns the
// exit status. The command line is the one the results record and the
// simulated device's ledger entries name (IOStreams.CommandLine); main
// passes os.Args, which nothing else reads. A run counts the time from
// started to its first epoch (IOStreams.Started).
// Every error is reported as one line on stderr (two where a run was
// interrupted and a write failed as well). Usage errors exit 2, errors
// from an interrupted command the signal's status, a run with a mode that
// did not complete 3 (as a fit that found nothing that fits), and every
// other error 1.
func runCommandLine(ctx context.Context, argv []string, started time.Time, stdout, stderr io.Writer) int {
	ios := newIOStreams(stdout, stderr)
	ios.CommandLine, ios.Started = argv, started
	root := newRootCmdOn(ios)
	root.SetArgs(argv[min(1, len(argv)):])
	err := root.ExecuteContext(ctx)
	var usage *usageError
	if errors.As(err, &usage) {
		fmt.Fprintf(stderr, "gpuz: %v\n", err)
		return exitUsage
	}
	// A signal wins over whatever the command returned: it stopped it.
	if ctx.Err() != nil {
		code, name := exitInterrupted, "interrupt"
		var sig *signalError
		if errors.As(context.Cause(ctx), &sig) {
			code, name = signalStatus(sig.sig), signalName(sig.sig)
		}
		switch {
		case err == nil || errors.Is(err, errInterrupted):
			fmt.Fprintf(stderr, "gpuz: stopped by %s; what completed is above\n", name)
		default:
			fmt.Fprintf(stderr, "gpuz: stopped by %s: %v\n", name, err)
		}
		return code
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "gpuz: %v\n", err)
	var inc *incompleteError
	var none *fit.NothingFitsError
	if errors.As(err, &inc) || errors.As(err, &none) {
		return exitIncomplete
	}
	return exitFailure
}

// usageError marks bad input: an unknown command, argument or flag, a value
// out of range, an output path that cannot be written. It is found before
// anything runs and exits with status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usage wraps err, if not nil, as a usageError.
func usage(err error) error {
	if err == nil {
		return nil
	}
	var u *usageError
	if errors.As(err, &u) {
		return err
	}
	return &usageError{err}
}

// usagef is fmt.Errorf as a usageError.
func usagef(format string, a ...any) error { return &usageError{fmt.Errorf(format, a...)} }

// incompleteError reports a run that completed with modes that did not
// (status not ok); it exits with status 3.
type incompleteError struct {
	// Modes are the modes that did not complete with their status.
	Modes []string
	Total int
}

func (e *incompleteError) Error() string {
	return fmt.Sprintf("%d of %d modes did not complete: %s; the table above says why", len(e.Modes), e.Total, strings.Join(e.Modes, ", "))
}

// signalError is the cause of a context cancelled by a signal.
type signalError struct{ sig os.Signal }

func (e *signalError) Error() string { return "stopped by " + signalName(e.sig) }

// signalStatus is the exit status for a process stopped by sig: 128 plus
// its number, as a shell reports it (SIGHUP 129, SIGINT 130, SIGTERM 143).
func signalStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return exitInterrupted
}

// signalName names sig as kill(1) does: SIGINT, SIGTERM, SIGHUP.
func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return sig.String()
}

// errInterrupted reports a run stopped by a signal after printing what it
// completed.
var errInterrupted = errors.New("interrupted; the results above cover what completed")
