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

// TestSavedMatchesTorch checks the rules against PyTorch 1.13: for tiny
// configurations of every family (a Llama with grouped-query attention
// and a tied embedding, a Qwen2 with q/k/v biases and an untied head,
// GPT-2), in float32 and under bf16 autocast, with and without gradient
// checkpointing per decoder layer, with and without LoRA on the
// family's default targets, the bytes SavedTensors gives under
// torch-1.13 must equal, to the byte, what scripts/torch_llm.py saved
// measures with saved_tensors_hooks. It needs python3 with torch
// (GPUZ_TORCH_PYTHON, as .ci/run sets it); without it the test is
// skipped.
func TestSavedMatchesTorch(t *testing.T) {
	python := peertest.Python(t)
	type tcase struct {
		family, config string
		step           Step
		args           string
	}
	var cases []tcase
	const batch, seq = 2, 8
	for _, family := range []string{"llama-gqa", "qwen2", "gpt2"} {
		config := filepath.Join("..", "..", "scripts", "testdata", "llm-"+family+".json")
		m, err := hfconfig.Load(config)
		if err != nil {
			t.Fatal(err)
		}
		for _, autocast := range []bool{false, true} {
			for _, checkpoint := range []bool{false, true} {
				for _, rank := range []int{0, 4} {
					s := Step{Model: m.Config, Batch: batch, SeqLen: seq, Autocast: autocast, Checkpoint: checkpoint, LoRARank: rank}
					args := fmt.Sprintf("%s --seq-len %d --batch %d --precision %s --recompute %s --lora %d",
						config, seq, batch, map[bool]string{false: "fp32", true: "bf16"}[autocast],
						map[bool]string{false: "none", true: "blocks"}[checkpoint], rank)
					cases = append(cases, tcase{family, config, s, args})
				}
			}
		}
	}
	var stdin strings.Builder
	for _, c := range cases {
		stdin.WriteString(c.args + "\n")
	}
	cmd := exec.Command(python, filepath.Join("..", "..", "scripts", "torch_llm.py"), "saved", "-")
	cmd.Stdin = strings.NewReader(stdin.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("torch_llm.py saved -: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<24)
	for i, c := range cases {
		if !sc.Scan() {
			t.Fatalf("torch_llm.py saved - printed %d lines for %d cases", i, len(cases))
		}
		var got struct {
			SavedBytes int64  `json:"saved_bytes"`
			Torch      string `json:"torch"`
		}
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			t.Fatalf("%s: %v", c.args, err)
		}
		if !strings.HasPrefix(got.Torch, "1.13") {
			t.Fatalf("%s runs torch %s: the rules checked here are 1.13's", python, got.Torch)
		}
		saved, err := SavedTensors(c.step, Torch113)
		if err != nil {
			t.Fatalf("%s: %v", c.args, err)
		}
		if b := SavedBytes(saved); b != got.SavedBytes {
			t.Errorf("%s: torchplan says %d saved bytes, PyTorch %s keeps %d (%+d)", c.args, b, got.Torch, got.SavedBytes, got.SavedBytes-b)
		}
	}
}
