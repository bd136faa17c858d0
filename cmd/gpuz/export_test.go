package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gpuz/internal/hfconfig"
	"gpuz/internal/quant"
)

// tinyLlamaConfig is a config.json small enough to export in milliseconds.
const tinyLlamaConfig = `{"model_type": "llama", "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
	"num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300, "max_position_embeddings": 64,
	"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": true, "hidden_act": "silu"}`

// writeTinyConfig writes tinyLlamaConfig to a temporary folder and
// returns its path.
func writeTinyConfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.json")
	if err := os.WriteFile(path, []byte(tinyLlamaConfig), 0o666); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestExportBadInput runs gpuz llm export on bad command lines: each
// exits with status 2 and one line naming the problem, and writes no
// file.
func TestExportBadInput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m.gguf")
	config := writeTinyConfig(t)
	for _, tc := range []struct {
		name string
		args string
		want string
	}{
		{"no file", "llm export --model " + config, "export needs --gguf FILE"},
		{"standard output", "llm export --gguf -", "--gguf -: standard output is not allowed here"},
		{"a directory", "llm export --gguf " + dir, "is a directory"},
		{"no directory", "llm export --gguf " + filepath.Join(dir, "none", "m.gguf"), "no such file or directory"},
		{"type", "llm export --type q4 --gguf " + out, `--type "q4": want f16 or f32`},
		{"weights nf4", "llm export --weights nf4 --gguf " + out, "--weights nf4: GGUF has no NF4 type (it is bitsandbytes'); export writes q8_0, q4_0, q4_k or q6_k"},
		{"weights f16", "llm export --weights f16 --gguf " + out, "--weights f16: export quantizes to q8_0, q4_0, q4_k or q6_k; the float matrices' type is --type's (f16 or f32)"},
		{"weights unknown", "llm export --weights q5_0 --gguf " + out, `--weights: unknown weight kind "q5_0"`},
		{"weights blocks", "llm export --model " + config + " --weights q4_k --gguf " + out, "--weights q4_k: token_embd.weight: a q4_k weight's rows must be a multiple of 256 weights; these have 32"},
		{"unknown model", "llm export --model nosuch --gguf " + out, "--model: "},
		{"empty model", "llm export --model '' --gguf " + out, "--model: empty"},
		{"gpt2", "llm export --model gpt2 --gguf " + out, "GGUF export writes the Llama family (llama, mistral, qwen2), not GPT-2 (gpt2)"},
		{"negative layers", "llm export --layers -1 --gguf " + out, "--layers must not be negative, got -1"},
		{"too many layers", "llm export --model " + config + " --layers 3 --gguf " + out, "--layers (3) must be at most the model's 2 layers"},
		{"argument", "llm export now --gguf " + out, "unknown command \"now\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantUsageError(t, splitArgs(tc.args), tc.want)
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("files left behind: %v", entries)
			}
		})
	}
}

