package main

import (
	"strings"
	"testing"
)

// TestFitNothingFitsHostLimit fits a linear model of 4.85 TiB on a
// simulated device of 1 TiB: configurations fit the device but none the
// host, and the one line says the host is the limit, with the least host
// need found and the device need within the free memory (it said "the
// smallest device need found is 148 GiB …, 973 GiB free", as if the
// device were the limit).
func TestFitNothingFitsHostLimit(t *testing.T) {
	code, out, errOut := fitOnSim(t, "linear", "train", "--device", "sim:1TiB", "--dims", "60000")
	if code != exitIncomplete {
		t.Errorf("status %d, want %d", code, exitIncomplete)
	}
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	want := "gpuz: nothing fits: the host's memory is the limit: the least host need found on sim:1TiB is 4.85 TiB ("
	if len(lines) != 1 || !strings.HasPrefix(lines[0], want) || !strings.Contains(lines[0], "within the 973 GiB free after the 5% margin") ||
		!strings.Contains(lines[0], " available") {
		t.Errorf("stderr %q, want one line starting %q and saying the device need is within the free memory", errOut, want)
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing", out)
	}
}
