package sysinfo

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCommandLine(t *testing.T) {
	got := CommandLine([]string{"gpuz", "linear", "train", "cpu,cache", "--json", "my results.json", "", "it's", "--lr=1e-4"})
	want := `gpuz linear train cpu,cache --json 'my results.json' '' 'it'\''s' --lr=1e-4`
	if got != want {
		t.Errorf("CommandLine = %s, want %s", got, want)
	}
}

// TestProcFiles reads the CPU model and the memory from files in /proc's
// formats, and says Unknown for what is missing.
func TestProcFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cpuinfo := write("cpuinfo", "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD  EPYC 7B13 64-Core Processor\n\nprocessor\t: 1\nmodel name\t: other\n")
	meminfo := write("meminfo", "MemTotal:       16384 kB\nMemFree:        1024 kB\n")
	osrelease := write("osrelease", "6.8.0-45-generic\n")
	if got := cpuModel(cpuinfo); got != "AMD EPYC 7B13 64-Core Processor" {
		t.Errorf("cpuModel = %q", got)
	}
	if got := memTotal(meminfo); got != 16384<<10 {
		t.Errorf("memTotal = %d", got)
	}
	if got := kernelRelease(osrelease); got != "6.8.0-45-generic" {
		t.Errorf("kernelRelease = %q", got)
	}
	missing := filepath.Join(dir, "missing")
	if cpuModel(missing) != Unknown || memTotal(missing) != 0 || kernelRelease(missing) != Unknown {
		t.Errorf("a missing file must give Unknown (0 bytes)")
	}
}

// TestReadBuild: under go test the VCS fields are not stamped and say
// Unknown; the Go version is always known.
func TestReadBuild(t *testing.T) {
	b := ReadBuild()
	if b.GoVersion == "" || b.Version != Version {
		t.Errorf("ReadBuild = %+v", b)
	}
	if b.Revision == "" || b.Time == "" || b.Modified == "" {
		t.Errorf("empty VCS fields, want a value or %q: %+v", Unknown, b)
	}
	if got := (Build{Revision: "0123456789abcdef", Modified: "true"}).ShortRevision(); got != "0123456789ab-dirty" {
		t.Errorf("ShortRevision = %q", got)
	}
}
