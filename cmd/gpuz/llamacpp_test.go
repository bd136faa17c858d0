package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gpuz/internal/peertest"
)

// llamaCppModel is what llamacpp_buffers.mjs reports of a model: the sum
// of its tensors' bytes (llama_model_size) and its model buffers in MiB
// by buffer type, as llama.cpp logs them (two decimals).
type llamaCppModel struct {
	SizeBytes int64 `json:"model_size_bytes"`
	Buffers   struct {
		Model map[string]float64 `json:"model"`
	} `json:"buffers_mib"`
}

// twoLayerConfig is a Llama config whose rows (256 and 512 weights) are
// whole blocks of every GGUF kind export writes, Q4_K's 256 included, with
// an untied head when untied is set.
func twoLayerConfig(t *testing.T, untied bool) string {
	t.Helper()
	config := `{"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
	"num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 512, "max_position_embeddings": 256,
	"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": ` + map[bool]string{false: "true", true: "false"}[untied] + `, "hidden_act": "silu"}`
	path := filepath.Join(t.TempDir(), "two.json")
	if err := os.WriteFile(path, []byte(config), 0o666); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPlannedWeightsMatchLlamaCpp exports a two-layer Llama, tied and
// untied, with its projections and embedding in Q8_0, Q4_0 and Q4_K (the
// untied head F16, the norms F32), and checks that gpuz's plan of
// generation from the file (`gpuz plan llm generate cpu --model
// FILE.gguf`) counts its weights at exactly the bytes llama.cpp loads:
// llama_model_size, the sum of the tensors' bytes; and within the log's
// rounding to a hundredth of a MiB and each tensor's 32-byte alignment,
// the CPU_Mapped model buffer llama.cpp logs, the file's tensor data
// mapped. (On a CPU with AVX2, llama.cpp also copies the Q4_0 and Q4_K
// projections into a CPU_REPACK buffer of interleaved blocks: a second
// copy, not compared.) An F16 file is not compared: under a 16-bit
// precision gpuz keeps the tied embedding in float32, as automatic mixed
// precision does (TestPlanGGUFFloatWeights). The KV cache, the compute
// buffer and the output buffer differ by design (docs/llm.md, "Plans
// against llama.cpp") and are not compared either.
func TestPlannedWeightsMatchLlamaCpp(t *testing.T) {
	node, script := peertest.LlamaCpp(t, "llamacpp_buffers.mjs", "llama.cpp's buffers are read")
	for _, tc := range []struct {
		name    string
		untied  bool
		weights string // export's --weights
	}{
		{"tied/q8_0", false, "q8_0"},
		{"tied/q4_0", false, "q4_0"},
		{"tied/q4_k", false, "q4_k"},
		{"untied/q4_0", true, "q4_0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "m.gguf")
			args := []string{"llm", "export", "--model", twoLayerConfig(t, tc.untied), "--type", "f16", "--weights", tc.weights, "--gguf", file}
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
				t.Fatalf("%q: exit status %d: %s", args, code, stderr.String())
			}
			planFile := filepath.Join(dir, "plan.json")
			args = []string{"plan", "llm", "generate", "cpu", "--model", file, "--prompt", "16", "--tokens", "1", "--context", "256", "--json", planFile}
			stdout.Reset()
			stderr.Reset()
			if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
				t.Fatalf("%q: exit status %d: %s", args, code, stderr.String())
			}
			var plan struct {
				Bytes struct {
					Parameters int64 `json:"parameters"`
				} `json:"bytes"`
			}
			if err := json.Unmarshal(readFile(t, planFile), &plan); err != nil {
				t.Fatal(err)
			}

			cmd := exec.Command(node, script, "--model", file, "--context", "256", "--batch", "16")
			var nodeErr strings.Builder
			cmd.Stderr = &nodeErr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, nodeErr.String())
			}
			var llama llamaCppModel
			if err := json.Unmarshal(out, &llama); err != nil || len(llama.Buffers.Model) == 0 {
				t.Fatalf("llamacpp_buffers.mjs printed %q, want the model's size and buffers (%v)", out, err)
			}
			if plan.Bytes.Parameters != llama.SizeBytes {
				t.Errorf("gpuz plans %d bytes of weights, llama.cpp's tensors are %d", plan.Bytes.Parameters, llama.SizeBytes)
			}
			buffers, ok := llama.Buffers.Model["CPU_Mapped"]
			if !ok {
				t.Fatalf("llama.cpp logs model buffers %v, no CPU_Mapped", llama.Buffers.Model)
			}
			const tensors = 2*9 + 2 + 1 // each layer's 7 matrices and 2 norms, the embedding and the final norm, the head
			planned := float64(plan.Bytes.Parameters) / (1 << 20)
			if slack := 0.005 + tensors*32.0/(1<<20); buffers < planned-0.005 || buffers > planned+slack {
				t.Errorf("llama.cpp's CPU_Mapped model buffer (of %v) holds %.2f MiB, gpuz plans %.4f MiB of weights: want within [−0.005, +%.4f] MiB (the log's rounding and each tensor's alignment)",
					llama.Buffers.Model, buffers, planned, slack)
			}
		})
	}
}
