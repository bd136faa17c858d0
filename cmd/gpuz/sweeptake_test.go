package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuz/internal/device"
)

// TestSweepOverTakeSaysEachHeld: a sweep over --take (0 then 1 MiB, and
// 1 then 2 MiB) does not report the first configuration's take as what
// the run held: the header says the take is each configuration's, the
// JSON header carries no take_bytes, and each row's take_bytes is its
// own. A sweep over something else with one --take still says it once.
// Before, the header said "held: 1.00 MiB" (or nothing) and the JSON
// header take_bytes 1048576 (or none) for the whole sweep.
func TestSweepOverTakeSaysEachHeld(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(device.LedgerEnv, filepath.Join(dir, "ledger"))
	for _, tt := range []struct {
		take, epochs string
		line         string  // the header's held line
		header       float64 // the JSON header's take_bytes (0: absent)
		rows         []float64
	}{
		{"0,1MiB", "2", "held: each configuration's --take on sim:256MiB (the take column)\n", 0, []float64{0, 1 << 20}},
		{"1MiB,2MiB", "2", "held: each configuration's --take on sim:256MiB (the take column)\n", 0, []float64{1 << 20, 2 << 20}},
		{"1MiB", "2,3", "held: 1.00 MiB on sim:256MiB by --take\n", 1 << 20, []float64{1 << 20, 1 << 20}},
	} {
		t.Run(tt.take+"/"+tt.epochs, func(t *testing.T) {
			path := filepath.Join(dir, "r.json")
			args := []string{"linear", "train", "cuda", "--scale", "small", "--device", "sim:256MiB", "--epochs", tt.epochs, "--take", tt.take, "--json", path}
			var stdout, stderr strings.Builder
			if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
				t.Fatalf("gpuz %s: status %d: %s", strings.Join(args, " "), code, stderr.String())
			}
			if got := strings.Count(stdout.String(), "held: "); got != 1 || !strings.Contains(stdout.String(), tt.line) {
				t.Errorf("--take %s: %d held lines in\n%s\nwant one, %q", tt.take, got, stdout.String(), tt.line)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Header map[string]any `json:"header"`
				Rows   []struct {
					TakeBytes float64 `json:"take_bytes"`
				} `json:"rows"`
			}
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			got, present := doc.Header["take_bytes"]
			if tt.header == 0 && present || tt.header != 0 && got != tt.header {
				t.Errorf("--take %s: JSON header take_bytes %v (present %v); want %v", tt.take, got, present, tt.header)
			}
			var rows []float64
			for _, r := range doc.Rows {
				rows = append(rows, r.TakeBytes)
			}
			if len(rows) != len(tt.rows) || rows[0] != tt.rows[0] || rows[1] != tt.rows[1] {
				t.Errorf("--take %s: rows' take_bytes %v, want %v", tt.take, rows, tt.rows)
			}
		})
	}
}

// TestFitCPUProfile: fit --cpuprofile FILE, which fit's help offers,
// writes a profile, and one that cannot be written (/dev/full) fails the
// command with status 1 after the fit is printed. It wrote nothing and
// exited 0.
func TestFitCPUProfile(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no calibrated profile
	path := filepath.Join(t.TempDir(), "fit.prof")
	fit := []string{"fit", "linear", "train", "--scale", "small", "--device", "sim:64MiB", "--host-profile", "cpu-i7-13700h", "--cpuprofile"}
	var stdout, stderr strings.Builder
	if code := run(context.Background(), append(fit, path), &stdout, &stderr); code != 0 {
		t.Fatalf("fit --cpuprofile %s: status %d: %s", path, code, stderr.String())
	}
	// A pprof profile is gzip-compressed protocol buffers.
	if data, err := os.ReadFile(path); err != nil || len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		t.Errorf("fit --cpuprofile wrote %d bytes (%v), want a gzip-compressed profile", len(data), err)
	}
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	stdout.Reset()
	stderr.Reset()
	code := run(context.Background(), append(fit, "/dev/full"), &stdout, &stderr)
	if code != exitFailure || !strings.Contains(stderr.String(), "writing the CPU profile to /dev/full: ") || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("fit --cpuprofile /dev/full: status %d, stderr %q; want %d and one line with the profile's write error", code, stderr.String(), exitFailure)
	}
	if !strings.Contains(stdout.String(), "cuda") {
		t.Errorf("the fit was not printed:\n%s", stdout.String())
	}
}
