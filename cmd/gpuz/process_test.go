package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gpuz/internal/device"
	"gpuz/internal/memhog"
	"gpuz/internal/report/reporttest"
)

// The tests that run the built gpuz as a process: signals, and take-mem
// holding memory for another process to see.

// startBinary starts the built gpuz with args and a private sim ledger and
// returns it with its stdout as lines and its stderr.
func startBinary(t *testing.T, args ...string) (*exec.Cmd, *bufio.Reader, *bytes.Buffer) {
	t.Helper()
	return startOnLedger(t, filepath.Join(t.TempDir(), "ledger"), args...)
}

// gpuzOnLedger is the built gpuz with args and the sim ledger at path, a
// process that is killed when the test's context ends.
func gpuzOnLedger(t *testing.T, path string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(t.Context(), gpuzBinary, args...)
	cmd.Env = append(os.Environ(), device.LedgerEnv+"="+path)
	return cmd
}

// startOnLedger starts the built gpuz with args and the sim ledger at path,
// and returns it with its stdout as lines and its stderr; the process is
// killed when the test's context ends, and waited for.
func startOnLedger(t *testing.T, path string, args ...string) (*exec.Cmd, *bufio.Reader, *bytes.Buffer) {
	t.Helper()
	cmd := gpuzOnLedger(t, path, args...)
	out, stderr := startPiped(t, cmd)
	return cmd, out, stderr
}

// startPiped starts cmd with its stdout to be read as lines and its
// stderr kept, and waits for it when the test ends.
func startPiped(t *testing.T, cmd *exec.Cmd) (*bufio.Reader, *bytes.Buffer) {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Wait() })
	return bufio.NewReader(out), &stderr
}

// readUntil reads lines from r until one contains want, and returns them.
func readUntil(t *testing.T, r *bufio.Reader, want string) string {
	t.Helper()
	var seen strings.Builder
	for {
		line, err := r.ReadString('\n')
		seen.WriteString(line)
		if strings.Contains(line, want) {
			return seen.String()
		}
		if err != nil {
			t.Fatalf("no line with %q: %v; output:\n%s", want, err, seen.String())
		}
	}
}

// waitExit waits up to limit for cmd to exit and returns its status and
// the rest of its output.
func waitExit(t *testing.T, cmd *exec.Cmd, out *bufio.Reader, limit time.Duration) (int, string) {
	t.Helper()
	type exit struct {
		code int
		rest string
	}
	done := make(chan exit, 1)
	go func() {
		rest, _ := io.ReadAll(out) // before Wait, which closes the pipe
		done <- exit{exitCode(cmd.Wait()), string(rest)}
	}()
	select {
	case e := <-done:
		return e.code, e.rest
	case <-time.After(limit):
		t.Fatalf("gpuz did not exit within %v of the signal", limit)
	}
	return 0, ""
}

// TestSignalsStopRun sends SIGHUP to a run after its first epoch line: it
// stops, prints the table of what completed and exits 129.
func TestSignalsStopRun(t *testing.T) {
	cmd, out, stderr := startBinary(t, "linear", "train", "cpu", "--scale", "small", "--epochs", "50")
	readUntil(t, out, "train: 0")
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	code, rest := waitExit(t, cmd, out, 30*time.Second)
	if code != 129 {
		t.Errorf("status %d after SIGHUP, want 129; stderr: %s", code, stderr.String())
	}
	if row := reporttest.TableRows(rest)["cpu"]; status(row) != "interrupted [1]" || !strings.Contains(rest, "[1] cpu: interrupted: after ") {
		t.Errorf("cpu row %q, want interrupted; output:\n%s", row, rest)
	}
	if !strings.Contains(stderr.String(), "gpuz: stopped by SIGHUP") {
		t.Errorf("stderr %q, want the signal named", stderr.String())
	}
}

// signalChildEnv, set in the environment of this test binary, makes it
// signalChild instead of running the tests.
const signalChildEnv = "GPUZ_TEST_SIGNAL_CHILD"

// signalChild watches the signals as main does (cancelOnSignal), says
// "ready", and when the first signal ends its context says "cancelled"
// and blocks, as a step that does not check its context would: only the
// second signal ends it.
func signalChild() {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancelOnSignal(cancel, os.Stderr)
	fmt.Println("ready")
	<-ctx.Done()
	fmt.Println("cancelled:", context.Cause(ctx))
	select {}
}

