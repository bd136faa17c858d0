package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchOutThenCompare runs the small linear workload twice with
// --bench-out and compares the two files: a table with the cpu and cache
// rows, status 0.
func TestBenchOutThenCompare(t *testing.T) {
	privateLedger(t)
	dir := t.TempDir()
	var files []string
	for _, name := range []string{"a.txt", "b.txt"} {
		path := filepath.Join(dir, name)
		files = append(files, path)
		var stdout, stderr strings.Builder
		argv := []string{"linear", "train", "cpu,cache", "--scale", "small", "--device", "sim:1GiB", "--threads", "1", "--bench-out", path}
		if code := run(context.Background(), argv, &stdout, &stderr); code != exitOK {
			t.Fatalf("%s: exit status %d: %s", strings.Join(argv, " "), code, stderr.String())
		}
		data := readFile(t, path)
		if n := strings.Count(string(data), "\nBenchmarkGpuz/"); n != 8 {
			t.Errorf("%s: %d benchmark lines, want 8 (4 timed epochs of 2 modes):\n%s", name, n, data)
		}
	}
	var stdout, stderr strings.Builder
	if code := run(context.Background(), []string{"compare", files[0], files[1]}, &stdout, &stderr); code != exitOK {
		t.Fatalf("compare: exit status %d: %s", code, stderr.String())
	}
	for _, want := range []string{"linear train, scale small", "\ncpu host ", "\ncache sim:1GiB window 3 ", "n=4"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("compare output lacks %q:\n%s", want, stdout.String())
		}
	}
}

// TestCompareBadInput: a wrong number of arguments, a missing file, an
// unreadable one and one without results are usage errors, one line each.
func TestCompareBadInput(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.txt")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", empty}, "two result files"},
		{[]string{"compare", missing, empty}, "no such file"},
		{[]string{"compare", empty, empty}, "no timed epochs"},
		{[]string{"compare", dir, empty}, "is a directory"},
	} {
		var stdout, stderr strings.Builder
		code := run(context.Background(), tc.args, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%q: exit status %d, stderr %q; want %d and one line with %q", tc.args, code, stderr.String(), exitUsage, tc.want)
		}
	}
}
