package torchplan

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gpuz/internal/hfconfig"
	"gpuz/internal/peertest"
)

// TestEvalMatchesTorch checks the evaluation pass's plan against PyTorch
// 1.13: for tiny configurations of every family, in float32 and under
// bf16 autocast, with and without LoRA on the family's default targets,
// at 8 tokens (where the MLP or the loss holds most) and 64 (where the
// attention's probabilities do, but for GPT-2, whose attention holds
// most in a GPT-2 of 16 heads at 128 tokens, written here), the bytes
// PlanEval says are alive at
// the peak (autocast's cached copies and the activations) must equal, to
// the byte, the largest set of tensors alive at once that
// scripts/torch_llm.py live measures (every aten op's results tracked
// through a TorchDispatchMode), and its parameters PyTorch's. It needs
// python3 with torch (GPUZ_TORCH_PYTHON, as .ci/run sets it); without it
// the test is skipped.
func TestEvalMatchesTorch(t *testing.T) {
	python := peertest.Python(t)
	type tcase struct {
		step Step
		args string
	}
	var cases []tcase
	const batch = 2
	wide := filepath.Join(t.TempDir(), "gpt2-16-heads.json")
	if err := os.WriteFile(wide, []byte(`{"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 64, "n_layer": 2,
		"n_head": 16, "n_positions": 128, "vocab_size": 320, "activation_function": "gelu_new"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, config := range []string{"llm-llama-gqa.json", "llm-qwen2.json", "llm-gpt2.json", wide} {
		seqs := []int{8, 64}
		if config == wide {
			seqs = []int{128}
		} else {
			config = filepath.Join("..", "..", "scripts", "testdata", config)
		}
		m, err := hfconfig.Load(config)
		if err != nil {
			t.Fatal(err)
		}
		for _, seq := range seqs {
			for _, autocast := range []bool{false, true} {
				for _, rank := range []int{0, 4} {
					s := Step{Model: m.Config, Batch: batch, SeqLen: seq, Autocast: autocast, LoRARank: rank}
					args := fmt.Sprintf("%s --seq-len %d --batch %d --precision %s --lora %d",
						config, seq, batch, map[bool]string{false: "fp32", true: "bf16"}[autocast], rank)
					cases = append(cases, tcase{s, args})
				}
			}
		}
	}
	var stdin strings.Builder
	for _, c := range cases {
		stdin.WriteString(c.args + "\n")
	}
	cmd := exec.Command(python, filepath.Join("..", "..", "scripts", "torch_llm.py"), "live", "-")
	cmd.Stdin = strings.NewReader(stdin.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("torch_llm.py live -: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<24)
	for i, c := range cases {
		if !sc.Scan() {
			t.Fatalf("torch_llm.py live - printed %d lines for %d cases", i, len(cases))
		}
		var got struct {
			LiveBytes      int64  `json:"live_bytes"`
			ParameterBytes int64  `json:"parameter_bytes"`
			Torch          string `json:"torch"`
		}
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			t.Fatalf("%s: %v", c.args, err)
		}
		if !strings.HasPrefix(got.Torch, "1.13") {
			t.Fatalf("%s runs torch %s: the rules checked here are 1.13's", python, got.Torch)
		}
		p, err := PlanEval(c.step, Torch113)
		if err != nil {
			t.Fatalf("%s: %v", c.args, err)
		}
		if b := p.WeightCopies + p.Live; b != got.LiveBytes {
			t.Errorf("%s: torchplan says %d bytes alive at the peak (%v, weight copies %d), PyTorch %s %d (%+d)",
				c.args, b, p.LiveByOp, p.WeightCopies, got.Torch, got.LiveBytes, got.LiveBytes-b)
		}
		if p.Parameters != got.ParameterBytes {
			t.Errorf("%s: torchplan says %d bytes of parameters, PyTorch %d", c.args, p.Parameters, got.ParameterBytes)
		}
	}
}
