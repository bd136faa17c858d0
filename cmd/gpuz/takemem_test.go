package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"gpuz/internal/device"
)

// TestTakeMemRun runs take-mem in-process, with memory already taken by
// another holder of the ledger.
func TestTakeMemRun(t *testing.T) {
	path := privateLedger(t)
	other := device.OpenLedger(path)
	if err := other.Set(512<<20, "another holder"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{
			args: []string{"take-mem", "256MiB", "--device", "sim:1GiB", "--for", "1ms"},
			stdout: []string{
				"holding 256 MiB on sim:1GiB",
				"free on sim:1GiB: 512 MiB before, 256 MiB now",
				"releasing after 1ms or on Ctrl-C",
				"released 256 MiB on sim:1GiB; 512 MiB free",
			},
		},
		{
			args:   []string{"take-mem", "4", "--device", "sim:1GiB"},
			code:   exitFailure,
			stderr: "gpuz: sim:1GiB: not enough free memory: needs 611 MiB (4 linear blocks), 512 MiB of 1.00 GiB free\n",
		},
		{
			args: []string{"take-mem", "1", "--for", "1ms"},
			stdout: []string{"warning: " + device.AutoWarning, "holding 1 linear block = 153 MiB on sim:8GiB",
				"free on sim:8GiB: 7.50 GiB before, 7.35 GiB now"},
		},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tt.args, &stdout, &stderr)
		if code != tt.code || stderr.String() != tt.stderr {
			t.Errorf("gpuz %s: exit status %d, stderr %q; want %d, %q", strings.Join(tt.args, " "), code, stderr.String(), tt.code, tt.stderr)
		}
		rest := stdout.String() // the lines must come in order, the first first
		if len(tt.stdout) > 0 && !strings.HasPrefix(rest, tt.stdout[0]+"\n") {
			t.Errorf("gpuz %s: output does not start with %q:\n%s", strings.Join(tt.args, " "), tt.stdout[0], rest)
		}
		for _, want := range tt.stdout {
			_, after, ok := strings.Cut(rest, want+"\n")
			if !ok {
				t.Errorf("gpuz %s: output lacks %q after the lines before it:\n%s", strings.Join(tt.args, " "), want, stdout.String())
				break
			}
			rest = after
		}
		if tt.stdout == nil && stdout.Len() != 0 {
			t.Errorf("gpuz %s: output %q, want none", strings.Join(tt.args, " "), stdout.String())
		}
	}
	if entries, err := other.Entries(); err != nil || len(entries) != 1 || entries[0].Label != "another holder" {
		t.Errorf("after take-mem the ledger holds %+v, %v; want only the other holder", entries, err)
	}
}
