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

// TestRunSaysTakeHeld runs with a single --take: the header printed before
// the epochs says the memory was held, how much and where, and so does the
// JSON's header (take_bytes); a run without --take says neither.
func TestRunSaysTakeHeld(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(device.LedgerEnv, filepath.Join(dir, "ledger"))
	for _, tt := range []struct {
		take string
		line string
		json float64
	}{
		{"", "", 0},
		{"1MiB", "held: 1.00 MiB on sim:256MiB by --take\n", 1 << 20},
	} {
		path := filepath.Join(dir, "r.json")
		args := []string{"linear", "train", "cuda,cpu", "--scale", "small", "--device", "sim:256MiB", "--json", path}
		if tt.take != "" {
			args = append(args, "--take", tt.take)
		}
		var stdout, stderr strings.Builder
		if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
			t.Fatalf("gpuz %s: status %d: %s", strings.Join(args, " "), code, stderr.String())
		}
		header, _, _ := strings.Cut(stdout.String(), "\n== ")
		if tt.line == "" && strings.Contains(header, "held:") || tt.line != "" && !strings.HasSuffix(header, tt.line) {
			t.Errorf("--take %q: header\n%s\nwant it to end with %q", tt.take, header, tt.line)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Header struct {
				TakeBytes float64 `json:"take_bytes"`
			} `json:"header"`
		}
		if err := json.Unmarshal(data, &doc); err != nil || doc.Header.TakeBytes != tt.json {
			t.Errorf("--take %q: JSON header take_bytes %v, %v; want %v", tt.take, doc.Header.TakeBytes, err, tt.json)
		}
	}
}