// TestExport exports the tiny model twice from one seed and once from
// another: a GGUF file, the same bytes from the same seed, other weights
// from another; and, under a file size limit of 512 bytes, the write
// fails with one line and status 1, the old file left whole and nothing
// else behind.
func TestExport(t *testing.T) {
	config := writeTinyConfig(t)
	dir := t.TempDir()
	export := func(name, seed string) []byte {
		path := filepath.Join(dir, name)
		var stdout, stderr bytes.Buffer
		args := []string{"llm", "export", "--model", config, "--seed", seed, "--gguf", path}
		if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
			t.Fatalf("%q: exit status %d: %s", args, code, stderr.String())
		}
		if !strings.HasPrefix(stdout.String(), "wrote "+path+": tiny, 2 of 2 layers, F16 matrices") {
			t.Errorf("stdout %q", stdout.String())
		}
		return readFile(t, path)
	}
	a, b, c := export("a.gguf", "1"), export("b.gguf", "1"), export("c.gguf", "2")
	switch {
	case !bytes.HasPrefix(a, []byte("GGUF\x03\x00\x00\x00")):
		t.Errorf("the file begins %q, want GGUF version 3", a[:min(8, len(a))])
	case !bytes.Equal(a, b):
		t.Errorf("two exports from seed 1 differ")
	case len(a) != len(c) || bytes.Equal(a, c):
		t.Errorf("the exports from seeds 1 and 2 are %d and %d bytes, equal %v: want other weights of the same size", len(a), len(c), bytes.Equal(a, c))
	}

	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir = t.TempDir()
	out := filepath.Join(dir, "old.gguf")
	if err := os.WriteFile(out, []byte("ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `ulimit -f 1 && exec "$0" "$@"`, gpuzBinary, "llm", "export", "--model", config, "--gguf", out)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	msg := stderr.String()
	if code := exitCode(err); code != exitFailure || !strings.Contains(msg, "writing the GGUF model to "+out+": ") || strings.Count(msg, "\n") != 1 {
		t.Errorf("status %d, stderr %q; want %d and one line naming %s", code, msg, exitFailure, out)
	}
	if data, err := os.ReadFile(out); err != nil || string(data) != "ok\n" {
		t.Errorf("the old file holds %d bytes %.40q (%v), want \"ok\\n\"", len(data), data, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files left behind: %v", entries)
	}
}

// TestExportWeights exports the tiny model, its intermediate size 64 so
// that every row is whole blocks of 32, with --weights q8_0 and q4_0: the
// output line names the kind; two exports are the same bytes, smaller
// than the F16 file; and the file read back as a model (hfconfig.Load)
// has its projections and embedding of the kind, its norms F32.
func TestExportWeights(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "tiny.json")
	if err := os.WriteFile(config, []byte(strings.Replace(tinyLlamaConfig, `"intermediate_size": 48`, `"intermediate_size": 64`, 1)), 0o666); err != nil {
		t.Fatal(err)
	}
	export := func(name string, flags ...string) []byte {
		path := filepath.Join(dir, name)
		var stdout, stderr bytes.Buffer
		args := append([]string{"llm", "export", "--model", config, "--gguf", path}, flags...)
		if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
			t.Fatalf("%q: exit status %d: %s", args, code, stderr.String())
		}
		if len(flags) > 0 && !strings.HasPrefix(stdout.String(), "wrote "+path+": tiny, 2 of 2 layers, "+strings.ToUpper(flags[1])+" matrices, ") {
			t.Errorf("stdout %q", stdout.String())
		}
		return readFile(t, path)
	}
	f16 := export("f16.gguf")
	for _, kind := range []quant.Kind{quant.Q8_0, quant.Q4_0} {
		t.Run(kind.String(), func(t *testing.T) {
			a, b := export(kind.String()+"-a.gguf", "--weights", kind.String()), export(kind.String()+"-b.gguf", "--weights", kind.String())
			if !bytes.Equal(a, b) || len(a) >= len(f16) {
				t.Errorf("two exports equal: %v; %d bytes, the F16 file %d: want the same bytes, fewer", bytes.Equal(a, b), len(a), len(f16))
			}
			m, err := hfconfig.Load(filepath.Join(dir, kind.String()+"-a.gguf"))
			if err != nil {
				t.Fatal(err)
			}
			for name, k := range m.Kinds {
				want := quant.F32
				if strings.HasSuffix(name, "proj.weight") || name == "model.embed_tokens.weight" {
					want = kind
				}
				if k != want {
					t.Errorf("%s is %v, want %v", name, k, want)
				}
			}
		})
	}
}

// TestExportQ6K exports mixedLlama with --weights q6_k: the projections
// and the token embedding are Q6_K tensors, which a run of the file
// stores in q6_k and generates from with --load-weights.
func TestExportQ6K(t *testing.T) {
	dir := t.TempDir()
	config, path := filepath.Join(dir, "config.json"), filepath.Join(dir, "q6_k.gguf")
	if err := os.WriteFile(config, []byte(mixedLlama), 0o666); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	args := []string{"llm", "export", "--model", config, "--weights", "q6_k", "--gguf", path}
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("%q: exit status %d: %s", args, code, stderr.String())
	}
	if want := "Q6_K matrices, the head F16"; !strings.Contains(stdout.String(), want) {
		t.Errorf("stdout %q, want it to say %q", stdout.String(), want)
	}
	m, err := hfconfig.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.GGUF.KindsSummary(), "Q6_K 15 tensors, F32 5 tensors, F16 1 tensor"; got != want {
		t.Errorf("the file holds %s, want %s", got, want)
	}
	generateTokens(t, "--model", path, "--load-weights")
}
