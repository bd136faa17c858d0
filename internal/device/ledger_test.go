package device

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv, when set to "PATH BYTES", makes TestLedgerHelperProcess act
// as a second process: it records BYTES in the ledger at PATH, prints
// "ready", and removes its entry when its standard input closes.
const helperEnv = "GPUZ_TEST_LEDGER_HELPER"

func TestLedgerHelperProcess(t *testing.T) {
	arg := os.Getenv(helperEnv)
	if arg == "" {
		t.Skip("runs only as the helper process of the ledger tests")
	}
	path, n, _ := strings.Cut(arg, " ")
	bytes, err := strconv.ParseInt(n, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	l := OpenLedger(path)
	if err := l.Set(bytes, "helper"); err != nil {
		t.Fatal(err)
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	if err := l.Set(0, "helper"); err != nil {
		t.Fatal(err)
	}
}

// startHelper starts the test binary as a second process holding bytes in
// the ledger at path, and waits until it has recorded them. Closing the
// returned writer makes it remove its entry and exit.
func startHelper(t *testing.T, path string, bytes int64) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLedgerHelperProcess$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d", helperEnv, path, bytes))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("helper said %q, %v; want ready", line, err)
	}
	return cmd, stdin
}

// TestLedgerTwoProcesses checks that a simulated device sees the memory
// another process records, and no longer once it has removed it.
func TestLedgerTwoProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	cmd, stdin := startHelper(t, path, 700)

	ledger := OpenLedger(path)
	entries, err := ledger.Entries()
	if err != nil || len(entries) != 1 || entries[0].PID != cmd.Process.Pid || entries[0].Bytes != 700 || entries[0].Label != "helper" {
		t.Fatalf("entries %+v, %v; want the helper's 700 bytes", entries, err)
	}
	sim := NewSim(1000, ledger)
	if free, _, err := sim.MemInfo(); err != nil || free != 300 {
		t.Errorf("MemInfo: %d free, %v; want 300", free, err)
	}
	_, err = sim.Alloc(100)
	var oom *OutOfMemoryError
	if !errors.As(err, &oom) || oom.Free != 300 || oom.Requested != 400 {
		t.Errorf("Alloc(100) with 300 bytes free: %v, want out of memory with 300 free", err)
	}
	b, err := sim.Alloc(75)
	if err != nil {
		t.Fatalf("Alloc(75) with 300 bytes free: %v", err)
	}
	if others, err := ledger.Others(); err != nil || others != 1000 {
		t.Errorf("Others = %d, %v; want the helper's 700 + the sim's 300", others, err)
	}

	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	if others, err := ledger.Others(); err != nil || others != 300 {
		t.Errorf("after the helper left, Others = %d, %v; want the sim's 300", others, err)
	}
	if free, _, err := sim.MemInfo(); err != nil || free != 700 {
		t.Errorf("after the helper left, MemInfo: %d free, %v; want 700", free, err)
	}
	sim.Free(b)
	if entries, err := ledger.Entries(); err != nil || len(entries) != 0 {
		t.Errorf("entries %+v, %v; want none", entries, err)
	}
}

// TestLedgerReclaimsKilled kills a holder without letting it clean up: its
// entry is dropped on the next read, both while it is a zombie (not yet
// waited for) and once it is gone.
func TestLedgerReclaimsKilled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	ledger := OpenLedger(path)
	for _, reap := range []bool{false, true} {
		cmd, _ := startHelper(t, path, 500)
		if others, err := ledger.Others(); err != nil || others != 500 {
			t.Fatalf("Others = %d, %v; want 500", others, err)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if reap {
			cmd.Wait()
		} else {
			waitZombie(t, cmd.Process.Pid)
		}
		if others, err := ledger.Others(); err != nil || others != 0 {
			t.Errorf("reaped %v: after SIGKILL Others = %d, %v; want 0", reap, others, err)
		}
		if text, err := os.ReadFile(path); err != nil || string(text) != ledgerHeader+"\n"+ledgerEnd+"\n" {
			t.Errorf("reaped %v: the ledger file holds %q, %v; want no entries", reap, text, err)
		}
		cmd.Wait()
	}
}

// waitZombie waits until process pid has exited and is not yet reaped,
// failing the test after a generous minute.
func waitZombie(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if st, err := readStat(pid); err == nil && st.state == 'Z' {
			return
		}
	}
	t.Fatalf("process %d did not become a zombie within a minute", pid)
}

