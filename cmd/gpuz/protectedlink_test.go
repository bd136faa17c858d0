package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProtectedSymlinks: an output path through a link planted by another
// user in a world-writable sticky directory is refused in one line, status
// 2, and the link's target is left as it was (the kernel's
// protected_symlinks rule); the caller's own link there, and any link in
// a directory that is not sticky, is written through as before. Before the
// check, --json through the planted link renamed over its target. The test
// needs root (to give the link another owner) and skips otherwise.
func TestProtectedSymlinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a link owned by another user")
	}
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	private := t.TempDir()
	victim := filepath.Join(private, "victim")
	const before = "the victim's contents\n"
	if err := os.WriteFile(victim, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	link := func(name string, uid int) string {
		p := filepath.Join(shared, name)
		if err := os.Symlink(victim, p); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(p, uid, uid); err != nil {
			t.Skipf("cannot give the link another owner: %v", err)
		}
		return p
	}
	planted := link("planted.json", 4242)
	plain := []string{"plan", "linear", "train", "cpu", "--scale", "small"}

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"json", append(append([]string{}, plain...), "--json", planted)},
		{"through a directory link", append(append([]string{}, plain...), "--json", filepath.Join(shared, "dirlink", "victim"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "through a directory link" {
				d := filepath.Join(shared, "dirlink")
				if err := os.Symlink(private, d); err != nil {
					t.Fatal(err)
				}
				if err := os.Lchown(d, 4242, 4242); err != nil {
					t.Fatal(err)
				}
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			if code != exitUsage || len(lines) != 1 || !strings.Contains(lines[0], "protected_symlinks") {
				t.Fatalf("gpuz %q: status %d, stderr %q; want %d and one line naming protected_symlinks", tc.args, code, stderr.String(), exitUsage)
			}
			if got, _ := os.ReadFile(victim); string(got) != before {
				t.Fatalf("the link's target was written: %q", got)
			}
		})
	}

	t.Run("own link written through", func(t *testing.T) {
		own := link("own.json", os.Geteuid())
		var stdout, stderr bytes.Buffer
		args := append(append([]string{}, plain...), "--json", own)
		if code := run(context.Background(), args, &stdout, &stderr); code != exitOK {
			t.Fatalf("gpuz %q: status %d, stderr %q", args, code, stderr.String())
		}
		if got, _ := os.ReadFile(victim); string(got) == before {
			t.Fatal("the caller's own link was not written through")
		}
	})
}
