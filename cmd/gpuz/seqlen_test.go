package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestSequenceSizesShown checks that the sequence length of a workload of
// sequences is in the plan's header, JSON and title, and in fit's title
// (issue 44 item 13).
func TestSequenceSizesShown(t *testing.T) {
	b, err := exec.Command(gpuzBinary, "plan", "llm", "train", "cuda", "--model", "smollm2-135m", "--layers", "1", "--seq-len", "96", "--batch", "2",
		"--device", "sim:1GiB", "--format", "json").Output()
	if err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	var p struct {
		Header struct {
			SeqLen int `json:"seq_len"`
		} `json:"header"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	if p.Header.SeqLen != 96 {
		t.Errorf("plan JSON: seq_len %d, want 96", p.Header.SeqLen)
	}
	for _, args := range [][]string{
		{"plan", "llm", "train", "cuda", "--model", "smollm2-135m", "--layers", "1", "--seq-len", "96", "--batch", "2", "--device", "sim:1GiB"},
		{"fit", "llm", "eval", "--model", "smollm2-135m", "--layers", "1", "--seq-len", "96", "--batch", "2", "--device", "sim:1GiB"},
	} {
		out, err := exec.Command(gpuzBinary, args...).Output()
		if err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
		if first, _, _ := strings.Cut(string(out), "\n"); !strings.Contains(first, "batch 2, sequences of 96") {
			t.Errorf("%s: title %q does not say the batch and the sequence length", strings.Join(args[:3], " "), first)
		}
	}
}