// TestLedgerReclaimsStale writes entries of processes that do not run, and
// entries whose pid runs but whose start time is not the process's: a
// reused pid, and start time 0, which is no licence to trust the pid
// (an entry for pid 1 with start 0 held the memory for ever). Every read
// drops them and keeps the live one.
func TestLedgerReclaimsStale(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	self := currentProcess()
	if self.start == 0 {
		t.Skip("/proc gives no start time here")
	}
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	live := LedgerEntry{PID: self.pid, Start: self.start, Holder: 1 << 40, Bytes: 7, Label: "live"}
	stale := []LedgerEntry{
		live,
		{PID: self.pid, Start: self.start - 1, Holder: 1, Bytes: 100, Label: "reused pid"},
		{PID: exited.Process.Pid, Start: 1, Holder: 1, Bytes: 200, Label: "exited"},
		{PID: self.pid, Start: 0, Holder: 2, Bytes: 300, Label: "start 0"},
		{PID: 1, Start: 0, Holder: 1, Bytes: 400, Label: "pid 1 start 0"},
	}
	if err := os.WriteFile(path, formatLedger(stale), 0o666); err != nil {
		t.Fatal(err)
	}
	entries, err := OpenLedger(path).Entries()
	want := live
	want.User = userName(os.Geteuid())
	if err != nil || len(entries) != 1 || entries[0] != want {
		t.Errorf("entries %+v, %v; want only %+v", entries, err, want)
	}
	text, err := os.ReadFile(path)
	if err != nil || strings.Count(string(text), "\n") != 3 {
		t.Errorf("the file still holds stale entries: %q, %v", text, err)
	}
}

// TestLedgerHolders checks that two holders of one process see each other
// and that Set replaces and removes a holder's own entry.
func TestLedgerHolders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	a, b := OpenLedger(path), OpenLedger(path)
	steps := []struct {
		l            *Ledger
		bytes        int64
		label        string
		aSees, bSees int64
	}{
		{a, 100, "a", 0, 100},
		{b, 30, "b", 30, 100},
		{a, 50, "a\tnew\nlabel", 30, 50},
		{a, 0, "a", 30, 0},
		{b, 0, "b", 0, 0},
	}
	for i, s := range steps {
		if err := s.l.Set(s.bytes, s.label); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		aSees, errA := a.Others()
		bSees, errB := b.Others()
		if err := errors.Join(errA, errB); err != nil || aSees != s.aSees || bSees != s.bSees {
			t.Errorf("step %d: a sees %d, b sees %d (%v); want %d, %d", i, aSees, bSees, err, s.aSees, s.bSees)
		}
	}
	if err := a.Set(5, "a\tnew\nlabel"); err != nil {
		t.Fatal(err)
	}
	entries, err := b.Entries()
	if err != nil || len(entries) != 1 || entries[0].Label != "a new label" {
		t.Errorf("entries %+v, %v; want a's with tabs and newlines turned into spaces", entries, err)
	}
}

// TestLedgerTornWrite reads a file whose writer died between writing new
// entries over longer old ones and truncating it: what follows the end
// line is ignored, and the next write removes it.
func TestLedgerTornWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	self := currentProcess()
	e := LedgerEntry{PID: self.pid, Start: self.start, Holder: 1 << 40, Bytes: 7, Label: "live"}
	text := string(formatLedger([]LedgerEntry{e})) + "ld\tentry\tcut short\n"
	if err := os.WriteFile(path, []byte(text), 0o666); err != nil {
		t.Fatal(err)
	}
	l := OpenLedger(path)
	if others, err := l.Others(); err != nil || others != 7 {
		t.Errorf("Others = %d, %v; want 7", others, err)
	}
	if err := l.Set(1, "mine"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || strings.Contains(string(got), "cut short") || !strings.HasSuffix(string(got), ledgerEnd+"\n") {
		t.Errorf("after a write the file holds %q, %v", got, err)
	}
}

func TestLedgerMalformed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	if err := os.WriteFile(path, []byte(ledgerHeader+"\n12\tx\t1\t5\tlabel\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	_, err := OpenLedger(path).Others()
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("reading a malformed ledger: %v, want an error naming the file and the line", err)
	}
}
