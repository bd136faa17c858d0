package torchplan

import (
	"strings"
	"testing"

	"gpuz/internal/hfconfig"
)

// TestPlanCounts checks the plan's parameters against figures published
// for Llama-3.2-1B: 1,235,814,400 weights (a tied embedding), and PEFT's
// print_trainable_parameters for LoraConfig(r=16) on its default
// targets, q_proj and v_proj: 1,703,936 trainable.
func TestPlanCounts(t *testing.T) {
	m, err := hfconfig.Load("llama-3.2-1b")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name            string
		rank            int
		params, trained int64
	}{
		{"full", 0, 1235814400, 1235814400},
		{"lora 16", 16, 1235814400 + 1703936, 1703936},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanStep(Step{Model: m.Config, Batch: 1, SeqLen: 16, LoRARank: tc.rank}, Torch)
			if err != nil {
				t.Fatal(err)
			}
			if p.ParameterCount != tc.params || p.TrainedCount != tc.trained {
				t.Errorf("%d parameters, %d trained; want %d and %d", p.ParameterCount, p.TrainedCount, tc.params, tc.trained)
			}
			if p.Gradients != 4*tc.trained || p.Moments != 8*tc.trained {
				t.Errorf("gradients %d, moments %d; want %d and %d", p.Gradients, p.Moments, 4*tc.trained, 8*tc.trained)
			}
		})
	}
}

// TestVersionsDiffer checks the rows where PyTorch 2.x and 1.13 differ:
// 2.x's mean keeps its input's sizes alone, so a Llama's plan under
// torch keeps each RMSNorm's x² less (tokens·hidden float32 per norm:
// two per layer and the final one); and SDPA keeps, per layer, q, k and
// v at every head, the output and one log-sum-exp per row in place of
// the probabilities and the scale, and 1.13 refuses it.
func TestVersionsDiffer(t *testing.T) {
	m, err := hfconfig.Load("../../scripts/testdata/llm-llama-gqa.json")
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config
	s := Step{Model: c, Batch: 2, SeqLen: 8}
	old, err := SavedTensors(s, Torch113)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := SavedTensors(s, Torch)
	if err != nil {
		t.Fatal(err)
	}
	n, d := int64(16), int64(c.Hidden)
	norms := int64(2*c.Layers + 1)
	if got, want := SavedBytes(old)-SavedBytes(cur), norms*n*d*4; got != want {
		t.Errorf("1.13 keeps %d bytes more than 2.x; want %d (mean's input in %d norms)", got, want, norms)
	}
	s.SDPA = true
	if _, err := SavedTensors(s, Torch113); err == nil {
		t.Error("torch-1.13 planned SDPA")
	}
	sdpa, err := SavedTensors(s, Torch)
	if err != nil {
		t.Fatal(err)
	}
	h, hd := int64(c.Heads), int64(c.HeadDim)
	// eager per layer: q and kᵀ folded (2·N·H·hd), the scale (8), the
	// probabilities (B·H·S², float32), the repeated v (N·H·hd); sdpa: q,
	// k and v (3·N·H·hd, repeat_kv's copies) and the output (N·H·hd,
	// which o_proj's input copy is not) and the log-sum-exps (B·H·S).
	eager := 3*n*h*hd*4 + 8 + 2*h*8*8*4
	fused := 4*n*h*hd*4 + 2*h*8*4
	if got, want := SavedBytes(cur)-SavedBytes(sdpa), int64(c.Layers)*(eager-fused); got != want {
		t.Errorf("eager keeps %d bytes more than sdpa; want %d", got, want)
	}
}

// TestRank checks fit's order on Llama-3.2-1B with LoRA at 1024 tokens
// and docs/llm.md's 8 GB laptop budget (8 GiB less fit's 5% margin):
// at a batch of 4 nothing fits, at a batch of 1 bf16 with checkpointing
// does (6.71 GiB) and bf16 without it does not (9.76 GiB), and every
// choice that fits comes before every one that does not.
func TestRank(t *testing.T) {
	m, err := hfconfig.Load("llama-3.2-1b")
	if err != nil {
		t.Fatal(err)
	}
	budget := int64(8<<30) - int64(8<<30)*5/100
	base := Step{Model: m.Config, SeqLen: 1024, LoRARank: 16, SDPA: true}
	choices, err := Rank([]Step{base}, Torch, []int{1, 4}, budget)
	if err != nil {
		t.Fatal(err)
	}
	if len(choices) != 8 {
		t.Fatalf("%d choices; want 8", len(choices))
	}
	best := choices[0]
	if !best.Fits || best.Step.Batch != 1 || !best.Step.Autocast || !best.Step.Checkpoint {
		t.Errorf("best %+v fits %v; want bf16 with checkpointing at a batch of 1", best.Step, best.Fits)
	}
	for i, c := range choices {
		if i > 0 && c.Fits && !choices[i-1].Fits {
			t.Errorf("choice %d fits after one that does not", i)
		}
		if c.Step.Batch == 4 && c.Fits {
			t.Errorf("%s fits at a batch of 4: peak %d", c.Step.Python(), c.Plan.Peak)
		}
		if c.Step.Batch == 1 && c.Step.Autocast && !c.Step.Checkpoint && c.Fits {
			t.Errorf("bf16 without checkpointing fits: peak %d", c.Plan.Peak)
		}
	}
}

// TestEvalLevers checks the evaluation pass's levers: fit ranks no
// gradient checkpointing for it (nothing is saved to checkpoint), its
// Python sets the eval batch, torch-1.13 refuses sdpa, and under torch
// sdpa's pass at 64 tokens holds no probabilities, so that its peak is
// below eager's by at least one layer's [B, H, S, S] float32.
func TestEvalLevers(t *testing.T) {
	m, err := hfconfig.Load("../../scripts/testdata/llm-llama-gqa.json")
	if err != nil {
		t.Fatal(err)
	}
	base := Step{Model: m.Config, SeqLen: 64, Eval: true}
	choices, err := Rank([]Step{base}, Torch113, []int{1, 2}, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	if len(choices) != 4 {
		t.Errorf("%d choices; want 4 (batches 1 and 2 × bf16 or fp32)", len(choices))
	}
	for _, c := range choices {
		if c.Step.Checkpoint || !strings.Contains(c.Plan.Python, "per_device_eval_batch_size") {
			t.Errorf("choice %s", c.Plan.Python)
		}
	}
	s := base
	s.Batch, s.SDPA = 2, true
	if _, err := PlanEval(s, Torch113); err == nil {
		t.Error("torch-1.13 planned sdpa")
	}
	sdpa, err := PlanEval(s, Torch)
	if err != nil {
		t.Fatal(err)
	}
	s.SDPA = false
	eager, err := PlanEval(s, Torch)
	if err != nil {
		t.Fatal(err)
	}
	probs := int64(2 * m.Config.Heads * 64 * 64 * 4)
	for _, op := range sdpa.LiveByOp {
		if op.Op == "softmax" {
			t.Errorf("sdpa holds %d bytes of probabilities", op.Bytes)
		}
	}
	if eager.Peak-sdpa.Peak < probs {
		t.Errorf("eager's peak %d, sdpa's %d; want sdpa's at least %d below", eager.Peak, sdpa.Peak, probs)
	}
}
