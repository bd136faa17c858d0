package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestPlanFramework runs "gpuz plan llm train --framework torch-1.13
// --format json" on the tiny Llama of scripts/testdata with bf16 and
// LoRA of rank 4, and checks that the plan carries PyTorch's figures
// beside gpuz's: its saved tensors (activations and autocast's weight
// copies) are the 325,044 bytes PyTorch 1.13 keeps for this step
// (scripts/torch_llm.py saved … --precision bf16 --lora 4, which
// internal/torchplan's TestSavedMatchesTorch runs), so the flags reach
// the rules as they should (bf16 as autocast, --lora's rank and the
// family's default targets).
func TestPlanFramework(t *testing.T) {
	args := []string{"plan", "llm", "train", "cuda", "--model", "../../scripts/testdata/llm-llama-gqa.json", "--seq-len", "8",
		"--batch", "2", "--samples", "2", "--device", "sim:1GiB", "--framework", "torch-1.13", "--precision", "bf16", "--lora", "4", "--format", "json"}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("gpuz %q: status %d: %s", args, code, stderr.String())
	}
	var plan struct {
		Bytes struct {
			Saved int64 `json:"saved_activations"`
		} `json:"bytes"`
		Framework struct {
			Name   string `json:"name"`
			Python string `json:"python"`
			Bytes  struct {
				WeightCopies int64 `json:"weight_copies"`
				Saved        int64 `json:"saved_activations"`
				Peak         int64 `json:"peak"`
			} `json:"bytes"`
		} `json:"framework"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &plan); err != nil {
		t.Fatal(err)
	}
	f := plan.Framework
	if f.Name != "torch-1.13" || !strings.Contains(f.Python, `LoraConfig(r=4, target_modules=["q_proj", "v_proj"])`) || !strings.Contains(f.Python, "bf16=True") {
		t.Errorf("framework %q, python %q", f.Name, f.Python)
	}
	if got := f.Bytes.Saved + f.Bytes.WeightCopies; got != 325044 {
		t.Errorf("PyTorch's saved tensors planned at %d bytes; PyTorch 1.13 keeps 325044", got)
	}
	if plan.Bytes.Saved == 0 || f.Bytes.Peak <= f.Bytes.Saved {
		t.Errorf("gpuz's saved activations %d, PyTorch's peak %d", plan.Bytes.Saved, f.Bytes.Peak)
	}
}

// TestFrameworkBadInput checks that --framework's bad input is one line
// and status 2.
func TestFrameworkBadInput(t *testing.T) {
	plan := []string{"plan", "llm", "train", "cpu", "--model", "../../scripts/testdata/llm-gpt2.json", "--seq-len", "8", "--batch", "1", "--samples", "1"}
	with := func(base []string, more ...string) []string { return append(append([]string{}, base...), more...) }
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown framework", with(plan, "--framework", "jax"), `--framework: unknown framework "jax" (want gpuz, torch, torch-1.13)`},
		{"fp16", with(plan, "--framework", "torch", "--precision", "fp16"), "--framework torch plans --precision fp32 and bf16 (autocast); fp16 is not planned"},
		{"eval", with([]string{"plan", "llm", "eval", "cpu", "--model", "../../scripts/testdata/llm-gpt2.json", "--seq-len", "8"}, "--framework", "torch"), "--framework torch plans the llm workload's training step"},
		{"linear", []string{"plan", "linear", "train", "--framework", "torch"}, "unknown flag: --framework"},
		{"fit", []string{"fit", "llm", "train", "--framework", "torch"}, "fit searches --framework itself (or does not use it); drop it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tc.args, &stdout, &stderr); code != exitUsage {
				t.Fatalf("gpuz %q: status %d, stderr %q; want %d", tc.args, code, stderr.String(), exitUsage)
			}
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Errorf("gpuz %q: stderr %q; want one line with %q", tc.args, stderr.String(), tc.want)
			}
		})
	}
}
