package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestModelCheckInterrupted: reading --model (a snapshot's safetensors
// headers checked, seconds for 300,000 tensors) stops when the context
// ends (issue 44 item 5): a signal that came first is the answer, status
// 130, and the check neither runs nor reports; before, the check ran to its
// end ignoring SIGINT and its refusal of a bad header won (status 2). Each
// command that reads --model: plan, a run, export.
func TestModelCheckInterrupted(t *testing.T) {
	dir := t.TempDir()
	const config = `{"model_type": "llama", "hidden_size": 8, "intermediate_size": 16,
		"num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2,
		"vocab_size": 10, "max_position_embeddings": 16, "tie_word_embeddings": true}`
	h := `{"w": {"dtype": "X", "shape": [1], "data_offsets": [0, 1]}}` // a dtype the check refuses
	header := append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h+"\x00"...)
	for name, data := range map[string][]byte{"config.json": []byte(config), "model.safetensors": header} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"plan", "llm", "train", "cpu", "--model", dir}, &stdout, &stderr); code != exitUsage {
		t.Fatalf("not interrupted: status %d, want %d (the header refused): %s", code, exitUsage, stderr.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{
		{"plan", "llm", "train", "cpu", "--model", dir},
		{"llm", "train", "cpu", "--model", dir},
		{"llm", "export", "--model", dir, "--gguf", filepath.Join(dir, "out.gguf")},
	} {
		stdout.Reset()
		stderr.Reset()
		code := run(ctx, args, &stdout, &stderr)
		if code != exitInterrupted || strings.Contains(stderr.String(), "dtype") || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("gpuz %s, interrupted: status %d, stderr %q; want %d and one line, not the header's refusal",
				strings.Join(args, " "), code, stderr.String(), exitInterrupted)
		}
	}
}
