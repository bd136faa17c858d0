package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDataSetBeyondHost runs a workload whose data set (40M × 4096
// float32, 610 GiB) no host here holds: the run must skip the mode, naming
// the data set, instead of dying out of memory making it, and plan must
// count it in the host need and say it does not fit.
func TestDataSetBeyondHost(t *testing.T) {
	args := []string{"linear", "train", "cpu", "--scale", "small", "--dims", "4096", "--samples", "40000000", "--batch", "4", "--device", "cpu"}
	out, err := exec.Command(gpuzBinary, args...).CombinedOutput()
	if code := exitCode(err); code != exitIncomplete {
		t.Fatalf("gpuz %q: exit status %d, want %d (a mode did not complete)\n%s", args, code, exitIncomplete, out)
	}
	if !strings.Contains(string(out), "skipped: the data set needs 610 GiB of host memory") {
		t.Errorf("output lacks the data set's skip:\n%s", out)
	}
	out, err = exec.Command(gpuzBinary, append([]string{"plan"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("gpuz plan %q: %v\n%s", args, err, out)
	}
	if !strings.Contains(string(out), " 612 GiB ") || !strings.Contains(string(out), "  no: ") {
		t.Errorf("plan does not count the data set in the host need:\n%s", out)
	}
}
