package device

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// LedgerEnv names the environment variable that chooses the ledger's
// path: a file shared by whoever sets it to the same file and can write
// it, other users included.
const LedgerEnv = "GPUZ_SIM_LEDGER"

// DefaultLedgerPath is $GPUZ_SIM_LEDGER when set; else gpuz-sim-ledger in
// $XDG_RUNTIME_DIR when that is usable (an absolute path to a directory
// this user owns and no other user can write); else gpuz-sim-ledger-UID,
// UID this user's id, in the system's temporary directory. Only the first
// is shared with other users, and only by their choice: the others belong
// to this user, and the ledger refuses them when another user made them.
func DefaultLedgerPath() string {
	path, _ := defaultLedger()
	return path
}

// defaultLedger returns DefaultLedgerPath and whether the user chose it
// ($GPUZ_SIM_LEDGER).
func defaultLedger() (path string, chosen bool) {
	if p := os.Getenv(LedgerEnv); p != "" {
		return p, true
	}
	if dir := os.Getenv("XDG_RUNTIME_DIR"); privateDir(dir) {
		return filepath.Join(dir, "gpuz-sim-ledger"), false
	}
	return filepath.Join(os.TempDir(), "gpuz-sim-ledger-"+strconv.Itoa(os.Geteuid())), false
}

// privateDir reports whether dir is an absolute path to a directory that
// this user owns and that neither its group nor others can write, as the
// XDG base directory specification requires of $XDG_RUNTIME_DIR.
func privateDir(dir string) bool {
	if !filepath.IsAbs(dir) {
		return false
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
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
	path string
	// chosen is set when the user chose the path (OpenLedger's path or
	// $GPUZ_SIM_LEDGER): the file may then be another user's, shared.
	chosen bool
	holder int64
	opts   LedgerOptions
}

// LedgerOptions say how a ledger waits for its file's lock, which another
// process holds for the length of one short transaction: a longer wait
// means that process is stopped or stuck; and how the simulated devices
// made on it label their entries.
type LedgerOptions struct {
	// Context, when done, ends a wait for the lock with its error; nil
	// waits until Timeout.
	Context context.Context
	// OnWait, when set, is called once per access that has waited
	// WaitNotice for the lock, so that the program can tell the user why
	// it does not advance; it is called on the waiting goroutine.
	OnWait func(path string)
	// Timeout is the longest wait for the lock before the access fails
	// with ErrLedgerLocked; 0 is DefaultLockTimeout.
	Timeout time.Duration
	// Label says what holds the memory of the simulated devices made on
	// the ledger (NewSim), in their entries' LedgerEntry.Label: gpuz gives
	// its command line. Empty leaves the entries unlabelled.
	Label string
}

// Lock waiting: the wait before OnWait, the default bound, and how often
// the lock is tried.
const (
	WaitNotice         = time.Second
	DefaultLockTimeout = 30 * time.Second
	lockPoll           = 50 * time.Millisecond
)

// ErrLedgerLocked is the error (wrapped) of an access that waited its
// Timeout for the ledger's lock.
var ErrLedgerLocked = errors.New("ledger lock held by another process")

// LedgerEntry is one holder's record in the ledger.
type LedgerEntry struct {
	PID    int
	Start  uint64 // the process's start time in clock ticks since boot
	Holder int64  // the holder within the process
	Bytes  int64
	Label  string // what holds the memory, e.g. the command line
	// User is the name (or else the id) of the user the live process runs
	// as, read from /proc, not from the file, where the entries are shown
	// (Entries, OutOfMemoryError.Holders); empty elsewhere.
	User string
}

// The bounds of a ledger, which a gpuz process holds one entry in per
// simulated device it has open (a few): a ledger of more entries or bytes
// is refused as it is read, and a new entry past MaxLedgerEntries is
// refused, so that no one can make every access check thousands of
// processes while it holds the lock (200,000 entries took seconds).
const (
	MaxLedgerEntries = 1000
	maxLedgerBytes   = 1 << 20
)

// holders numbers the Ledger values of this process.
var holders atomic.Int64

// OpenLedger returns a new holder on the ledger file at path, or at
// DefaultLedgerPath when path is empty. It does not touch the file: that
// happens on the first Set, Others or Entries. A path given here or in
// $GPUZ_SIM_LEDGER is the user's choice, and may be a file another user
// made, to share with them; the default path must be a file of this
// user's.
func OpenLedger(path string) *Ledger { return OpenLedgerWith(path, LedgerOptions{}) }

// OpenLedgerWith is OpenLedger with options for waiting on the file's lock;
// the holders of the devices made on this ledger share them.
func OpenLedgerWith(path string, opts LedgerOptions) *Ledger {
	chosen := true
	if path == "" {
		path, chosen = defaultLedger()
	}
	return &Ledger{path: path, chosen: chosen, holder: holders.Add(1), opts: opts}
}

// Path is the ledger's file.
func (l *Ledger) Path() string { return l.path }

// newHolder returns another holder on the same file.
func (l *Ledger) newHolder() *Ledger {
	return &Ledger{path: l.path, chosen: l.chosen, holder: holders.Add(1), opts: l.opts}
}

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

// Entries returns the entries of every live holder, this one's included,
// each with its process's user.
func (l *Ledger) Entries() ([]LedgerEntry, error) {
	var out []LedgerEntry
	err := l.transact(func(entries []LedgerEntry) ([]LedgerEntry, error) {
		out = withUsers(entries)
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
			var oom *OutOfMemoryError
			if errors.As(err, &oom) {
				var others []LedgerEntry
				for _, e := range entries {
					if !l.owns(e, self) {
						others = append(others, e)
					}
				}
				oom.Holders = withUsers(others)
			}
			return nil, err
		}
		kept := entries[:0:0]
		for _, e := range entries {
			if !l.owns(e, self) {
				kept = append(kept, e)
			}
		}
		if bytes != 0 && len(kept) >= MaxLedgerEntries {
			return nil, fmt.Errorf("ledger %s: holds %d entries, the most it takes; gpuz take-mem --list names their holders", l.path, len(kept))
		}
		if bytes != 0 {
			kept = append(kept, LedgerEntry{PID: self.pid, Start: self.start, Holder: l.holder, Bytes: bytes, Label: label})
		}
		return kept, nil
	})
}

