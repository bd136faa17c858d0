package device

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestLedgerPermissionDenied opens a ledger this user cannot write: the
// error says to set GPUZ_SIM_LEDGER.
func TestLedgerPermissionDenied(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root can write any file")
	}
	path := filepath.Join(t.TempDir(), "ledger")
	if err := os.WriteFile(path, []byte(ledgerHeader+"\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	_, err := OpenLedger(path).Others()
	if err == nil || !strings.Contains(err.Error(), LedgerEnv) {
		t.Errorf("opening a read-only ledger: %v, want an error naming %s", err, LedgerEnv)
	}
}

// TestLedgerNotRegular points the ledger at a directory and at a FIFO: each
// is refused at once, with an error naming the path (a FIFO would block an
// open, or read as an endless empty ledger).
func TestLedgerNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, fifo, "/dev/null"} {
		done := make(chan error, 1)
		go func() { _, err := OpenLedger(path).Others(); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") || !strings.Contains(err.Error(), path) {
				t.Errorf("ledger at %s: %v, want it refused as not a regular file", path, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("ledger at %s: still blocked after a minute", path)
		}
	}
}

// holdLock takes the ledger file's lock as another process would (its own
// open file) until the test ends or the returned func is called.
func holdLock(t *testing.T, path string) (unlock func()) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	unlock = func() { f.Close() }
	t.Cleanup(unlock)
	return unlock
}

// TestLedgerLockWait holds the ledger's lock in the test: an access reports
// its wait once after WaitNotice and gives up after its Timeout, not
// before, with ErrLedgerLocked; with the lock released while it waits (on
// its notice, an event, not after a sleep) it succeeds. The one ceiling,
// on the access that must give up, is a generous minute.
func TestLedgerLockWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	unlock := holdLock(t, path)
	var waits atomic.Int32
	l := OpenLedgerWith(path, LedgerOptions{OnWait: func(string) { waits.Add(1) }, Timeout: 1500 * time.Millisecond})
	start := time.Now()
	err := withinAMinute(t, func() error { return l.Set(1, "x") })
	if !errors.Is(err, ErrLedgerLocked) || !strings.Contains(err.Error(), path) {
		t.Errorf("Set with the lock held: %v, want ErrLedgerLocked naming the file", err)
	}
	if took := time.Since(start); took < 1500*time.Millisecond {
		t.Errorf("gave up after %v, before its timeout of 1.5s", took)
	}
	if n := waits.Load(); n != 1 {
		t.Errorf("OnWait called %d times, want 1", n)
	}

	// A simulated device's Alloc waits the same way, then succeeds once
	// the lock is released: here as soon as it says it waits.
	sim := NewSim(1000, OpenLedgerWith(path, LedgerOptions{Timeout: time.Minute, OnWait: func(string) { unlock() }}))
	if err := withinAMinute(t, func() error { _, err := sim.Alloc(10); return err }); err != nil {
		t.Errorf("Alloc after the lock is released: %v", err)
	}
}

// withinAMinute runs f and returns its error, failing the test if it has
// not returned within a minute (a hang, not a slow machine).
func withinAMinute(t *testing.T, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("still waiting after a minute")
		return nil
	}
}

// TestLedgerLockCancel cancels the context of an access waiting for the
// lock, once it says it waits: it returns the context's error, not
// ErrLedgerLocked after its timeout.
func TestLedgerLockCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	holdLock(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sim := NewSim(1000, OpenLedgerWith(path, LedgerOptions{Context: ctx, Timeout: 5 * time.Second, OnWait: func(string) { cancel() }}))
	err := withinAMinute(t, func() error { _, err := sim.Alloc(10); return err })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Alloc with its wait cancelled: %v, want context.Canceled", err)
	}
}

// TestLedgerHugeEntries reads a hand-edited ledger whose live entries sum
// past math.MaxInt64: the total saturates, so the device is full, not
// "all free" as a wrapped negative sum would make it.
func TestLedgerHugeEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	self := currentProcess()
	text := ledgerHeader + "\n"
	for h := range 3 {
		text += fmt.Sprintf("%d\t%d\t%d\t%d\thuge\n", self.pid, self.start, 1<<40+h, int64(math.MaxInt64/2))
	}
	if err := os.WriteFile(path, []byte(text), 0o666); err != nil {
		t.Fatal(err)
	}
	ledger := OpenLedger(path)
	if others, err := ledger.Others(); err != nil || others != math.MaxInt64 {
		t.Errorf("Others = %d, %v; want %d (saturated)", others, err, int64(math.MaxInt64))
	}
	sim := NewSim(1<<20, ledger)
	if free, _, err := sim.MemInfo(); err != nil || free != 0 {
		t.Errorf("MemInfo: %d free, %v; want 0", free, err)
	}
	var oom *OutOfMemoryError
	if _, err := sim.Alloc(1); !errors.As(err, &oom) || oom.Free != 0 {
		t.Errorf("Alloc: %v, want out of memory with 0 free", err)
	}

	// A negative entry is refused, not subtracted.
	neg := ledgerHeader + fmt.Sprintf("\n%d\t%d\t%d\t-5\tneg\n", self.pid, self.start, 1<<41)
	if err := os.WriteFile(path, []byte(neg), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Others(); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a negative entry: %v, want an error naming line 2", err)
	}
}

// TestSimOOMQuotesFreeAtAlloc takes memory in another holder between
// MemInfo and Alloc: the OutOfMemoryError quotes what is free when the
// allocation fails, not what MemInfo said before.
func TestSimOOMQuotesFreeAtAlloc(t *testing.T) {
	sim, ledger := simOnLedger(t, 1000)
	if free, _, err := sim.MemInfo(); err != nil || free != 1000 {
		t.Fatalf("MemInfo: %d, %v", free, err)
	}
	if err := ledger.Set(700, "other"); err != nil {
		t.Fatal(err)
	}
	var oom *OutOfMemoryError
	if _, err := sim.Alloc(100); !errors.As(err, &oom) || oom.Free != 300 || oom.Requested != 400 {
		t.Errorf("Alloc of 400 bytes with 300 free: %v, want out of memory quoting 300 free", err)
	}
}

// TestSimCloseWithoutEntry closes simulated devices that never recorded
// anything while another process holds the ledger's lock: Close returns
// without touching the ledger, never waiting for the lock (it waited for the lock, so that a
// command failing on a locked ledger waited twice). A device that did
// record its memory still removes its entry on Close.
func TestSimCloseWithoutEntry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	unlock := holdLock(t, path)
	// A Close that touched the ledger would say it waits (OnWait, after a
	// second) and then fail, the lock held past its timeout.
	var waits atomic.Int32
	opts := LedgerOptions{Timeout: 2 * time.Second, OnWait: func(string) { waits.Add(1) }}
	if err := withinAMinute(t, NewSim(1000, OpenLedgerWith(path, opts)).Close); err != nil || waits.Load() != 0 {
		t.Errorf("Close of an unused device with the lock held: %v, %d waits for the lock; want nil and none", err, waits.Load())
	}
	unlock()
	sim := NewSim(1000, OpenLedgerWith(path, opts))
	if _, err := sim.Alloc(10); err != nil {
		t.Fatal(err)
	}
	if err := sim.Close(); err != nil {
		t.Fatal(err)
	}
	if entries, err := OpenLedger(path).Entries(); err != nil || len(entries) != 0 {
		t.Errorf("after Close the ledger holds %+v, %v; want nothing", entries, err)
	}
}
