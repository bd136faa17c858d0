package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// drainFIFO opens the named pipe at path for reading and writing (which on
// Linux neither blocks nor waits for a writer) and reads it until the test
// ends, so that a gpuz that wrongly writes into the pipe completes and
// fails the test rather than blocking it.
func drainFIFO(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, f)
	t.Cleanup(func() { f.Close() })
}

// TestOutputPathsNotRegular gives every output flag of every command a
// named pipe, a symbolic link to one and a socket: each is refused before
// anything runs, with one line naming what the path is, status 2. A pipe
// nobody read blocked gpuz for ever after the run (and the first signal
// was ignored, the process stuck in open). Devices (/dev/null) are still
// written, as before.
func TestOutputPathsNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo, link, sock := filepath.Join(dir, "fifo"), filepath.Join(dir, "link.json"), filepath.Join(dir, "sock")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	drainFIFO(t, fifo)
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	results := writeResults(t, map[string]string{"good.txt": benchLine + "1 sec/op\n"})["good.txt"]
	run1 := []string{"linear", "train", "cpu", "--scale", "small", "--epochs", "2"}
	for _, tc := range []struct {
		name string
		args func(path string) []string
	}{
		{"--json", func(p string) []string { return append(run1, "--json", p) }},
		{"--bench-out", func(p string) []string { return append(run1, "--bench-out", p) }},
		{"--plot", func(p string) []string { return append(run1, "--plot", p) }},
		{"--cpuprofile", func(p string) []string { return append(run1, "--cpuprofile", p) }},
		{"sweep --json", func(p string) []string { return append(run1, "--epochs", "2,3", "--json", p) }},
		{"plan --json", func(p string) []string { return []string{"plan", "linear", "train", "--scale", "small", "--json", p} }},
		{"plot -o", func(p string) []string { return []string{"plot", results, "-o", p} }},
		{"fit --json", func(p string) []string {
			return []string{"fit", "linear", "train", "--scale", "small", "--device", "sim:64MiB", "--host-profile", "cpu-i7-13700h", "--json", p}
		}},
		{"fit --cpuprofile", func(p string) []string {
			return []string{"fit", "linear", "train", "--scale", "small", "--device", "sim:64MiB", "--host-profile", "cpu-i7-13700h", "--cpuprofile", p}
		}},
	} {
		for _, path := range []struct{ name, path, want string }{
			{"pipe", fifo, "is a named pipe, not a regular file"},
			{"link to a pipe", link, "is a named pipe, not a regular file"},
			{"socket", sock, "is a socket, not a regular file"},
		} {
			t.Run(tc.name+"/"+path.name, func(t *testing.T) {
				args := tc.args(path.path)
				var stdout, stderr bytes.Buffer
				code := run(context.Background(), args, &stdout, &stderr)
				lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
				if code != exitUsage || len(lines) != 1 || !strings.Contains(lines[0], path.want) || !strings.Contains(lines[0], path.path) {
					t.Errorf("gpuz %q: status %d, stderr %q; want %d and one line with %q", args, code, stderr.String(), exitUsage, path.want)
				}
				if stdout.Len() != 0 {
					t.Errorf("gpuz %q ran: %.200q", args, stdout.String())
				}
			})
		}
	}
	t.Run("calibrate -o", func(t *testing.T) {
		for _, p := range []string{fifo, link, sock} {
			o := &CalibrateOptions{IO: newIOStreams(&bytes.Buffer{}, &bytes.Buffer{}), Device: "cpu", Output: p, Threads: 1, Rounds: 1,
				measure: syntheticCalibration, heldOut: syntheticHeldOut}
			err := calibrateRun(context.Background(), o)
			var u *usageError
			if err == nil || !strings.Contains(err.Error(), "not a regular file") || !errors.As(err, &u) {
				t.Errorf("calibrate -o %s: %v; want a usage error saying it is not a regular file", p, err)
			}
		}
	})
	t.Run("devices are written", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"plan", "linear", "train", "--scale", "small", "--json", "/dev/null"}, &stdout, &stderr); code != exitOK {
			t.Errorf("plan --json /dev/null: status %d, stderr %q", code, stderr.String())
		}
	})
}

// TestCreateAtomicRefusesPipes: a named pipe put at an output path after
// the up-front check is refused when the file is opened for the write, at
// once, reader or not (the open is non-blocking: without a reader it
// would otherwise wait for one for ever). A device is written in place.
func TestCreateAtomicRefusesPipes(t *testing.T) {
	dir := t.TempDir()
	lonely, read := filepath.Join(dir, "lonely"), filepath.Join(dir, "read")
	for _, p := range []string{lonely, read} {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	drainFIFO(t, read)
	for _, p := range []string{read, lonely} {
		done := make(chan error, 1)
		go func() {
			done <- writeFile(p, "the test's output", func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err })
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Minute): // a ceiling for a hang, not a latency
			t.Fatalf("writeFile(%s) blocked: the open waits for a reader", p)
		}
		if err == nil || !strings.Contains(err.Error(), p+" is a named pipe, not a regular file") {
			t.Errorf("writeFile(%s): %v; want it refused as a named pipe", p, err)
		}
	}
	if err := writeFile("/dev/null", "the test's output", func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }); err != nil {
		t.Errorf("writeFile(/dev/null): %v", err)
	}
}

// TestOutputDirectoryChecked: an existing file that can be written, in a
// directory where the write's temporary file cannot be created, is
// refused up front (status 2, nothing run), as a new file there is. It
// passed the check, and the run completed and then failed to write its
// results (status 1, the results lost).
func TestOutputDirectoryChecked(t *testing.T) {
	type row struct{ name, path string }
	// /proc/self/comm is a regular file its process may write; no file can
	// be created beside it.
	rows := []row{{"proc file", "/proc/self/comm"}}
	if os.Geteuid() != 0 { // root creates files in a read-only directory
		dir := filepath.Join(t.TempDir(), "ro")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "r.json"), []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		rows = append(rows, row{"read-only directory", filepath.Join(dir, "r.json")})
	}
	for _, r := range rows {
		for _, flag := range []string{"--json", "--bench-out", "--cpuprofile"} {
			t.Run(r.name+"/"+flag, func(t *testing.T) {
				args := []string{"linear", "train", "cpu", "--scale", "small", "--epochs", "2", flag, r.path}
				var stdout, stderr bytes.Buffer
				code := run(context.Background(), args, &stdout, &stderr)
				lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
				want := "creating a temporary file beside " + r.path
				if code != exitUsage || len(lines) != 1 || !strings.Contains(lines[0], want) {
					t.Errorf("gpuz %q: status %d, stderr %q; want %d and one line with %q", args, code, stderr.String(), exitUsage, want)
				}
				if stdout.Len() != 0 {
					t.Errorf("gpuz %q ran: %.200q", args, stdout.String())
				}
			})
		}
	}
}
