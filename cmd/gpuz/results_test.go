package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"gpuz/internal/report"
)

// The tests of gpuz compare's and gpuz plot's input: result files that hold
// no true epoch times.

// benchLine is a benchmark line of the small linear cpu run, its time to
// be appended: "… 1 " + "2.5 sec/op\n".
const benchLine = "BenchmarkGpuz/workload=linear/task=train/mode=cpu/device=host/scale=small 1 "

// writeResults writes files named by their name into a temporary
// directory and returns their paths by name.
func writeResults(t *testing.T, files map[string]string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	paths := map[string]string{}
	for name, content := range files {
		paths[name] = filepath.Join(dir, name)
		if err := os.WriteFile(paths[name], []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

// runJSON is a run's JSON with one cpu mode of a 1 s epoch and one of
// seconds.
func runJSON(seconds string) string {
	return `{"version": 2, "header": {"model": "linear", "task": "train", "scale": "small"}, "modes": [` +
		`{"mode": "cpu", "device": "host", "status": "ok", "epochs": [{"index": 0, "seconds": 1}, {"index": 1, "seconds": ` + seconds + `}]}]}`
}

// TestResultsBadTimes runs compare and plot on files whose epoch times are
// not times: each is refused at once, exit 2, one line naming the file and
// the line (or the mode and epoch). Before, NaN made compare loop until
// memory ran out, +Inf printed "NaN s", a negative time a negative change
// and a bar below zero, 1e308 a number of 309 digits, all with status 0.
func TestResultsBadTimes(t *testing.T) {
	p := writeResults(t, map[string]string{
		"good.txt":      benchLine + "1 sec/op\n" + benchLine + "1.1 sec/op\n",
		"nan.txt":       benchLine + "NaN sec/op\n",
		"inf.txt":       benchLine + "1 sec/op\n" + benchLine + "+Inf sec/op\n",
		"negative.txt":  benchLine + "-1 sec/op\n",
		"huge.txt":      benchLine + "1e308 sec/op\n",
		"negative.json": runJSON("-2"),
		"huge.json":     runJSON("1e308"),
	})
	svg := filepath.Join(t.TempDir(), "x.svg")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", p["nan.txt"], p["good.txt"]}, p["nan.txt"] + ":1: epoch time NaN s is not a number"},
		{[]string{"compare", p["good.txt"], p["inf.txt"]}, p["inf.txt"] + ":2: epoch time +Inf s is beyond 1e+09 s"},
		{[]string{"compare", p["negative.txt"], p["good.txt"]}, p["negative.txt"] + ":1: epoch time -1 s is negative"},
		{[]string{"compare", p["huge.txt"], p["good.txt"]}, p["huge.txt"] + ":1: epoch time 1e+308 s is beyond"},
		{[]string{"compare", p["negative.json"], p["good.txt"]}, p["negative.json"] + ": mode cpu, epoch 1: epoch time -2 s is negative"},
		{[]string{"plot", p["negative.json"], "-o", svg}, p["negative.json"] + ": mode cpu, epoch 1: epoch time -2 s is negative"},
		{[]string{"plot", p["huge.json"], "-o", svg}, p["huge.json"] + ": mode cpu, epoch 1: epoch time 1e+308 s is beyond"},
	} {
		wantUsageError(t, tc.args, tc.want)
	}
	if _, err := os.Stat(svg); err == nil {
		t.Errorf("a refused plot wrote %s", svg)
	}
}

// TestResultsNotRegular runs compare and plot on inputs that are not
// regular files or are too large: each is refused at once, before a byte
// is read, exit 2 and one line. Before, /dev/zero was read until memory
// ran out and a named pipe blocked until a writer came.
func TestResultsNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo, large := filepath.Join(dir, "fifo"), filepath.Join(dir, "large.json")
	for _, make := range []func() error{
		func() error { return syscall.Mkfifo(fifo, 0o644) },
		func() error { return os.WriteFile(large, nil, 0o644) },
		func() error { return os.Truncate(large, report.MaxResultsBytes+1) }, // sparse
	} {
		if err := make(); err != nil {
			t.Fatal(err)
		}
	}
	good := writeResults(t, map[string]string{"good.txt": benchLine + "1 sec/op\n"})["good.txt"]
	svg := filepath.Join(dir, "x.svg")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", "/dev/zero", good}, "/dev/zero is a device, not a regular file"},
		{[]string{"compare", good, fifo}, fifo + " is a named pipe, not a regular file"},
		{[]string{"compare", large, good}, "holds 256 MiB, more than the 256 MiB gpuz reads"},
		{[]string{"plot", "/dev/zero", "-o", svg}, "/dev/zero is a device, not a regular file"},
		{[]string{"plot", fifo, "-o", svg}, fifo + " is a named pipe, not a regular file"},
		{[]string{"plot", large, "-o", svg}, "more than the 256 MiB gpuz reads"},
	} {
		wantUsageError(t, tc.args, tc.want)
	}
}

// TestResultsReadYieldsToSignal: compare and plot return on a signal
// while their input is still being read (a read that never ends, as on a
// stuck network file system), writing nothing; run then exits with the
// signal's status. They used to wait for the read, which here never ends:
// the signal comes once the read has begun, and a minute is the ceiling.
func TestResultsReadYieldsToSignal(t *testing.T) {
	good := writeResults(t, map[string]string{"good.txt": benchLine + "1 sec/op\n"})["good.txt"]
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context, ios *IOStreams, read func(string) ([]byte, error)) error
	}{
		{"compare", func(ctx context.Context, ios *IOStreams, read func(string) ([]byte, error)) error {
			return compareRun(ctx, &CompareOptions{IO: ios, A: good, B: "stuck.txt", Read: read})
		}},
		{"plot", func(ctx context.Context, ios *IOStreams, read func(string) ([]byte, error)) error {
			return plotRun(ctx, &PlotOptions{IO: ios, Results: "stuck.json", Output: filepath.Join(t.TempDir(), "x.svg"), Read: read})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stuck, reading := make(chan struct{}), make(chan struct{})
			defer close(stuck)
			read := func(path string) ([]byte, error) {
				if path == good {
					return report.ReadResults(path)
				}
				close(reading)
				<-stuck
				return nil, errors.New("the read ended")
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			ios, out, errOut := testIO()
			done := make(chan error, 1)
			go func() { done <- tc.run(ctx, ios, read) }()
			<-reading
			cancel(&signalError{syscall.SIGINT})
			select {
			case err := <-done:
				if err == nil || out.Len() != 0 || errOut.Len() != 0 {
					t.Errorf("error %v, stdout %q, stderr %q; want an error and nothing written", err, out, errOut)
				}
			case <-time.After(time.Minute):
				t.Fatal("still reading a minute after the signal")
			}
		})
	}
}
