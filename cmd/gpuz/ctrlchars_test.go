package main

import (
	"bytes"
	"context"
	"os"
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

// TestResultErrorsEscapeControls reads results files whose names hold
// control characters (JSON's \u001b is ESC) into errors that quote them
// (issue 36 item 8): a mode with a negative epoch time, a sweep over a
// parameter plot cannot draw, a sweep row's setting. The one line on
// standard error holds the names escaped, never raw.
func TestResultErrorsEscapeControls(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	negative := write("negative.json", `{"version": 2, "header": {"model": "m"}, "modes": [{"mode": "c\u001b[2Jpu", "epochs": [{"index": 0, "seconds": -1}]}]}`)
	param := write("param.json", `{"version": 2, "kind": "sweep", "parameters": ["ta\u001b]0;xke"], "rows": []}`)
	row := write("row.json", `{"version": 2, "kind": "sweep", "parameters": ["take"], "rows": [{"settings": {"take": "1\u0007MiB"}, "result": {"modes": [{"mode": "cpu", "epochs": [{"index": 0, "seconds": -1}]}]}}]}`)
	svg := filepath.Join(dir, "x.svg")
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"plot: a mode", []string{"plot", negative, "-o", svg}, `mode c\x1b[2Jpu, epoch 0`},
		{"compare: a mode", []string{"compare", negative, negative}, `mode c\x1b[2Jpu, epoch 0`},
		{"plot: a parameter", []string{"plot", param, "-o", svg}, `a sweep over ta\x1b]0;xke`},
		{"plot: a row's setting", []string{"plot", row, "-o", svg}, `row 0 (take=1\aMiB)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code == 0 || !strings.Contains(stderr.String(), tt.want) || strings.ContainsAny(stderr.String(), "\x1b\a") {
				t.Errorf("gpuz %s: status %d, stderr %q; want a failure quoting %q escaped", tt.args[0], code, stderr.String(), tt.want)
			}
		})
	}
}
