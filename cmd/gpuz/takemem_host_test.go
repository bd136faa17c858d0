package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gpuz/internal/device"
)

// TestTakeMemHostFor holds 1 GiB of host memory for --for 1s: the second
// counts from when the memory is held (the "holding" line), not from the
// start, before its pages were written (take-mem 2GiB --device cpu --for
// 3s held for no time at all once writing took more than 3 s). The binary
// holds and releases; TestTakeMemForArmedWhenHeld checks when the timer
// is armed, which no reading of the clock here could tell on a loaded
// machine.
func TestTakeMemHostFor(t *testing.T) {
	cmd, out, stderr := startBinary(t, "take-mem", "1GiB", "--device", "cpu", "--for", "1s")
	readUntil(t, out, "holding 1.00 GiB on host")
	code, rest := waitExit(t, cmd, out, time.Minute)
	if code != 0 || !strings.Contains(rest, "releasing after 1s or on Ctrl-C\n") || !strings.Contains(rest, "released 1.00 GiB on host") {
		t.Errorf("take-mem --for 1s: status %d, output %q, stderr %q; want 0, releasing after 1s, released", code, rest, stderr.String())
	}
}

// TestTakeMemForArmedWhenHeld runs take-mem --for with the timer's arming
// watched: it is armed once, for the whole --for, after the memory is
// held and the lines that say so are written, and its firing releases the
// memory.
func TestTakeMemForArmedWhenHeld(t *testing.T) {
	ios, out, errOut := testIO()
	type arming struct {
		d      time.Duration
		output string // written before the timer was armed
	}
	var armed []arming
	o := &TakeMemOptions{IO: ios, Amount: "64MiB", Device: "cpu", For: time.Hour,
		afterFunc: func(d time.Duration, f func()) *time.Timer {
			armed = append(armed, arming{d, out.String()})
			return time.AfterFunc(0, f) // fire now: the hour is over
		}}
	if err := takeMemRun(context.Background(), o); err != nil {
		t.Fatalf("take-mem: %v; stderr %s", err, errOut)
	}
	held, releasing := "holding 64.0 MiB on host\n", "releasing after 1h0m0s or on Ctrl-C\n"
	if len(armed) != 1 || armed[0].d != time.Hour || !strings.HasPrefix(armed[0].output, held) || !strings.HasSuffix(armed[0].output, releasing) ||
		!strings.Contains(out.String(), "released 64.0 MiB on host") {
		t.Errorf("timers armed: %+v; output %q; want one of 1h armed after %q … %q, then released", armed, out, held, releasing)
	}
}

// TestTakeMemHostInterrupt sends SIGINT to take-mem while it takes
// 4 GiB of host memory (once its resident memory passes 256 MiB:
// an event read from /proc, not a sleep): it stops (it went on writing,
// 13 s for 8 GiB, then said it held them), never says it holds the memory,
// and exits 130. The ceiling on the exit is a generous minute.
func TestTakeMemHostInterrupt(t *testing.T) {
	if info, err := device.ReadMeminfo(); err != nil || info.Available < 6<<30 {
		t.Skipf("needs 6 GiB of host memory available: %+v, %v", info, err)
	}
	cmd, out, stderr := startBinary(t, "take-mem", "4GiB", "--device", "cpu")
	for rss := int64(0); rss < 256<<20; time.Sleep(time.Millisecond) {
		var err error
		if rss, err = residentBytes(cmd.Process.Pid); err != nil {
			t.Fatalf("reading take-mem's resident memory: %v; stderr %s", err, stderr)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code, rest := waitExit(t, cmd, out, time.Minute)
	if code != 130 || strings.Contains(rest, "holding") {
		t.Errorf("take-mem 4GiB interrupted while writing: status %d, output %q, stderr %q; want 130, nothing held",
			code, rest, stderr.String())
	}
}

// residentBytes is the resident memory of process pid (VmRSS).
func residentBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kib << 10, err
		}
	}
	return 0, nil // not yet, or a zombie
}
