package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gpuz/internal/device"
)

// TestLedgerFaultStatus runs commands on a simulated device whose ledger
// is corrupt or locked by another process. A fault of the ledger is not
// bad input (status 2, "--device: …", as it was, even for Ctrl-C while
// waiting for the lock): a corrupt ledger or a lock held past the wait
// exits 1 with one line naming the ledger, a signal during the wait exits
// with the signal's status, and a run of the cpu mode alone, which needs
// no simulated device, runs.
func TestLedgerFaultStatus(t *testing.T) {
	defer func(old time.Duration) { ledgerLockTimeout = old }(ledgerLockTimeout)
	ledgerLockTimeout = 500 * time.Millisecond
	small := []string{"--scale", "small", "--epochs", "2", "--samples", "30", "--batch", "30"}
	for _, tt := range []struct {
		name   string
		ledger string // "corrupt" or "locked"
		args   []string
		signal bool // SIGINT after a second, while the lock is awaited
		code   int
		stderr string // in the one line on stderr
	}{
		{"corrupt run", "corrupt", []string{"linear", "train"}, false, exitFailure, "line 2"},
		{"corrupt cpu run", "corrupt", []string{"linear", "train", "cpu"}, false, exitOK, ""},
		{"corrupt plan", "corrupt", []string{"plan", "linear", "train"}, false, exitFailure, "line 2"},
		{"corrupt cpu plan", "corrupt", []string{"plan", "linear", "train", "cpu"}, false, exitOK, ""},
		{"corrupt take-mem", "corrupt", []string{"take-mem", "1MiB", "--device", "sim", "--for", "1ms"}, false, exitFailure, "line 2"},
		{"locked run", "locked", []string{"linear", "train", "cache"}, false, exitFailure, device.ErrLedgerLocked.Error()},
		{"locked cpu run", "locked", []string{"linear", "train", "cpu"}, false, exitOK, ""},
		{"interrupted run", "locked", []string{"linear", "train", "cuda,cpu"}, true, exitInterrupted, "stopped by SIGINT"},
		{"interrupted take-mem", "locked", []string{"take-mem", "1MiB", "--device", "sim"}, true, exitInterrupted, "stopped by SIGINT"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger")
			t.Setenv(device.LedgerEnv, path)
			switch tt.ledger {
			case "corrupt":
				if err := os.WriteFile(path, []byte("# gpuz simulated-device ledger v1: pid, start, holder, bytes, label\ngarbage\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			case "locked":
				f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			if tt.signal {
				ledgerLockTimeout = time.Minute
				defer func() { ledgerLockTimeout = 500 * time.Millisecond }()
				time.AfterFunc(time.Second, func() { cancel(&signalError{syscall.SIGINT}) })
			}
			args := tt.args
			if args[0] != "take-mem" {
				args = append(append([]string(nil), args...), small...)
			}
			var stdout, stderr bytes.Buffer
			start := time.Now()
			code := run(ctx, args, &stdout, &stderr)
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			last := lines[len(lines)-1]
			if code != tt.code || (tt.stderr != "" && !strings.Contains(last, tt.stderr)) || strings.Contains(stderr.String(), "--device:") {
				t.Errorf("gpuz %s: exit status %d, stderr %q; want %d and a line with %q", strings.Join(args, " "), code, stderr.String(), tt.code, tt.stderr)
			}
			if tt.code == exitFailure && !strings.Contains(last, path) {
				t.Errorf("gpuz %s: stderr %q does not name the ledger %s", strings.Join(args, " "), last, path)
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("gpuz %s took %v", strings.Join(args, " "), took)
			}
		})
	}
}