// TestSecondSignalExitsAtOnce signals a process that watches the signals
// as gpuz does and whose work, like a long kernel call, does not stop when
// the first signal ends its context: the first ends the context (the
// command then stops where it next checks), a second exits at once with
// 130 and says so. The second signal is sent only once the first has been
// taken, so that the two cannot merge into one. (A run's setup and
// batches now stop within a step of the first signal, too soon for a
// second to be sent while one goes on: this was first tested on a run.)
func TestSecondSignalExitsAtOnce(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), signalChildEnv+"=1")
	out, stderr := startPiped(t, cmd)
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	next := func(want string) {
		t.Helper()
		if !lines.Scan() || !strings.HasPrefix(lines.Text(), want) {
			t.Fatalf("the child said %q, want %q; stderr: %s", lines.Text(), want, stderr.String())
		}
	}
	next("ready")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	next("cancelled: stopped by SIGINT")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the second SIGINT did not end the process within a minute")
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("status %d after two SIGINTs, want 130; stderr: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "gpuz: SIGINT again: exiting at once") {
		t.Errorf("stderr %q, want the second signal named", stderr.String())
	}
}

// TestSignalStatuses sends SIGTERM and SIGINT to take-mem on sim: it
// releases its memory and exits 143 and 130.
func TestSignalStatuses(t *testing.T) {
	for sig, want := range map[syscall.Signal]int{syscall.SIGTERM: 143, syscall.SIGINT: 130} {
		cmd, out, stderr := startBinary(t, "take-mem", "1MiB", "--device", "sim:2MiB")
		readUntil(t, out, "releasing on Ctrl-C")
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		code, rest := waitExit(t, cmd, out, 10*time.Second)
		if code != want || !strings.Contains(rest, "released 1.00 MiB on sim:2MiB") {
			t.Errorf("take-mem after %v: status %d, output %q, stderr %q; want %d after releasing", sig, code, rest, stderr.String(), want)
		}
	}
}

// startTakeMem starts the built binary holding 2 blocks on a 1 GiB
// simulated device whose ledger is at path, and returns once it says it
// holds them, with the rest of its output to come on out.
func startTakeMem(t *testing.T, path string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd, out, stderr := startOnLedger(t, path, "take-mem", "2", "--device", "sim:1GiB")
	line, err := out.ReadString('\n')
	if want := "holding 2 linear blocks = 305 MiB on sim:1GiB\n"; line != want {
		t.Fatalf("first line %q, %v, want %q; stderr: %s", line, err, want, stderr.String())
	}
	return cmd, out
}

// TestTakeMemProcess runs take-mem as a process: while it holds, another
// process's view of the ledger shows its bytes taken; on SIGINT it
// releases them, says so and exits 130.
func TestTakeMemProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	cmd, out := startTakeMem(t, path)
	// Read on to its last line before signalling: a signal that comes
	// while take-mem waits for the ledger's lock (this test reads the
	// ledger too) ends that wait, and the free line is rightly skipped.
	seen := readUntil(t, out, "releasing on Ctrl-C")
	ledger := device.OpenLedger(path)
	entries, err := ledger.Entries()
	if err != nil || len(entries) != 1 || entries[0].PID != cmd.Process.Pid || entries[0].Bytes != memhog.BlocksBytes(2) ||
		!strings.Contains(entries[0].Label, "take-mem 2") {
		t.Fatalf("ledger entries %+v, %v; want take-mem's %d bytes", entries, err, memhog.BlocksBytes(2))
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(out)
	if err != nil {
		t.Fatal(err)
	}
	rest = append([]byte(seen), rest...)
	if err := cmd.Wait(); exitCode(err) != 130 {
		t.Fatalf("take-mem after SIGINT: %v, want exit status 130", err)
	}
	for _, want := range []string{
		"free on sim:1GiB: 1.00 GiB before, 719 MiB now\n",
		"releasing on Ctrl-C\n",
		"released 305 MiB on sim:1GiB; 1.00 GiB free\n",
	} {
		if !strings.Contains(string(rest), want) {
			t.Errorf("output lacks %q:\n%s", want, rest)
		}
	}
	if others, err := ledger.Others(); err != nil || others != 0 {
		t.Errorf("after take-mem exited the ledger shows %d bytes taken, %v", others, err)
	}
}

