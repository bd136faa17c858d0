package device

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// LedgerEnv names the environment variable that overrides the ledger's
// default path.
const LedgerEnv = "GPUZ_SIM_LEDGER"

// DefaultLedgerPath is $GPUZ_SIM_LEDGER when set, else gpuz-sim-ledger in
// the system's temporary directory: the file that every gpuz process on
// this machine shares for the simulated device.
func DefaultLedgerPath() string {
	if p := os.Getenv(LedgerEnv); p != "" {
		return p
	}
	return filepath.Join(os.TempDir(), "gpuz-sim-ledger")
}

// Ledger is a holder's entry in the file where processes sharing a
// simulated device record the bytes they hold on it, so that each one's
// free memory accounts for the others'. Each Ledger value is one holder
// with its own entry, keyed by this process (its pid and start time, so
// that a reused pid is not mistaken for it) and a holder number unique in
// the process; every other entry — of other processes, or of other holders
// in this process — counts as memory taken.
//
// Every access locks the file (flock), reads it, drops the entries of
// processes that no longer run, and writes it back if that changed it, so
// a holder killed without clean-up is forgotten on the next access by
// anyone.
type Ledger struct {
	path   string
	holder int64
}

// LedgerEntry is one holder's record in the ledger.
type LedgerEntry struct {
	PID    int
	Start  uint64 // the process's start time in clock ticks since boot (0: unknown)
	Holder int64  // the holder within the process
	Bytes  int64
	Label  string // what holds the memory, e.g. the command line
}

// holders numbers the Ledger values of this process.
var holders atomic.Int64

// OpenLedger returns a new holder on the ledger file at path, or at
// DefaultLedgerPath when path is empty. It does not touch the file: that
// happens on the first Set, Others or Entries.
func OpenLedger(path string) *Ledger {
	if path == "" {
		path = DefaultLedgerPath()
	}
	return &Ledger{path: path, holder: holders.Add(1)}
}

// Path is the ledger's file.
func (l *Ledger) Path() string { return l.path }

// newHolder returns another holder on the same file.
func (l *Ledger) newHolder() *Ledger { return OpenLedger(l.path) }

// Set records that this holder holds bytes on the device, with a label
// saying what holds them; 0 removes the entry.
func (l *Ledger) Set(bytes int64, label string) error {
	return l.update(func(int64) (int64, error) { return bytes, nil }, label)
}

// Others returns the bytes that every other live holder records.
func (l *Ledger) Others() (int64, error) {
	var others int64
	err := l.transact(func(entries []LedgerEntry) ([]LedgerEntry, error) {
		others = l.othersIn(entries)
		return entries, nil
	})
	return others, err
}

// Entries returns the entries of every live holder, this one's included.
func (l *Ledger) Entries() ([]LedgerEntry, error) {
	var out []LedgerEntry
	err := l.transact(func(entries []LedgerEntry) ([]LedgerEntry, error) {
		out = append([]LedgerEntry(nil), entries...)
		return entries, nil
	})
	return out, err
}

// update sets this holder's entry to the bytes that decide returns, given
// what the other holders hold, in one locked transaction; an error from
// decide leaves the ledger as it was.
func (l *Ledger) update(decide func(others int64) (int64, error), label string) error {
	self := currentProcess()
	return l.transact(func(entries []LedgerEntry) ([]LedgerEntry, error) {
		bytes, err := decide(l.othersIn(entries))
		if err != nil {
			return nil, err
		}
		kept := entries[:0:0]
		for _, e := range entries {
			if !l.owns(e, self) {
				kept = append(kept, e)
			}
		}
		if bytes != 0 {
			kept = append(kept, LedgerEntry{PID: self.pid, Start: self.start, Holder: l.holder, Bytes: bytes, Label: label})
		}
		return kept, nil
	})
}

// othersIn sums the bytes of the entries that are not this holder's.
func (l *Ledger) othersIn(entries []LedgerEntry) int64 {
	self := currentProcess()
	var sum int64
	for _, e := range entries {
		if !l.owns(e, self) {
			sum += e.Bytes
		}
	}
	return sum
}

func (l *Ledger) owns(e LedgerEntry, self process) bool {
	return e.PID == self.pid && e.Start == self.start && e.Holder == l.holder
}

