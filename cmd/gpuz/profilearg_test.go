package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"gpuz/internal/perfmodel"
)

// TestProfileArgReadsBack: the path calibrate suggests for --host-profile
// and --device sim: opens the file it wrote, from the directory it was
// written in, for a bare name (prof: taken before for a built-in profile,
// so the suggestion failed), a name with an extension other than .json, a
// relative and an absolute path.
func TestProfileArgReadsBack(t *testing.T) {
	host, err := perfmodel.LookupHost("cpu-i7-13700h")
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(host)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("sub", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{"prof", "./prof"},
		{"prof.txt", "./prof.txt"},
		{"prof.json", "prof.json"},
		{"sub/prof", "sub/prof"},
		{filepath.Join(dir, "abs"), filepath.Join(dir, "abs")},
	} {
		t.Run(tc.path, func(t *testing.T) {
			if err := os.WriteFile(tc.path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			arg := profileArg(tc.path)
			if arg != tc.want {
				t.Errorf("profileArg(%q) = %q, want %q", tc.path, arg, tc.want)
			}
			if _, err := perfmodel.OpenHost(arg); err != nil {
				t.Errorf("--host-profile %s: %v", arg, err)
			}
			if _, err := perfmodel.Open(arg); err != nil {
				t.Errorf("--device sim:%s: %v", arg, err)
			}
		})
	}
}
