package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"gpuz/internal/device"
)

// TestTakeMemListEscapesLabels checks that take-mem --list prints another
// holder's label, written to the shared ledger by another process, with its
// control characters escaped (ESC [2J, BEL, a bidi override, a C1 CSI raw
// and encoded; the ledger itself turns CR into a space and a byte that
// is not UTF-8 into U+FFFD).
func TestTakeMemListEscapesLabels(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	t.Setenv(device.LedgerEnv, path)
	for _, tt := range []struct{ name, label, want string }{
		{"ESC [2J", "x\x1b[2Jy", `x\x1b[2Jy`},
		{"BEL", "x\ay", `x\ay`},
		{"bidi override", "x\u202ey", `x\u202ey`},
		{"C1 CSI byte", "x\x9b2Jy", "x\ufffd2Jy"}, // the ledger stores it as U+FFFD
		{"C1 CSI rune", "x\u009b2Jy", `x\u009b2Jy`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := device.OpenLedger(path)
			if err := l.Set(1<<20, tt.label); err != nil {
				t.Fatal(err)
			}
			defer l.Set(0, "")
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"take-mem", "--list", "--device", "sim:1GiB"}, &stdout, &stderr)
			if code != 0 || !strings.Contains(stdout.String(), "holds 1.00 MiB: "+tt.want+"\n") {
				t.Errorf("take-mem --list: exit status %d, stdout %q, stderr %q; want the label as %q", code, stdout.String(), stderr.String(), tt.want)
			}
		})
	}
}