// transact runs f on the live entries under the file lock and writes back
// what it returns when that differs from what was read, or when dead
// entries were dropped. An error from f writes nothing.
func (l *Ledger) transact(f func([]LedgerEntry) ([]LedgerEntry, error)) error {
	file, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	defer file.Close() // closing the file releases the lock
	if err := flock(file); err != nil {
		return fmt.Errorf("ledger: locking %s: %w", l.path, err)
	}
	old, err := io.ReadAll(file)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	entries, err := parseLedger(old)
	if err != nil {
		return fmt.Errorf("ledger %s: %w (delete the file if no gpuz process runs)", l.path, err)
	}
	live := entries[:0:0]
	for _, e := range entries {
		if alive(e) {
			live = append(live, e)
		}
	}
	entries, err = f(live)
	if err != nil {
		return err
	}
	text := formatLedger(entries)
	if bytes.Equal(text, old) {
		return nil
	}
	// Overwrite in place: replacing the file by a rename costs a
	// millisecond (ext4 flushes a file renamed over another), and the lock
	// already keeps readers from seeing a half-written file. Should the
	// process die between the write and the truncation, the end line still
	// marks where the entries stop.
	if _, err := file.WriteAt(text, 0); err != nil {
		return fmt.Errorf("ledger: writing %s: %w", l.path, err)
	}
	if err := file.Truncate(int64(len(text))); err != nil {
		return fmt.Errorf("ledger: writing %s: %w", l.path, err)
	}
	return nil
}

// flock takes an exclusive lock on f, retrying when a signal interrupts the
// wait.
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

// The ledger file is ledgerHeader, one line per entry — pid, start time,
// holder and bytes as decimal numbers, then the label, separated by tabs —
// and ledgerEnd, after which anything is ignored.
const (
	ledgerHeader = "# gpuz simulated-device ledger v1: pid, start, holder, bytes, label"
	ledgerEnd    = "# end"
)

func formatLedger(entries []LedgerEntry) []byte {
	var b bytes.Buffer
	b.WriteString(ledgerHeader + "\n")
	for _, e := range entries {
		label := strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return ' '
			}
			return r
		}, e.Label)
		fmt.Fprintf(&b, "%d\t%d\t%d\t%d\t%s\n", e.PID, e.Start, e.Holder, e.Bytes, label)
	}
	b.WriteString(ledgerEnd + "\n")
	return b.Bytes()
}

func parseLedger(text []byte) ([]LedgerEntry, error) {
	var entries []LedgerEntry
	sc := bufio.NewScanner(bytes.NewReader(text))
	for line := 1; sc.Scan(); line++ {
		s := sc.Text()
		if s == ledgerEnd {
			break
		}
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		f := strings.SplitN(s, "\t", 5)
		if len(f) != 5 {
			return nil, fmt.Errorf("line %d: want 5 tab-separated fields, got %d", line, len(f))
		}
		var e LedgerEntry
		var errs [4]error
		e.PID, errs[0] = strconv.Atoi(f[0])
		e.Start, errs[1] = strconv.ParseUint(f[1], 10, 64)
		e.Holder, errs[2] = strconv.ParseInt(f[2], 10, 64)
		e.Bytes, errs[3] = strconv.ParseInt(f[3], 10, 64)
		if err := errors.Join(errs[:]...); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if e.PID <= 0 || e.Bytes < 0 {
			return nil, fmt.Errorf("line %d: pid %d, bytes %d", line, e.PID, e.Bytes)
		}
		e.Label = f[4]
		entries = append(entries, e)
	}
	return entries, sc.Err()
}

// process identifies a running process across pid reuse.
type process struct {
	pid   int
	start uint64
}

var (
	selfOnce sync.Once
	self     process
)

// currentProcess is this process. Its start time is 0 where /proc cannot
// tell it; liveness checks then rely on the pid alone.
func currentProcess() process {
	selfOnce.Do(func() {
		self.pid = os.Getpid()
		if st, err := readStat(self.pid); err == nil {
			self.start = st.start
		}
	})
	return self
}

// alive reports whether the process that wrote e still runs: its pid exists,
// is not a zombie, and started when the entry says.
func alive(e LedgerEntry) bool {
	if err := syscall.Kill(e.PID, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	st, err := readStat(e.PID)
	if err != nil {
		// The pid exists (kill found it) but /proc cannot describe it; trust
		// the pid rather than drop memory that may well be held.
		return !errors.Is(err, os.ErrNotExist)
	}
	if st.state == 'Z' || st.state == 'X' {
		return false
	}
	return e.Start == 0 || st.start == e.Start
}

// stat is what the ledger needs of /proc/PID/stat.
type stat struct {
	state byte   // field 3: R, S, D, Z (zombie), X (dead), ...
	start uint64 // field 22: start time in clock ticks after boot
}

// readStat reads /proc/PID/stat. The command name (field 2) is in
// parentheses and may itself hold spaces and parentheses, so the fields are
// counted from the last ')'.
func readStat(pid int) (stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return stat{}, fmt.Errorf("/proc/%d/stat: %d fields after the command name, want at least 20", pid, len(f))
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return stat{}, fmt.Errorf("/proc/%d/stat: start time: %w", pid, err)
	}
	return stat{state: f[0][0], start: start}, nil
}
