package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchNames returns the benchmark names in a --bench-out file.
func benchNames(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "Benchmark") {
			names[strings.Fields(line)[0]] = true
		}
	}
	return names
}

// TestSweepBenchNamesMatchPlainRuns: the benchmark names of a sweep over
// --precision or --recompute repeat none of their keys, and each plain run
// of one of the sweep's values names its lines as the sweep's row does, so
// gpuz compare pairs them. They were
// ".../precision=bf16/scale=small/precision=bf16" against a plain run's
// ".../precision=bf16/scale=small", and a sweep's fp32 row added
// "/precision=fp32" that no plain run has.
func TestSweepBenchNamesMatchPlainRuns(t *testing.T) {
	dir := t.TempDir()
	base := []string{"linear", "train", "cpu", "--scale", "small", "--epochs", "2", "--threads", "1"}
	for _, tc := range []struct {
		flag  string
		sweep string
		plain []string
	}{
		{"--precision", "fp32,bf16", []string{"fp32", "bf16"}},
		{"--recompute", "none,blocks", []string{"none", "blocks"}},
		{"--lora", "0,4", []string{"0", "4"}},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			runTo := func(value, name string) map[string]bool {
				path := filepath.Join(dir, name)
				args := append(append([]string{}, base...), tc.flag, value, "--bench-out", path)
				var stdout, stderr strings.Builder
				if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
					t.Fatalf("gpuz %q: status %d: %s", args, code, stderr.String())
				}
				return benchNames(t, path)
			}
			swept := runTo(tc.sweep, "sweep.txt")
			for name := range swept {
				seen := map[string]bool{}
				for _, part := range strings.Split(name, "/")[1:] {
					key, _, _ := strings.Cut(part, "=")
					if seen[key] {
						t.Errorf("sweep name %s repeats %s", name, key)
					}
					seen[key] = true
				}
			}
			for _, v := range tc.plain {
				for name := range runTo(v, v+".txt") {
					if !swept[name] {
						t.Errorf("%s %s: plain run's name %s is none of the sweep's %v", tc.flag, v, name, swept)
					}
				}
			}
		})
	}
}
