package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestHugeSizes runs the built binary on sizes whose products overflow
// int64 or would build a graph for minutes: each must exit with status 2
// and one line on stderr naming the problem, before anything is made: no
// panic, no goroutine dump, nothing on stdout. plan checks the same sizes.
func TestHugeSizes(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // in the error line
	}{
		{"linear dims max int", []string{"linear", "train", "cpu", "--dims", "9223372036854775807"}, "the model is too large: over 2⁴⁰ parameters"},
		{"linear dims squared wraps to 0", []string{"linear", "train", "cpu", "--dims", "4611686018427387904"}, "the model is too large: over 2⁴⁰ parameters"},
		{"linear batch × dims", []string{"linear", "train", "cpu", "--scale", "small", "--batch", "4611686018427387904", "--samples", "4611686018427387904"}, "the model is too large: a batch's activations"},
		{"linear data set", []string{"linear", "train", "cpu", "--scale", "small", "--samples", "9223372036854775804"}, "the model is too large: the data set"},
		{"linear layers", []string{"linear", "train", "cpu", "--blocks", "1000", "--dims", "1"}, "at most 4096 layers"},
		{"linear blocks × layers wraps", []string{"linear", "train", "cpu", "--blocks", "4294967296", "--layers-per-block", "4294967296"}, "at most 4096 layers"},
		{"attention seq-len", []string{"attention", "train", "cpu", "--seq-len", "4294967296"}, "the model is too large"},
		{"attention seq-len squared wraps", []string{"attention", "train", "cpu", "--seq-len", "4611686018427387904"}, "the model is too large"},
		{"attention layers", []string{"attention", "train", "cpu", "--layers", "100000"}, "100000 layers, at most 512"},
		{"attention logits", []string{"attention", "train", "cpu", "--scale", "small", "--vocab", "16777216", "--seq-len", "65536", "--batch", "4"}, "the logits"},
		{"resnet channels", []string{"resnet", "train", "cpu", "--channels", "4611686018427387904"}, "too large"},
		{"resnet kernel", []string{"resnet", "train", "cpu", "--kernel", "4294967297"}, "--kernel (4294967297) must be at most 2 × --image-size − 1"},
		{"resnet kernel within huge images", []string{"resnet", "train", "cpu", "--mid-channels", "10000", "--kernel", "1023"}, "the model is too large: over 2³⁶ weights"},
		{"resnet image size squared wraps", []string{"resnet", "train", "cpu", "--image-size", "4294967296"}, "the images are too large"},
		{"resnet levels", []string{"resnet", "train", "cpu", "--levels", "10000"}, "10000 levels, at most 256"},
		{"plan resnet image size", []string{"plan", "resnet", "train", "--image-size", "4294967296"}, "the images are too large"},
		{"plan linear dims", []string{"plan", "linear", "train", "--dims", "4294967296"}, "the model is too large: over 2⁴⁰ parameters"},
		{"plan attention seq-len", []string{"plan", "attention", "train", "--seq-len", "4611686018427387904"}, "the model is too large"},
		{"plan resnet levels", []string{"plan", "resnet", "train", "--levels", "10000"}, "at most 256"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantUsageError(t, tc.args, tc.want) })
	}
}

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
