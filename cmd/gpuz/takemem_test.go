package main

import (
	"bufio"
	"bytes"
	"context"
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

func TestTakeMemAmount(t *testing.T) {
	for _, tt := range []struct {
		in     string
		bytes  int64
		blocks int
	}{
		{"1", 160_080_000, 1},
		{"20", 3_201_600_000, 20},
		{"007", 7 * 160_080_000, 7},
		{"4GiB", 4 << 30, 0},
		{"512MiB", 512 << 20, 0},
		{"4GB", 4_000_000_000, 0},
		{"1.5GiB", 3 << 29, 0},
		{"100B", 100, 0},
	} {
		b, n, err := takeMemAmount(tt.in)
		if err != nil || b != tt.bytes || n != tt.blocks {
			t.Errorf("takeMemAmount(%q) = %d, %d, %v; want %d, %d", tt.in, b, n, err, tt.bytes, tt.blocks)
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

// TestTakeMemRun runs take-mem in-process, with memory already taken by
// another holder of the ledger.
func TestTakeMemRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	t.Setenv(device.LedgerEnv, path)
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
			stderr: "gpuz: sim:1GiB: not enough free memory: needs 611 MiB (4 linear blocks), 512 MiB of 1.00 GiB free\n",
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

// TestTakeMemMakesCUDARunOutOfMemory is the two-shell scenario with the
// built binary: take-mem holds half of a small simulated GPU in a background
// process; a benchmark on the same device then reports OOM for cuda, which
// needs every block resident, while cache, with a window-paged window of
// one block (the window policy keeps Adam's state resident and would not
// fit), and
// cpu complete, and the run exits 3. Interrupted, the holder exits 130.
func TestTakeMemMakesCUDARunOutOfMemory(t *testing.T) {
	env := append(os.Environ(), "GPUZ_SIM_LEDGER="+filepath.Join(t.TempDir(), "ledger"))
	holder := exec.Command(gpuzBinary, "take-mem", "1MiB", "--device", "sim:2MiB")
	holder.Env = env
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Process.Kill()
	lines := bufio.NewScanner(out)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "holding") {
		t.Fatalf("take-mem's first line %q, want it to say what it holds", lines.Text())
	}
	go func() {
		for lines.Scan() { // drain the rest
		}
	}()

	run := exec.Command(gpuzBinary, "linear", "train", "cuda,cache,cpu", "--scale", "small", "--device", "sim:2MiB", "--policy", "window-paged", "--win-size", "1")
	run.Env = env
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
	done := make(chan error, 1)
	go func() { done <- holder.Wait() }()
	select {
	case err := <-done:
		if exitCode(err) != 130 {
			t.Errorf("take-mem after SIGINT: %v, want exit status 130", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("take-mem did not exit within 10 s of SIGINT")
	}
}
