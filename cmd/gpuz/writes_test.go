package main

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gpuz/internal/device"
)

// TestWriteFileReplacesWhole: writeFile puts the new contents in place
// only once they are complete. A write that fails halfway leaves the old
// file as it was (it used to be truncated and half written) and no
// temporary file; one that succeeds keeps the old file's permissions,
// writes through a symbolic link without replacing it, and writes a device
// in place (never renaming over /dev/null).
func TestWriteFileReplacesWhole(t *testing.T) {
	failing := func(w io.Writer) error {
		io.WriteString(w, "half of the new")
		return errors.New("disk full")
	}
	succeeding := func(w io.Writer) error {
		_, err := io.WriteString(w, "new\n")
		return err
	}
	for _, tc := range []struct {
		name  string
		old   bool // an old file "old\n", mode 0600
		link  bool // path is a symbolic link to the file
		write func(io.Writer) error
		want  string // the file's contents afterwards
	}{
		{"failure keeps the old file", true, false, failing, "old\n"},
		{"failure makes no new file", false, false, failing, ""},
		{"failure through a link", true, true, failing, "old\n"},
		{"success replaces the old file", true, false, succeeding, "new\n"},
		{"success through a link", true, true, succeeding, "new\n"},
		{"success makes a new file", false, false, succeeding, "new\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "results.json")
			path := file
			if tc.old {
				if err := os.WriteFile(file, []byte("old\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.link {
				path = filepath.Join(dir, "link.json")
				if err := os.Symlink("results.json", path); err != nil {
					t.Fatal(err)
				}
			}
			err := writeFile(path, "results", tc.write)
			if (err != nil) != (tc.write == nil || strings.HasPrefix(tc.name, "failure")) {
				t.Errorf("error %v", err)
			}
			data, rerr := os.ReadFile(file)
			switch {
			case tc.want == "" && !errors.Is(rerr, fs.ErrNotExist):
				t.Errorf("%s exists (%q, %v), want none", file, data, rerr)
			case tc.want != "" && string(data) != tc.want:
				t.Errorf("%s holds %q (%v), want %q", file, data, rerr, tc.want)
			}
			if fi, err := os.Stat(file); err == nil && tc.old && fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want the old file's 0600", fi.Mode().Perm())
			}
			if tc.link {
				if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
					t.Errorf("the link was replaced: %v, %v", fi.Mode(), err)
				}
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if e.Name() != "results.json" && e.Name() != "link.json" {
					t.Errorf("left behind: %s", e.Name())
				}
			}
		})
	}
	if err := writeFile("/dev/null", "results", succeeding); err != nil {
		t.Errorf("writing /dev/null: %v", err)
	}
	if fi, err := os.Stat("/dev/null"); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is no longer a device: %v, %v", fi.Mode(), err)
	}
}

// TestFailedWritesKeepOldFiles runs gpuz under a file size limit of one
// block (sh's ulimit -f: 512 B under dash, 1 KiB under bash), which every
// output exceeds: --json, --bench-out, --cpuprofile and plot -o each fail
// with status 1 and leave the user's old file as it was and nothing else.
// They used to leave the first block of the new file in its place.
func TestFailedWritesKeepOldFiles(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	ledger := filepath.Join(t.TempDir(), "ledger")
	run := []string{"linear", "train", "cpu,cache", "--scale", "small", "--device", "sim:1GiB", "--threads", "1"}
	for _, tc := range []struct {
		name string
		args func(out string) []string
		want string
	}{
		{"json", func(out string) []string { return append(run, "--json", out) }, "writing results to "},
		{"bench-out", func(out string) []string { return append(run, "--bench-out", out) }, "writing benchmark lines to "},
		{"cpuprofile", func(out string) []string { return append(run, "--cpuprofile", out) }, "writing the CPU profile to "},
		{"plot", func(out string) []string {
			return []string{"plot", filepath.Join(plotFixtures, "run.json"), "-o", out + ".svg"}
		}, "writing the plot to "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			args := tc.args(out)
			if tc.name == "plot" {
				out += ".svg"
			}
			if err := os.WriteFile(out, []byte("ok\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("sh", append([]string{"-c", `ulimit -f 1 && exec "$0" "$@"`, gpuzBinary}, args...)...)
			cmd.Env = append(os.Environ(), device.LedgerEnv+"="+ledger)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			// The error names the user's file, not the temporary one.
			msg := stderr.String()
			if code := exitCode(err); code != exitFailure || !strings.Contains(msg, tc.want+out+": ") ||
				!strings.Contains(msg, "write "+out+": file too large") || strings.Count(msg, "\n") != 1 {
				t.Errorf("status %d, stderr %q; want %d and one line: %q … %q", code, msg, exitFailure, tc.want+out, "write "+out+": file too large")
			}
			if data, err := os.ReadFile(out); err != nil || string(data) != "ok\n" {
				t.Errorf("the old file holds %d bytes %.40q (%v), want \"ok\\n\"", len(data), data, err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("files left behind: %v", entries)
			}
		})
	}
}

// TestTakeMemOutputError runs take-mem with standard output on /dev/full:
// it still holds and releases the memory, then reports that its lines
// could not be written, status 1, as the other commands do. It exited 0.
func TestTakeMemOutputError(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer full.Close()
	ledger := filepath.Join(t.TempDir(), "ledger")
	cmd := exec.Command(gpuzBinary, "take-mem", "1MiB", "--device", "sim:1GiB", "--for", "1ms")
	cmd.Env = append(os.Environ(), device.LedgerEnv+"="+ledger)
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = full, &stderr
	code := exitCode(cmd.Run())
	if want := "gpuz: writing to standard output: write /dev/stdout: no space left on device\n"; code != exitFailure || stderr.String() != want {
		t.Errorf("status %d, stderr %q; want %d and %q", code, stderr.String(), exitFailure, want)
	}
	if entries, err := device.OpenLedger(ledger).Entries(); err != nil || len(entries) != 0 {
		t.Errorf("the ledger holds %+v (%v) after take-mem, want nothing", entries, err)
	}
}