// TestTakeMemKilled kills take-mem with SIGKILL, so it cannot release: the
// next read of the ledger reclaims its bytes.
func TestTakeMemKilled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	cmd, _ := startTakeMem(t, path)
	ledger := device.OpenLedger(path)
	if others, err := ledger.Others(); err != nil || others != memhog.BlocksBytes(2) {
		t.Fatalf("while held the ledger shows %d bytes, %v; want %d", others, err, memhog.BlocksBytes(2))
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if others, err := ledger.Others(); err != nil || others != 0 {
		t.Errorf("after SIGKILL the ledger shows %d bytes taken, %v; want them reclaimed", others, err)
	}
}

// TestTakeMemMakesCUDARunOutOfMemory is the two-shell scenario with the
// built binary: take-mem holds half of a small simulated GPU in a background
// process; a benchmark on the same device then reports OOM for cuda, which
// needs every block resident, while cache, with a window-paged window of
// one block (the window policy keeps Adam's state resident and would not
// fit), and
// cpu complete, and the run exits 3. Interrupted, the holder exits 130.
func TestTakeMemMakesCUDARunOutOfMemory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	holder, out, _ := startOnLedger(t, path, "take-mem", "1MiB", "--device", "sim:2MiB")
	if line, err := out.ReadString('\n'); !strings.HasPrefix(line, "holding") {
		t.Fatalf("take-mem's first line %q, %v, want it to say what it holds", line, err)
	}

	run := gpuzOnLedger(t, path, "linear", "train", "cuda,cache,cpu", "--scale", "small", "--device", "sim:2MiB", "--policy", "window-paged", "--win-size", "1")
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Run(); exitCode(err) != exitIncomplete {
		t.Fatalf("benchmark: %v, want exit status %d; stderr: %s", err, exitIncomplete, stderr.String())
	}
	rows := reporttest.TableRows(stdout.String())
	if status(rows["cuda"]) != "OOM [1]" || !strings.Contains(rows["[1]"], "cuda: OOM: needs 1.29 MiB, 1.00 MiB of 2.00 MiB free") {
		t.Errorf("cuda row = %q, want OOM with what it needs and what is free", rows["cuda"])
	}
	for _, mode := range []string{"cache", "cpu"} {
		if status(rows[mode]) != "ok" {
			t.Errorf("%s row = %q, want ok", mode, rows[mode])
		}
	}

	if err := holder.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code, _ := waitExit(t, holder, out, 10*time.Second); code != 130 {
		t.Errorf("take-mem after SIGINT: exit status %d, want 130", code)
	}
}

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
		signal bool // SIGINT once the command says it waits for the lock
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
			var stdout, stderr bytes.Buffer
			var errOut io.Writer = &stderr
			if tt.signal {
				// The signal comes once the command says it waits for
				// the lock (an event: its line), within the minute the
				// wait is allowed here.
				ledgerLockTimeout = time.Minute
				defer func() { ledgerLockTimeout = 500 * time.Millisecond }()
				errOut = writerFunc(func(p []byte) (int, error) {
					if strings.Contains(string(p), "waiting for the simulated device's ledger") {
						defer cancel(&signalError{syscall.SIGINT})
					}
					return stderr.Write(p)
				})
			}
			args := tt.args
			if args[0] != "take-mem" {
				args = append(append([]string(nil), args...), small...)
			}
			code := run(ctx, args, &stdout, errOut)
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			last := lines[len(lines)-1]
			if code != tt.code || (tt.stderr != "" && !strings.Contains(last, tt.stderr)) || strings.Contains(stderr.String(), "--device:") {
				t.Errorf("gpuz %s: exit status %d, stderr %q; want %d and a line with %q", strings.Join(args, " "), code, stderr.String(), tt.code, tt.stderr)
			}
			if tt.code == exitFailure && !strings.Contains(last, path) {
				t.Errorf("gpuz %s: stderr %q does not name the ledger %s", strings.Join(args, " "), last, path)
			}
		})
	}
}
