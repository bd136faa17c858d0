package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"gpuz/internal/gguf"
	"gpuz/internal/hfconfig"
)

var updateGGUF = flag.Bool("update-gguf", false, "rewrite testdata/llm/*.gguf, the broken GGUF files of TestBadInput")

// smallestLlama is a one-layer llama whose GGUF file is a few KiB: the
// base of testdata/llm's broken files.
const smallestLlama = `{"model_type": "llama", "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
	"num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 8, "max_position_embeddings": 16,
	"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": true, "hidden_act": "silu"}`

// smallestGGUF returns smallestLlama's GGUF file, its F16 weights zeros.
func smallestGGUF(t *testing.T) []byte {
	t.Helper()
	c, err := hfconfig.Parse([]byte(smallestLlama))
	if err != nil {
		t.Fatal(err)
	}
	l := gguf.Llama{Config: c, Layers: c.Layers, Name: "smallest", Type: gguf.F16}
	var buf bytes.Buffer
	tensors := l.Tensors()
	enc, err := gguf.NewEncoder(&buf, l.Metadata(), tensors)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tensors {
		n := uint64(1)
		for _, d := range tt.Dims {
			n *= d
		}
		if err := enc.Write(tt.Name, make([]float32, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ggufAfter returns the offset in b just after the first length-prefixed
// string s: a metadata key's value type, or a tensor's dimension count.
func ggufAfter(t *testing.T, b []byte, s string) int {
	t.Helper()
	rec := binary.LittleEndian.AppendUint64(nil, uint64(len(s)))
	rec = append(rec, s...)
	i := bytes.Index(b, rec)
	if i < 0 {
		t.Fatalf("no %q in the file", s)
	}
	return i + len(rec)
}

// TestGGUFTestdata checks testdata/llm's broken GGUF files, which
// TestBadInput runs gpuz on, against what they are made from (each a byte
// surgery of smallestLlama's file), so that they say what their names
// say; -update-gguf rewrites them.
func TestGGUFTestdata(t *testing.T) {
	for name, edit := range map[string]func(b []byte) []byte{
		// The header cut inside its metadata.
		"truncated.gguf": func(b []byte) []byte { return b[:200] },
		// general.architecture "llama" made "mamba".
		"unknown-arch.gguf": func(b []byte) []byte {
			i := ggufAfter(t, b, "general.architecture") + 4 + 8
			copy(b[i:], "mamba")
			return b
		},
		// A tensor of type 13, Q5_K.
		"q5k.gguf": func(b []byte) []byte {
			i := ggufAfter(t, b, "blk.0.ffn_down.weight")
			binary.LittleEndian.PutUint32(b[i+4+2*8:], 13)
			return b
		},
		// llama.feed_forward_length 12 where the tensors have 16.
		"ffn-mismatch.gguf": func(b []byte) []byte {
			i := ggufAfter(t, b, "llama.feed_forward_length") + 4
			binary.LittleEndian.PutUint32(b[i:], 12)
			return b
		},
		// blk.0.ffn_up.weight's data 2⁴⁰ bytes into the data.
		"offset-beyond.gguf": func(b []byte) []byte {
			i := ggufAfter(t, b, "blk.0.ffn_up.weight")
			binary.LittleEndian.PutUint64(b[i+4+2*8+4:], 1<<40)
			return b
		},
	} {
		want := edit(smallestGGUF(t))
		path := filepath.Join("testdata", "llm", name)
		if *updateGGUF {
			if err := os.WriteFile(path, want, 0o666); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs from what it is made from (%v): go test -run TestGGUFTestdata -update-gguf rewrites it", path, err)
		}
	}
}

// TestGGUFRoundTrip exports the tiny model as GGUF and reads the file
// back as --model: the same plan as the config.json's, line for line
// (the files have one name, so the model's name is the same too).
func TestGGUFRoundTrip(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "tiny.json")
	if err := os.WriteFile(config, []byte(tinyLlamaConfig), 0o666); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "tiny.gguf")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"llm", "export", "--model", config, "--gguf", file}, &stdout, &stderr); code != 0 {
		t.Fatalf("export: exit status %d: %s", code, stderr.String())
	}
	plan := func(model string) string {
		stdout.Reset()
		args := []string{"plan", "llm", "train", "cuda", "--model", model, "--seq-len", "16", "--device", "sim:64MiB"}
		if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
			t.Fatalf("%q: exit status %d: %s", args, code, stderr.String())
		}
		return stdout.String()
	}
	if fromJSON, fromGGUF := plan(config), plan(file); fromJSON != fromGGUF {
		t.Errorf("the plans differ:\nconfig.json %.3000s\nGGUF        %.3000s", fromJSON, fromGGUF)
	}
}
