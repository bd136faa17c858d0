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

// TestPlanFrameworkEval runs "gpuz plan llm eval --framework torch-1.13
// --format json" on the tiny Llama of scripts/testdata with bf16 and LoRA
// of rank 4, and checks that the plan is the evaluation pass's: the
// tensors alive at its peak (autocast's cached adapter copies and the
// activations) are the 63,040 bytes PyTorch 1.13 holds at once for this
// pass (scripts/torch_llm.py live … --precision bf16 --lora 4, which
// internal/torchplan's TestEvalMatchesTorch runs), nothing saved.
func TestPlanFrameworkEval(t *testing.T) {
	args := []string{"plan", "llm", "eval", "cuda", "--model", "../../scripts/testdata/llm-llama-gqa.json", "--seq-len", "8",
		"--batch", "2", "--samples", "2", "--device", "sim:1GiB", "--framework", "torch-1.13", "--precision", "bf16", "--lora", "4", "--format", "json"}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("gpuz %q: status %d: %s", args, code, stderr.String())
	}
	var plan struct {
		Framework struct {
			Task   string `json:"task"`
			Python string `json:"python"`
			Bytes  struct {
				WeightCopies int64 `json:"weight_copies"`
				Saved        int64 `json:"saved_activations"`
				Live         int64 `json:"live_activations"`
				Parameters   int64 `json:"parameters"`
				Peak         int64 `json:"peak"`
			} `json:"bytes"`
		} `json:"framework"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &plan); err != nil {
		t.Fatal(err)
	}
	f := plan.Framework
	if f.Task != "eval" || !strings.Contains(f.Python, "per_device_eval_batch_size=2") {
		t.Errorf("task %q, python %q; want eval, per_device_eval_batch_size=2", f.Task, f.Python)
	}
	b := f.Bytes
	if got := b.WeightCopies + b.Live; got != 63040 || b.Saved != 0 || b.Peak != b.Parameters+got {
		t.Errorf("alive at the peak %d bytes, saved %d, peak %d of %d parameters; PyTorch 1.13 holds 63040 at once, saves nothing", got, b.Saved, b.Peak, b.Parameters)
	}
}

// TestPlanFrameworkSynthetic runs "gpuz plan W train --scale small
// --framework torch-1.13 --precision bf16 --format json" for the three
// synthetic workloads and checks their saved tensors (activations and
// autocast's weight copies) against what PyTorch 1.13 keeps for
// scripts/torch_reference.py's step at that size (torch_reference.py
// saved W --precision bf16, which internal/torchplan's
// TestSyntheticSavedMatchesTorch runs): the flags reach the plan as
// they should (the sizes of --scale, bf16 as autocast).
func TestPlanFrameworkSynthetic(t *testing.T) {
	for _, tc := range []struct {
		workload string
		saved    int64
	}{{"linear", 180224}, {"resnet", 865792}, {"attention", 301076}} {
		t.Run(tc.workload, func(t *testing.T) {
			args := []string{"plan", tc.workload, "train", "cuda", "--scale", "small", "--device", "sim:1GiB",
				"--framework", "torch-1.13", "--precision", "bf16", "--format", "json"}
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
				t.Fatalf("gpuz %q: status %d: %s", args, code, stderr.String())
			}
			var plan struct {
				Framework struct {
					Bytes struct {
						WeightCopies int64 `json:"weight_copies"`
						Saved        int64 `json:"saved_activations"`
					} `json:"bytes"`
				} `json:"framework"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &plan); err != nil {
				t.Fatal(err)
			}
			if b := plan.Framework.Bytes; b.Saved+b.WeightCopies != tc.saved {
				t.Errorf("PyTorch's saved tensors planned at %d bytes; PyTorch 1.13 keeps %d", b.Saved+b.WeightCopies, tc.saved)
			}
		})
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
		{"generate", []string{"plan", "llm", "generate", "cpu", "--model", "../../scripts/testdata/llm-gpt2.json", "--prompt", "4", "--tokens", "4", "--framework", "torch"}, "--framework torch plans the llm workload's training step and evaluation pass"},
		{"linear eval", []string{"plan", "linear", "eval", "--scale", "small", "--framework", "torch"}, "--framework torch plans a synthetic workload's training step (gpuz plan linear train)"},
		{"attention fused", []string{"plan", "attention", "train", "--scale", "small", "--framework", "torch", "--attention", "fused"}, "eager, without LoRA"},
		{"fit linear", []string{"fit", "linear", "train", "--framework", "torch", "--device", "sim:1GiB"}, "gpuz plan linear train --framework torch plans this one's step"},
		{"fit unknown", []string{"fit", "llm", "train", "--framework", "jax"}, `--framework: unknown framework "jax"`},
		{"fit generate", []string{"fit", "llm", "generate", "--framework", "torch", "--device", "sim:1GiB", "--model", "../../scripts/testdata/llm-gpt2.json", "--prompt", "4", "--tokens", "4"}, "--framework torch plans the llm workload's training step and evaluation pass"},
		{"eval fp16", []string{"plan", "llm", "eval", "cpu", "--model", "../../scripts/testdata/llm-gpt2.json", "--seq-len", "8", "--framework", "torch-1.13", "--precision", "fp16"}, "--framework torch-1.13 plans --precision fp32 and bf16"},
		{"fit verify", []string{"fit", "llm", "train", "--framework", "torch", "--model", "../../scripts/testdata/llm-gpt2.json", "--seq-len", "8", "--device", "sim:1GiB", "--verify", "1"}, "--verify runs gpuz's: drop one"},
		{"fit without a GPU", []string{"fit", "llm", "train", "--framework", "torch", "--model", "../../scripts/testdata/llm-gpt2.json", "--seq-len", "8", "--device", "cpu"}, "fit --framework torch needs a GPU to fit"},
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

// TestFitFramework runs "gpuz fit llm train --framework torch" on
// docs/llm.md's worked example (Llama-3.2-1B, LoRA r=16, 1024 tokens, the
// 8 GB laptop's profile) and checks the ranking it states: the best
// PyTorch configuration is bf16 with gradient checkpointing at a batch of
// one, the only lever set at that batch that fits with bf16, printed as
// the Python a user sets.
func TestFitFramework(t *testing.T) {
	args := []string{"fit", "llm", "train", "--framework", "torch", "--model", "llama-3.2-1b", "--device", "sim:rtx4060-laptop",
		"--seq-len", "1024", "--lora", "16", "--format", "json"}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("gpuz %q: status %d: %s", args, code, stderr.String())
	}
	var fit struct {
		Kind    string `json:"kind"`
		Choices []struct {
			Batch  int    `json:"batch"`
			Python string `json:"python"`
			Fits   bool   `json:"fits"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &fit); err != nil {
		t.Fatal(err)
	}
	if fit.Kind != "framework-fit" || len(fit.Choices) != 12 {
		t.Fatalf("kind %q, %d choices; want framework-fit and 12 (batches 1, 2, 4 × bf16 or fp32 × checkpointing or not)", fit.Kind, len(fit.Choices))
	}
	want := `TrainingArguments(bf16=True, gradient_checkpointing=True, per_device_train_batch_size=1), LoraConfig(r=16, target_modules=["q_proj", "v_proj"]), attn_implementation="sdpa"`
	if best := fit.Choices[0]; !best.Fits || best.Python != want {
		t.Errorf("best %+v; want %s, fitting", best, want)
	}
	for _, c := range fit.Choices {
		if c.Fits && c.Batch > 1 {
			t.Errorf("%s fits the 8 GB laptop", c.Python)
		}
	}
}
