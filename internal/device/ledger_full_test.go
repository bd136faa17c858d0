package device

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLedgerFullDisk plays a full disk while a holder writes its entry:
// the write fails with ENOSPC, and the ledger is left as it was (another
// holder's entry kept, no line cut), so the next access reads it and a
// later write succeeds. Before, the ledger was overwritten in place: the
// write left a cut line and every later command refused the file.
func TestLedgerFullDisk(t *testing.T) {
	// A full disk writes over the blocks the file had (those of its text
	// before, room bytes) and fails past them.
	const room = 200
	cutPastRoom := func(f *os.File, b []byte, off int64) (int, error) {
		if off+int64(len(b)) <= room {
			return f.WriteAt(b, off)
		}
		n, err := f.WriteAt(b[:max(room-off, 0)], off)
		if err != nil {
			return n, err
		}
		return n, syscall.ENOSPC
	}
	full := func(*os.File, int64) error { return syscall.ENOSPC }
	tests := []struct {
		name     string
		allocate func(*os.File, int64) error
		writeAt  func(*os.File, []byte, int64) (int, error)
	}{
		{"the write cut short", allocate, cutPastRoom},
		{"no block to reserve", full, (*os.File).WriteAt},
		{"both", full, cutPastRoom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger")
			self := currentProcess()
			other := LedgerEntry{PID: self.pid, Start: self.start, Holder: 1 << 40, Bytes: 7, Label: "other"}
			before := formatLedger([]LedgerEntry{other})
			if len(before) > room {
				t.Fatalf("the ledger takes %d bytes, more than the %d the disk has", len(before), room)
			}
			if err := os.WriteFile(path, before, 0o666); err != nil {
				t.Fatal(err)
			}
			saved := ledgerIO
			ledgerIO.allocate, ledgerIO.writeAt = tt.allocate, tt.writeAt
			l := OpenLedger(path)
			err := l.Set(1000, strings.Repeat("a long label ", 20))
			ledgerIO = saved
			if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), path) {
				t.Errorf("Set on a full disk: %v, want ENOSPC naming the file", err)
			}
			if got, err := os.ReadFile(path); err != nil || string(got) != string(before) {
				t.Errorf("after the failed write the file holds %q, %v; want it as it was, %q", got, err, before)
			}
			if others, err := OpenLedger(path).Others(); err != nil || others != 7 {
				t.Errorf("the next access: Others = %d, %v; want 7", others, err)
			}
			if err := l.Set(1000, "mine"); err != nil {
				t.Errorf("a write once the disk has room: %v", err)
			}
			if others, err := OpenLedger(path).Others(); err != nil || others != 1007 {
				t.Errorf("after it: Others = %d, %v; want 1007", others, err)
			}
		})
	}
}

// TestLedgerCutLastLine reads a ledger whose last line a write left cut
// (no newline, no end line), as an older gpuz left it on a full disk: the
// cut line is dropped and the entries before it read, and the next write
// makes the file whole.
func TestLedgerCutLastLine(t *testing.T) {
	self := currentProcess()
	a := LedgerEntry{PID: self.pid, Start: self.start, Holder: 1 << 40, Bytes: 7, Label: "a"}
	b := LedgerEntry{PID: self.pid, Start: self.start, Holder: 1<<40 + 1, Bytes: 100, Label: "b"}
	whole := string(formatLedger([]LedgerEntry{a, b}))
	cutAfterA := strings.Index(whole, "\n"+strings.SplitN(whole, "\n", 4)[2]) + 1 // the start of b's line
	tests := []struct {
		name string
		text string
		want int64
	}{
		{"cut in b's bytes", whole[:cutAfterA+len("123\t")], 7},
		{"cut before b's newline", whole[:cutAfterA+strings.Index(whole[cutAfterA:], "\n")], 7},
		{"cut after b's newline", whole[:cutAfterA+strings.Index(whole[cutAfterA:], "\n")+1], 107},
		{"cut in the end line", whole[:len(whole)-3], 107},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger")
			if err := os.WriteFile(path, []byte(tt.text), 0o666); err != nil {
				t.Fatal(err)
			}
			l := OpenLedger(path)
			if others, err := l.Others(); err != nil || others != tt.want {
				t.Errorf("Others = %d, %v; want %d", others, err, tt.want)
			}
			if err := l.Set(1, "mine"); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(path); err != nil || !strings.HasSuffix(string(got), "\tmine\n"+ledgerEnd+"\n") {
				t.Errorf("after a write the file holds %q, %v; want it whole", got, err)
			}
		})
	}
}
