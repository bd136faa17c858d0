package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTakeMemMakesCUDARunOutOfMemory is the two-shell scenario with the
// built binary: take-mem holds half of a small simulated GPU in a background
// process; a benchmark on the same device then reports OOM for cuda, which
// needs every block resident, while cache, with a window of one block, and
// cpu complete. Interrupted, the holder exits cleanly.
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

	run := exec.Command(gpuzBinary, "linear", "train", "cuda,cache,cpu", "--scale", "small", "--device", "sim:2MiB", "--win-size", "1")
	run.Env = env
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("benchmark: %v; stderr: %s", err, stderr.String())
	}
	rows := tableRows(stdout.String())
	if !strings.Contains(rows["cuda"], "| OOM: needs 1.29 MiB, 1.00 MiB of 2.00 MiB free") {
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
		if err != nil {
			t.Errorf("take-mem after SIGINT: %v, want exit status 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("take-mem did not exit within 10 s of SIGINT")
	}
}
