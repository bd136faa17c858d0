package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"gpuz/internal/device"
)

// TestTakeMemRun runs take-mem in-process, with memory already taken by
// another holder of the ledger: when it does not fit, the error names that
// holder (pid, user, bytes), not only what is free.
func TestTakeMemRun(t *testing.T) {
	path := privateLedger(t)
	other := device.OpenLedger(path)
	if err := other.Set(512<<20, "another holder"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{
			args: []string{"take-mem", "256MiB", "--device", "sim:1GiB", "--for", "1ms"},
			stdout: []string{
				"holding 256 MiB on sim:1GiB",
				"free on sim:1GiB: 512 MiB before, 256 MiB now",
				"releasing after 1ms or on Ctrl-C",
				"released 256 MiB on sim:1GiB; 512 MiB free",
			},
		},
		{
			args:   []string{"take-mem", "4", "--device", "sim:1GiB"},
			code:   exitFailure,
			stderr: fmt.Sprintf("gpuz: sim:1GiB: not enough free memory: needs 611 MiB (4 linear blocks), 512 MiB of 1.00 GiB free; held by this process (pid %d): 512 MiB\n", os.Getpid()),
		},
		{
			args: []string{"take-mem", "1", "--for", "1ms"},
			stdout: []string{"warning: " + device.AutoWarning, "holding 1 linear block = 153 MiB on sim:8GiB",
				"free on sim:8GiB: 7.50 GiB before, 7.35 GiB now"},
		},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tt.args, &stdout, &stderr)
		if code != tt.code || stderr.String() != tt.stderr {
			t.Errorf("gpuz %s: exit status %d, stderr %q; want %d, %q", strings.Join(tt.args, " "), code, stderr.String(), tt.code, tt.stderr)
		}
		rest := stdout.String() // the lines must come in order, the first first
		if len(tt.stdout) > 0 && !strings.HasPrefix(rest, tt.stdout[0]+"\n") {
			t.Errorf("gpuz %s: output does not start with %q:\n%s", strings.Join(tt.args, " "), tt.stdout[0], rest)
		}
		for _, want := range tt.stdout {
			_, after, ok := strings.Cut(rest, want+"\n")
			if !ok {
				t.Errorf("gpuz %s: output lacks %q after the lines before it:\n%s", strings.Join(tt.args, " "), want, stdout.String())
				break
			}
			rest = after
		}
		if tt.stdout == nil && stdout.Len() != 0 {
			t.Errorf("gpuz %s: output %q, want none", strings.Join(tt.args, " "), stdout.String())
		}
	}
	if entries, err := other.Entries(); err != nil || len(entries) != 1 || entries[0].Label != "another holder" {
		t.Errorf("after take-mem the ledger holds %+v, %v; want only the other holder", entries, err)
	}
}

// currentUser is the name of the user the test runs as.
func currentUser(t *testing.T) string {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}

// TestTakeMemList lists the simulated device's holders: one line per
// holder with its pid, user, bytes and label, after a line naming the
// ledger and the device's free memory. --list takes no amount and needs a
// simulated device.
func TestTakeMemList(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	t.Setenv(device.LedgerEnv, path)
	me := currentUser(t)
	for _, tt := range []struct {
		name   string
		held   []int64 // each by its own holder
		args   []string
		code   int
		stdout string // with PID and ME for this process's pid and user
		stderr string
	}{
		{name: "empty", args: []string{"take-mem", "--list", "--device", "sim:1GiB"},
			stdout: "ledger LEDGER: no holders; sim:1GiB has 1.00 GiB of 1.00 GiB free\n"},
		{name: "two holders", held: []int64{512 << 20, 1 << 20}, args: []string{"take-mem", "--list", "--device", "sim:1GiB"},
			stdout: "ledger LEDGER: 2 holders, 513 MiB held; sim:1GiB has 511 MiB of 1.00 GiB free\n" +
				"pid PID (ME) holds 512 MiB: holder 0\n" +
				"pid PID (ME) holds 1.00 MiB: holder 1\n"},
		{name: "default device", held: []int64{1 << 30}, args: []string{"take-mem", "--list"},
			stdout: "ledger LEDGER: 1 holder, 1.00 GiB held; sim:8GiB has 7.00 GiB of 8.00 GiB free\n" +
				"pid PID (ME) holds 1.00 GiB: holder 0\n"},
		{name: "amount", args: []string{"take-mem", "--list", "2"}, code: exitUsage,
			stderr: "gpuz: --list takes no amount: it lists what others hold\n"},
		{name: "cpu", args: []string{"take-mem", "--list", "--device", "cpu"}, code: exitUsage,
			stderr: "gpuz: --list lists the simulated device's holders; --device cpu is not a simulated device\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var holders []*device.Ledger
			for i, b := range tt.held {
				l := device.OpenLedger(path)
				if err := l.Set(b, fmt.Sprintf("holder %d", i)); err != nil {
					t.Fatal(err)
				}
				holders = append(holders, l)
			}
			defer func() {
				for _, l := range holders {
					l.Set(0, "")
				}
			}()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			pid := fmt.Sprint(os.Getpid())
			want := strings.NewReplacer("LEDGER", path, "PID", pid, "ME", me).Replace(tt.stdout)
			if code != tt.code || stdout.String() != want || stderr.String() != tt.stderr {
				t.Errorf("gpuz %s: exit status %d\nstdout:\n%s\nstderr: %q\nwant %d\nstdout:\n%s\nstderr: %q",
					strings.Join(tt.args, " "), code, stdout.String(), stderr.String(), tt.code, want, tt.stderr)
			}
		})
	}
}
