package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestIntegerFlagsDecimal: every integer flag, single-value (--warmup,
// --seed, --threads, fit's --verify, calibrate's --threads and --rounds)
// and list (--epochs, --dims, --win-size …) alike, reads decimal digits:
// a leading zero is still decimal (010 is 10, not octal 8), and Go's other
// literals (0x10, 0o10, 0b1, 1_0) are refused with one line, status 2.
// Single-value flags read Go literals before (--threads 011 was 9, --seed
// 1_0 was 10) while list flags read decimals. Float flags (--lr,
// --margin, --lora-alpha) read decimal numbers: --lr 1_0e-4 was 1e-3 and
// 0x1p3 was 8.
func TestIntegerFlagsDecimal(t *testing.T) {
	plan := []string{"plan", "linear", "train", "cpu", "--scale", "small"}
	fit := []string{"fit", "linear", "train", "--scale", "small", "--device", "sim:64MiB", "--host-profile", "cpu-i7-13700h"}
	with := func(base []string, more ...string) []string { return append(append([]string{}, base...), more...) }
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in the one line on stderr; "" for none
	}{
		{"leading zero is decimal", with(plan, "--threads", "0999"), exitUsage, "got 999"},
		{"leading zero, another", with(plan, "--threads", "011"), exitUsage, "got 11"},
		{"leading zero runs", with(plan, "--seed", "010", "--warmup", "01"), exitOK, ""},
		{"hex threads", with(plan, "--threads", "0x1000"), exitUsage, `invalid argument "0x1000"`},
		{"octal prefix warmup", with(plan, "--warmup", "0o1"), exitUsage, `invalid argument "0o1"`},
		{"binary seed", with(plan, "--seed", "0b1"), exitUsage, `invalid argument "0b1"`},
		{"underscore seed", with(plan, "--seed", "1_0"), exitUsage, `invalid argument "1_0"`},
		{"hex verify", with(fit, "--verify", "0x0"), exitUsage, `invalid argument "0x0"`},
		{"calibrate hex rounds", []string{"calibrate", "--rounds", "0x100"}, exitUsage, `invalid argument "0x100"`},
		{"calibrate underscore threads", []string{"calibrate", "--threads", "1_000"}, exitUsage, `invalid argument "1_000"`},
		{"hex list", with(plan, "--epochs", "0x10"), exitUsage, `invalid argument "0x10"`},
		{"underscore list", with(plan, "--dims", "1_0,20"), exitUsage, `invalid argument "1_0"`},
		{"hex in a sweep", with(plan, "--epochs", "2,0x3"), exitUsage, `invalid argument "0x3"`},
		{"underscore lr", with(plan, "--lr", "1_0e-4"), exitUsage, `invalid argument "1_0e-4"`},
		{"hex float lr", with(plan, "--lr", "0x1p3"), exitUsage, `invalid argument "0x1p3"`},
		{"two signs lr", with(plan, "--lr", "--1e-3"), exitUsage, `invalid argument "--1e-3"`},
		{"empty exponent lr", with(plan, "--lr", "1e"), exitUsage, `invalid argument "1e"`},
		{"lone point lr", with(plan, "--lr", "."), exitUsage, `invalid argument "."`},
		{"decimal forms run", with(plan, "--lr", "+.5E-3"), exitOK, ""},
		{"point forms run", with(plan, "--lr", "5."), exitOK, ""},
		{"hex margin", with(fit, "--margin", "0x10"), exitUsage, `invalid argument "0x10"`},
		{"underscore lora alpha", with(plan, "--lora", "2", "--lora-alpha", "1_6"), exitUsage, `invalid argument "1_6"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("gpuz %q: status %d, stderr %q; want %d", tc.args, code, stderr.String(), tc.code)
			}
			if tc.want == "" {
				return
			}
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Errorf("gpuz %q: stderr %q; want one line with %q", tc.args, stderr.String(), tc.want)
			}
			if strings.HasPrefix(tc.want, "invalid argument") && !strings.Contains(lines[0], "decimal") {
				t.Errorf("gpuz %q: stderr %q does not say a decimal number is wanted", tc.args, stderr.String())
			}
		})
	}
}
