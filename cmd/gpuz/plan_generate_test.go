package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var updatePlan = flag.Bool("update-plan", false, "rewrite the generation plan's golden files in testdata")

// TestPlanGenerateGolden writes a generation's plan as text and as
// Markdown, each against its golden file: the sizes, the placements'
// table and the decode table with its predictions, on a profiled
// simulated device and the laptop's host (--host-memory, so that this
// machine's memory does not enter it).
func TestPlanGenerateGolden(t *testing.T) {
	for _, format := range []string{"text", "markdown"} {
		t.Run(format, func(t *testing.T) {
			privateLedger(t)
			t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no gpuz calibrate profile
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"plan", "llm", "generate", "cuda,cache,hybrid,cpu", "--model", "smollm2-135m",
				"--layers", "2", "--prompt", "16", "--tokens", "4", "--device", "sim:rtx4060-laptop", "--host-profile", "cpu-i7-13700h",
				"--host-memory", "16GiB", "--place", "host:0,cuda:1-3", "--format", format}, &stdout, &stderr)
			if code != 0 {
				t.Fatalf("status %d: %s", code, stderr.String())
			}
			path := filepath.Join("testdata", "plan-generate."+format)
			if *updatePlan {
				if err := os.WriteFile(path, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := string(readFile(t, path)); stdout.String() != want {
				t.Errorf("output differs from %s (go test -run TestPlanGenerateGolden -update-plan rewrites it)\ngot:\n%s\nwant:\n%s", path, stdout.String(), want)
			}
		})
	}
}
