package device

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeEntries writes a ledger of n entries of this process, each under
// its own holder number, so that every one of them is live.
func writeEntries(t *testing.T, path string, n int) {
	t.Helper()
	self := currentProcess()
	var b strings.Builder
	b.WriteString(ledgerHeader + "\n")
	for h := range n {
		fmt.Fprintf(&b, "%d\t%d\t%d\t1\tplanted\n", self.pid, self.start, 1<<50+h)
	}
	b.WriteString(ledgerEnd + "\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLedgerEntryBound fills the ledger with live entries: up to
// MaxLedgerEntries it is read, and a new entry past them is refused; past
// them it is refused at once, 200,000 entries included (each access spent
// seconds checking every pid, under the lock), naming the bound.
func TestLedgerEntryBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	writeEntries(t, path, MaxLedgerEntries)
	l := OpenLedger(path)
	if others, err := l.Others(); err != nil || others != MaxLedgerEntries {
		t.Errorf("a full ledger: Others = %d, %v; want %d", others, err, MaxLedgerEntries)
	}
	if err := l.Set(1, "one too many"); err == nil || !strings.Contains(err.Error(), fmt.Sprint(MaxLedgerEntries)) {
		t.Errorf("a new entry in a full ledger: %v, want it refused naming the bound", err)
	}
	for _, n := range []int{MaxLedgerEntries + 1, 200_000} {
		writeEntries(t, path, n)
		start := time.Now()
		_, err := l.Others()
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), fmt.Sprint(MaxLedgerEntries)) {
			t.Errorf("%d entries: %v, want the ledger refused naming the bound", n, err)
		}
		// A generous ceiling: refused by the bound, not after parsing
		// every entry, but never a figure a loaded machine reaches.
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("%d entries: refused after %v", n, took)
		}
	}
	// A file of a few huge lines is refused by its size, before it is read
	// whole.
	huge := ledgerHeader + "\n" + strings.Repeat("x", maxLedgerBytes) + "\n"
	if err := os.WriteFile(path, []byte(huge), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Others(); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a ledger over %d bytes: %v, want it refused by its size", maxLedgerBytes, err)
	}
}

// TestSimOOMNamesHolders fills a simulated device from another process:
// the out-of-memory error names that holder — its pid, user and bytes —
// rather than only "0 B free".
func TestSimOOMNamesHolders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	cmd, _ := startHelper(t, path, 700)
	sim := NewSim(1000, OpenLedger(path))
	var oom *OutOfMemoryError
	_, err := sim.Alloc(100)
	if !errors.As(err, &oom) {
		t.Fatalf("Alloc of 400 bytes with 300 free: %v, want out of memory", err)
	}
	me := userName(os.Geteuid())
	if len(oom.Holders) != 1 || oom.Holders[0].PID != cmd.Process.Pid || oom.Holders[0].User != me || oom.Holders[0].Bytes != 700 {
		t.Errorf("holders %+v, want the helper (pid %d, %s) with 700 bytes", oom.Holders, cmd.Process.Pid, me)
	}
	want := fmt.Sprintf("held by pid %d (%s): 700 B", cmd.Process.Pid, me)
	if !strings.Contains(err.Error(), want) || !strings.Contains(oom.HeldBy(), want) {
		t.Errorf("error %q, HeldBy %q; want both to say %q", err, oom.HeldBy(), want)
	}
	if _, err := sim.Reserve(400); !errors.As(err, &oom) || len(oom.Holders) != 1 {
		t.Errorf("Reserve of 400 bytes with 300 free: %v, want out of memory naming the helper", err)
	}
	if _, err := sim.ReserveAhead(400); !errors.As(err, &oom) || len(oom.Holders) != 1 {
		t.Errorf("ReserveAhead of 400 bytes with 300 free: %v, want out of memory naming the helper", err)
	}
}

// TestHeldBy names at most maxHeldBy holders, then how many more; this
// process, as a run's own --take, is "this process" (issue 36 item 21: a
// sweep's note named it as if it were another, "held by pid 9885 (root)").
func TestHeldBy(t *testing.T) {
	var hs []LedgerEntry
	for i := range 5 {
		hs = append(hs, LedgerEntry{PID: 10 + i, User: "u", Bytes: 1 << 20})
	}
	self := LedgerEntry{PID: os.Getpid(), User: "u", Bytes: 2 << 20}
	for _, tt := range []struct {
		holders []LedgerEntry
		want    string
	}{
		{nil, ""},
		{hs[:1], "held by pid 10 (u): 1.00 MiB"},
		{hs[:3], "held by pid 10 (u): 1.00 MiB, pid 11 (u): 1.00 MiB, pid 12 (u): 1.00 MiB"},
		{hs, "held by pid 10 (u): 1.00 MiB, pid 11 (u): 1.00 MiB, pid 12 (u): 1.00 MiB and 2 more (gpuz take-mem --list)"},
		{[]LedgerEntry{self}, fmt.Sprintf("held by this process (pid %d): 2.00 MiB", os.Getpid())},
		{[]LedgerEntry{hs[0], self}, fmt.Sprintf("held by pid 10 (u): 1.00 MiB, this process (pid %d): 2.00 MiB", os.Getpid())},
	} {
		e := OutOfMemoryError{Holders: tt.holders}
		if got := e.HeldBy(); got != tt.want {
			t.Errorf("%d holders: HeldBy() = %q, want %q", len(tt.holders), got, tt.want)
		}
	}
}
