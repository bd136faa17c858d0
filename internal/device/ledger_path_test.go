package device

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestLedgerRefusesSymlink plants the ledger's path as a symbolic link to
// a victim file holding only comments and blank lines, at the default path
// and at a path the user chose: every access is refused naming the link,
// and the victim is left as it was (the ledger used to follow the link and
// overwrite it).
func TestLedgerRefusesSymlink(t *testing.T) {
	for _, chosen := range []bool{false, true} {
		dir := t.TempDir()
		victim := filepath.Join(dir, "victim")
		const notes = "# my notes\n\n# keep this\n"
		if err := os.WriteFile(victim, []byte(notes), 0o644); err != nil {
			t.Fatal(err)
		}
		l := ledgerIn(t, dir, chosen)
		if err := os.Symlink(victim, l.Path()); err != nil {
			t.Fatal(err)
		}
		err := l.Set(1, "x")
		if err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), l.Path()) {
			t.Errorf("chosen %v: Set on a ledger that is a link: %v, want it refused naming the link", chosen, err)
		}
		if _, err := l.Others(); err == nil {
			t.Errorf("chosen %v: Others on a ledger that is a link succeeded", chosen)
		}
		if got, err := os.ReadFile(victim); err != nil || string(got) != notes {
			t.Errorf("chosen %v: the victim holds %q, %v; want it unchanged", chosen, got, err)
		}
	}
}

// TestLedgerRefusesForeignFile points the ledger at files that are not a
// gpuz ledger (one holding only comments and blank lines, one holding
// text): each is refused, named, and left as it was. An empty file is a
// new ledger.
func TestLedgerRefusesForeignFile(t *testing.T) {
	for _, text := range []string{"# my notes\n\n# keep this\n", "\n\n", "export PATH=/bin\n"} {
		path := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		err := OpenLedger(path).Set(1, "x")
		if err == nil || !strings.Contains(err.Error(), "not a gpuz ledger") || !strings.Contains(err.Error(), path) {
			t.Errorf("Set on a file holding %q: %v, want it refused as not a gpuz ledger", text, err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != text {
			t.Errorf("the file holds %q, %v; want %q", got, err, text)
		}
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := OpenLedger(empty).Set(1, "x"); err != nil {
		t.Errorf("Set on an empty file: %v, want it taken as a new ledger", err)
	}
}

// TestLedgerOtherOwner gives the ledger file to another user: at the
// default path it is refused (another user planted it), at a path the
// user chose it is shared. A default ledger with a second hard link is
// refused too. Changing a file's owner needs root.
func TestLedgerOtherOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	const nobody = 65534
	for _, chosen := range []bool{false, true} {
		dir := t.TempDir()
		l := ledgerIn(t, dir, chosen)
		if err := os.WriteFile(l.Path(), nil, 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(l.Path(), nobody, nobody); err != nil {
			t.Fatal(err)
		}
		err := l.Set(1, "x")
		switch {
		case chosen && err != nil:
			t.Errorf("a chosen ledger owned by another user: %v, want it shared", err)
		case !chosen && (err == nil || !strings.Contains(err.Error(), "owned by")):
			t.Errorf("a default ledger owned by another user: %v, want it refused", err)
		}
	}
	t.Setenv(LedgerEnv, "")
	dir := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", dir)
	l := OpenLedger("")
	if err := os.WriteFile(l.Path(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(l.Path(), filepath.Join(dir, "other")); err != nil {
		t.Fatal(err)
	}
	if err := l.Set(1, "x"); err == nil || !strings.Contains(err.Error(), "link") {
		t.Errorf("a default ledger with two links: %v, want it refused", err)
	}
}

// TestLedgerCreatedMode creates ledgers under a permissive umask: the
// default one is this user's alone (0600); one the user chose follows the
// umask, so that sharing it is the user's choice.
func TestLedgerCreatedMode(t *testing.T) {
	old := syscall.Umask(0o002)
	defer syscall.Umask(old)
	t.Setenv(LedgerEnv, "")
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	for _, tt := range []struct {
		name string
		l    *Ledger
		want os.FileMode
	}{
		{"default", OpenLedger(""), 0o600},
		{"chosen", OpenLedger(filepath.Join(t.TempDir(), "ledger")), 0o664},
	} {
		if err := tt.l.Set(1, "x"); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(tt.l.Path())
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != tt.want {
			t.Errorf("%s ledger created %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestDefaultLedgerPath checks where the ledger lives: $GPUZ_SIM_LEDGER
// when set; else in $XDG_RUNTIME_DIR when that is a directory of this
// user's that no other user can write; else a per-user name in the
// temporary directory.
func TestDefaultLedgerPath(t *testing.T) {
	uid := strconv.Itoa(os.Geteuid())
	perUser := filepath.Join(os.TempDir(), "gpuz-sim-ledger-"+uid)
	runtime := t.TempDir()
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, env, xdg string
		want           string
		chosen         bool
	}{
		{"GPUZ_SIM_LEDGER", "/some/where", runtime, "/some/where", true},
		{"XDG_RUNTIME_DIR", "", runtime, filepath.Join(runtime, "gpuz-sim-ledger"), false},
		{"no XDG_RUNTIME_DIR", "", "", perUser, false},
		{"relative XDG_RUNTIME_DIR", "", "run/user", perUser, false},
		{"missing XDG_RUNTIME_DIR", "", filepath.Join(runtime, "missing"), perUser, false},
		{"XDG_RUNTIME_DIR writable by all", "", open, perUser, false},
		{"XDG_RUNTIME_DIR a file", "", file, perUser, false},
	} {
		t.Setenv(LedgerEnv, tt.env)
		t.Setenv("XDG_RUNTIME_DIR", tt.xdg)
		if got := DefaultLedgerPath(); got != tt.want {
			t.Errorf("%s: DefaultLedgerPath() = %q, want %q", tt.name, got, tt.want)
		}
		if l := OpenLedger(""); l.Path() != tt.want || l.chosen != tt.chosen {
			t.Errorf(`%s: OpenLedger("") at %q, chosen %v; want %q, %v`, tt.name, l.Path(), l.chosen, tt.want, tt.chosen)
		}
	}
}

// ledgerIn opens a ledger in dir: one the user chose by its path when
// chosen is set, else the per-user default, dir standing for
// $XDG_RUNTIME_DIR.
func ledgerIn(t *testing.T, dir string, chosen bool) *Ledger {
	if chosen {
		return OpenLedger(filepath.Join(dir, "ledger"))
	}
	t.Setenv(LedgerEnv, "")
	t.Setenv("XDG_RUNTIME_DIR", dir)
	return OpenLedger("")
}