// othersIn sums the bytes of the entries that are not this holder's. The
// sum saturates at math.MaxInt64 (more than any device holds, so: nothing
// free) rather than wrap round to a negative total, which would read as all
// memory free; entries are never negative (parseLedger refuses them).
func (l *Ledger) othersIn(entries []LedgerEntry) int64 {
	self := currentProcess()
	var sum int64
	for _, e := range entries {
		if !l.owns(e, self) {
			sum = addSaturated(sum, e.Bytes)
		}
	}
	return sum
}

// addSaturated returns a+b for a, b ≥ 0, or math.MaxInt64 when that
// overflows.
func addSaturated(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

func (l *Ledger) owns(e LedgerEntry, self process) bool {
	return e.PID == self.pid && e.Start == self.start && e.Holder == l.holder
}

// transact runs f on the live entries under the file lock and writes back
// what it returns when that differs from what was read, or when dead
// entries were dropped. An error from f writes nothing.
func (l *Ledger) transact(f func([]LedgerEntry) ([]LedgerEntry, error)) error {
	if currentProcess().start == 0 {
		return errors.New("ledger: this process's start time cannot be read from /proc/self/stat, and the ledger's entries need it")
	}
	file, err := l.open()
	if err != nil {
		return err
	}
	defer file.Close() // closing the file releases the lock
	if err := l.lock(file); err != nil {
		return err
	}
	old, err := io.ReadAll(io.LimitReader(file, maxLedgerBytes+1))
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if len(old) > maxLedgerBytes {
		return fmt.Errorf("ledger %s: larger than %d bytes, more than its %d entries can fill; delete the file if no gpuz process runs", l.path, maxLedgerBytes, MaxLedgerEntries)
	}
	if len(old) > 0 && !bytes.HasPrefix(old, []byte(ledgerHeader+"\n")) {
		return fmt.Errorf("ledger: %s is not a gpuz ledger (its first line is not %q); it is left as it is: set %s to another file, or delete it",
			l.path, ledgerHeader, LedgerEnv)
	}
	entries, err := parseLedger(old)
	if err != nil {
		return fmt.Errorf("ledger %s: %w (delete the file if no gpuz process runs)", l.path, err)
	}
	live := entries[:0:0]
	procs := map[int]liveProcess{}
	for _, e := range entries {
		p, seen := procs[e.PID]
		if !seen {
			p = readProcess(e.PID)
			procs[e.PID] = p
		}
		if p.ok && p.start == e.Start {
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
	return l.write(file, old, text)
}

// ledgerIO is how transact changes the ledger file; tests replace it to
// play a full disk.
var ledgerIO = struct {
	allocate func(f *os.File, size int64) error
	writeAt  func(f *os.File, b []byte, off int64) (int, error)
}{allocate: allocate, writeAt: (*os.File).WriteAt}

// allocate reserves the file's blocks up to size (fallocate), so that a
// full disk fails here, before a byte of the ledger changes, rather than
// in the middle of the write. A file system that cannot reserve blocks
// (EOPNOTSUPP) is left to the write.
func allocate(f *os.File, size int64) error {
	for {
		err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EOPNOTSUPP || err == syscall.ENOSYS:
			return nil
		}
		return err
	}
}

// write replaces the ledger's text old by text in place, under the lock.
// Replacing the file by a rename costs a millisecond (ext4 flushes a file
// renamed over another) and would move the lock, which is on the file, to
// a file no longer at the path; the lock already keeps readers from seeing
// a half-written file. A write that fails (a full disk) must lose nothing
// and leave nothing cut: the blocks are reserved first (a full disk fails
// there, the file untouched), and a write that still fails is undone by
// writing old back over it, which needs no block that old did not have.
// Should the process die between the write and the truncation, the end
// line still marks where the entries stop.
func (l *Ledger) write(file *os.File, old, text []byte) error {
	if len(text) > len(old) {
		if err := ledgerIO.allocate(file, int64(len(text))); err != nil {
			return fmt.Errorf("ledger: writing %s: %w (the ledger is left as it was)", l.path, err)
		}
	}
	if _, err := ledgerIO.writeAt(file, text, 0); err != nil {
		if _, rerr := ledgerIO.writeAt(file, old, 0); rerr != nil {
			return fmt.Errorf("ledger: writing %s: %w; restoring its entries: %w", l.path, err, rerr)
		}
		if terr := file.Truncate(int64(len(old))); terr != nil {
			return fmt.Errorf("ledger: writing %s: %w; restoring its length: %w", l.path, err, terr)
		}
		return fmt.Errorf("ledger: writing %s: %w (the ledger is left as it was)", l.path, err)
	}
	if err := file.Truncate(int64(len(text))); err != nil {
		return fmt.Errorf("ledger: writing %s: %w", l.path, err)
	}
	return nil
}

// open opens the ledger file for reading and writing, creating it when
// absent: readable and writable by this user alone at the default path,
// as the umask allows at a path the user chose (to share it with other
// users, make it writable by them). It never follows a symbolic link at
// the path (O_NOFOLLOW), which another user could plant in a shared
// directory to make gpuz overwrite a file of the victim's. At the default
// path it refuses a file that another user owns or that has other hard
// links. A path that is not a regular file (a directory, a FIFO, a device)
// is refused without being opened for good: it is checked before the
// open, and the open itself does not block (a FIFO created in between),
// and checked again on the open file.
func (l *Ledger) open() (*os.File, error) {
	if fi, err := os.Lstat(l.path); err == nil {
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, l.symlink()
		}
		if !fi.Mode().IsRegular() {
			return nil, l.notRegular(fi.Mode())
		}
	}
	perm := os.FileMode(0o600)
	if l.chosen {
		perm = 0o666 // less the umask
	}
	const flags = os.O_RDWR | syscall.O_NONBLOCK | syscall.O_NOFOLLOW
	file, err := os.OpenFile(l.path, flags|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		// Another process made it (or a link is there: O_EXCL does not
		// follow one). Opening it without O_CREAT matters: in a sticky
		// directory such as /tmp, Linux's protected_regular refuses
		// O_CREAT on another user's file even when its mode lets us write.
		file, err = os.OpenFile(l.path, flags, 0)
	}
	switch {
	case errors.Is(err, syscall.ELOOP):
		return nil, l.symlink()
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("ledger: %w (another user may have made it; set %s to a file you can write)", err, LedgerEnv)
	case err != nil:
		return nil, fmt.Errorf("ledger: %w", err)
	}
	fi, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if !fi.Mode().IsRegular() {
		file.Close()
		return nil, l.notRegular(fi.Mode())
	}
	if err := l.checkOwner(fi); err != nil {
		file.Close()
		return nil, err
	}
	return file, nil
}

// checkOwner refuses a file at the default path that another user owns
// (made there to feed this user's gpuz its entries, or to be written
// through) or that has another hard link (a name for a file of this
// user's elsewhere). A path the user chose may be shared.
func (l *Ledger) checkOwner(fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if l.chosen || !ok {
		return nil
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("ledger: %s is owned by user %s, not by you; remove it, or set %s to a file you chose (to share a ledger with other users, point %s at the same file)",
			l.path, userName(int(st.Uid)), LedgerEnv, LedgerEnv)
	}
	if st.Nlink != 1 {
		return fmt.Errorf("ledger: %s has %d hard links, so writing it would write another file; remove it, or set %s to a file you chose",
			l.path, st.Nlink, LedgerEnv)
	}
	return nil
}

// symlink is the error for a ledger path that is a symbolic link.
func (l *Ledger) symlink() error {
	return fmt.Errorf("ledger: %s is a symbolic link, which gpuz does not follow (another user may have planted it); remove it, or set %s to the file itself",
		l.path, LedgerEnv)
}

// notRegular is the error for a ledger path that is not a regular file.
func (l *Ledger) notRegular(mode fs.FileMode) error {
	return fmt.Errorf("ledger: %s is not a regular file (%s); set %s to a file path", l.path, mode.Type(), LedgerEnv)
}

// userName is the name of the user uid, or the uid as a number when it has
// none.
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return strconv.Itoa(uid)
}

