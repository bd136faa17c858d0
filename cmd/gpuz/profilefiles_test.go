package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"gpuz/internal/perfmodel"
)

// TestProfileFilesNotRegular gives every way of naming a profile file
// (--host-profile FILE, --device sim:FILE, and the calibrated profile fit
// reads from the configuration directory) a device, a link to a device, a
// named pipe, a directory and a file larger than any profile: each is
// refused before a byte is read, one line naming the path and what it is,
// status 2 (status 1 for the calibrated profile, which the user did not
// name on the command line). /dev/zero was read until the runtime crashed
// with a stack trace; a pipe blocked, deaf to SIGINT.
func TestProfileFilesNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo, zero, large := filepath.Join(dir, "fifo.json"), filepath.Join(dir, "zero.json"), filepath.Join(dir, "large.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	drainFIFO(t, fifo)
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(large, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(large, perfmodel.MaxProfileBytes+1); err != nil { // sparse
		t.Fatal(err)
	}
	files := []struct{ name, path, want string }{
		{"endless device", "/dev/zero", "/dev/zero is a device, not a regular file"},
		{"empty device", "/dev/null", "/dev/null is a device, not a regular file"},
		{"link to a device", zero, zero + " is a device, not a regular file"},
		{"pipe", fifo, fifo + " is a named pipe, not a regular file"},
		{"directory", dir + "/", dir + "/ is a directory, not a regular file"},
		{"larger than a profile", large, "more than the 1.00 MiB gpuz reads"},
	}
	for _, f := range files {
		for _, tc := range []struct {
			name string
			args []string
		}{
			{"--host-profile", []string{"plan", "linear", "train", "cpu", "--scale", "small", "--host-profile", f.path}},
			{"--device sim:FILE", []string{"plan", "linear", "train", "cuda", "--scale", "small", "--device", "sim:" + f.path}},
		} {
			t.Run(tc.name+"/"+f.name, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				code := run(context.Background(), tc.args, &stdout, &stderr)
				lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
				if code != exitUsage || len(lines) != 1 || !strings.Contains(lines[0], f.want) {
					t.Errorf("gpuz %q: status %d, stderr %q; want %d and one line with %q", tc.args, code, stderr.String(), exitUsage, f.want)
				}
			})
		}
		t.Run("calibrated/"+f.name, func(t *testing.T) {
			config := t.TempDir()
			t.Setenv("XDG_CONFIG_HOME", config)
			if err := os.Mkdir(filepath.Join(config, "gpuz"), 0o755); err != nil {
				t.Fatal(err)
			}
			saved := filepath.Join(config, "gpuz", "host-profile.json")
			if err := os.Symlink(strings.TrimSuffix(f.path, "/"), saved); err != nil {
				t.Fatal(err)
			}
			args := []string{"fit", "linear", "train", "--scale", "small", "--device", "sim:64MiB"}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), args, &stdout, &stderr)
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			want := strings.TrimPrefix(f.want, f.path)
			if code != exitFailure || len(lines) != 1 || !strings.Contains(lines[0], "reading the calibrated host profile") || !strings.Contains(lines[0], want) {
				t.Errorf("gpuz %q with %s linked to %s: status %d, stderr %q; want %d and one line with %q", args, saved, f.path, code, stderr.String(), exitFailure, want)
			}
		})
	}
}

// failingWriter fails every write, as standard output on /dev/full does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// TestCalibrateWritesProfileFirst: with standard output failing
// (calibrate > /dev/full) the measured profile is still written, and the
// command fails on the report. The report used to come first, and its
// failure lost the profile.
func TestCalibrateWritesProfileFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "host.json")
	o := &CalibrateOptions{IO: newIOStreams(failingWriter{}, &bytes.Buffer{}), Device: "cpu", Output: path, Threads: 1, Rounds: 1,
		measure: syntheticCalibration, heldOut: syntheticHeldOut}
	err := calibrateRun(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("calibrate with a failing standard output: %v; want the write's error", err)
	}
	if _, err := perfmodel.LoadProfile(path); err != nil {
		t.Errorf("the profile was not written: %v", err)
	}
}