// lock takes an exclusive lock on the ledger file, trying every lockPoll:
// after WaitNotice it calls OnWait once; it gives up when the options'
// context is done or after their Timeout, with an error that says why.
func (l *Ledger) lock(file *os.File) error {
	ctx := l.opts.Context
	if ctx == nil {
		ctx = context.Background()
	}
	timeout := l.opts.Timeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	start := time.Now()
	noticed := false
	for {
		err := syscall.Flock(int(file.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case err == syscall.EINTR:
			continue
		case err != syscall.EWOULDBLOCK:
			return fmt.Errorf("ledger: locking %s: %w", l.path, err)
		}
		waited := time.Since(start)
		if waited >= timeout {
			return fmt.Errorf("ledger %s: gave up after %v: %w (a gpuz process is stopped or stuck holding it; end it, or set %s to another file)",
				l.path, timeout, ErrLedgerLocked, LedgerEnv)
		}
		if !noticed && waited >= WaitNotice && l.opts.OnWait != nil {
			noticed = true
			l.opts.OnWait(l.path)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ledger %s: waiting for its lock: %w", l.path, ctx.Err())
		case <-time.After(lockPoll):
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

// parseLedger reads the entries of a ledger's text. A last line without
// its newline, with no end line before it, is a write cut short (a full
// disk under a gpuz that wrote the ledger without reserving its blocks;
// a process killed in the write): it is dropped, and the entries before it
// are read, rather than every later command refusing the ledger.
func parseLedger(text []byte) ([]LedgerEntry, error) {
	if !bytes.HasSuffix(text, []byte("\n")) && !bytes.Contains(text, []byte("\n"+ledgerEnd+"\n")) {
		text = text[:bytes.LastIndexByte(text, '\n')+1]
	}
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
		if len(entries) == MaxLedgerEntries {
			return nil, fmt.Errorf("more than %d entries, the most a ledger takes", MaxLedgerEntries)
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
// tell it; the ledger then refuses to work (transact), since no entry of
// its would be found live.
func currentProcess() process {
	selfOnce.Do(func() {
		self.pid = os.Getpid()
		if st, err := readStat(self.pid); err == nil {
			self.start = st.start
		}
	})
	return self
}

// liveProcess is what the ledger learns of an entry's pid: whether it
// runs (and is not a zombie) and its start time.
type liveProcess struct {
	ok    bool
	start uint64
}

// readProcess describes the process pid from /proc. An entry is live only
// when its pid runs and started when the entry says: a start time that
// cannot be read, or 0, is no licence to trust the pid, which let anyone
// hold the device for ever with an entry for pid 1.
func readProcess(pid int) liveProcess {
	st, err := readStat(pid)
	if err != nil || st.state == 'Z' || st.state == 'X' {
		return liveProcess{}
	}
	return liveProcess{ok: true, start: st.start}
}

// withUsers returns a copy of entries, each with the user its process runs
// as (the owner of /proc/PID; "?" when that cannot be read). Only what is
// shown needs them: looking a user up may ask a directory service.
func withUsers(entries []LedgerEntry) []LedgerEntry {
	out := make([]LedgerEntry, len(entries))
	names := map[uint32]string{}
	for i, e := range entries {
		e.User = "?"
		if fi, err := os.Stat(fmt.Sprintf("/proc/%d", e.PID)); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				if _, ok := names[st.Uid]; !ok {
					names[st.Uid] = userName(int(st.Uid))
				}
				e.User = names[st.Uid]
			}
		}
		out[i] = e
	}
	return out
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
