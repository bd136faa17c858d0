package hfconfig

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tinyLlama is a small llama config whose snapshots the tests write.
func tinyLlama(t *testing.T) Config {
	t.Helper()
	c, err := Parse([]byte(`{"model_type": "llama", "hidden_size": 8, "intermediate_size": 16,
		"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
		"vocab_size": 10, "max_position_embeddings": 16, "tie_word_embeddings": true}`))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeST writes a safetensors file of ts in BF16: the header, then a
// zero-filled data section of the right size.
func writeST(t *testing.T, path string, ts []Tensor) {
	t.Helper()
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var off int64
	for _, x := range ts {
		n := int64(2)
		for _, d := range x.Shape {
			n *= int64(d)
		}
		header[x.Name] = map[string]any{"dtype": "BF16", "shape": x.Shape, "data_offsets": []int64{off, off + n}}
		off += n
	}
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	data := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	data = append(append(data, h...), make([]byte, off)...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeFile writes data to dir/name.
func writeFile(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeIndex writes an index whose weight_map is placed (tensor to file).
func writeIndex(t *testing.T, dir string, placed map[string]string) {
	t.Helper()
	data, err := json.Marshal(map[string]any{"metadata": map[string]int{"total_size": 0}, "weight_map": placed})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, IndexFile, data)
}

// reshaped returns ts with the tensor named name given shape.
func reshaped(ts []Tensor, name string, shape []int) []Tensor {
	out := make([]Tensor, len(ts))
	for i, x := range ts {
		out[i] = x
		if x.Name == name {
			out[i].Shape = shape
		}
	}
	return out
}

// without returns ts without the tensor named name.
func without(ts []Tensor, name string) []Tensor {
	var out []Tensor
	for _, x := range ts {
		if x.Name != name {
			out = append(out, x)
		}
	}
	return out
}

// TestCheckSafetensors checks snapshots that match, differ, are sharded,
// or are hostile.
func TestCheckSafetensors(t *testing.T) {
	c := tinyLlama(t)
	want := c.Tensors()
	kProj := "model.layers.0.self_attn.k_proj.weight"
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		err   string // in the error, "" for none
	}{
		{"matching", func(t *testing.T, dir string) {
			writeST(t, filepath.Join(dir, "model.safetensors"), want)
		}, ""},
		{"buffers and a tied lm_head are ignored", func(t *testing.T, dir string) {
			ts := append(append([]Tensor{}, want...),
				Tensor{"model.layers.0.self_attn.rotary_emb.inv_freq", []int{1}},
				Tensor{"lm_head.weight", []int{10, 8}})
			writeST(t, filepath.Join(dir, "model.safetensors"), ts)
		}, ""},
		{"a shape that differs", func(t *testing.T, dir string) {
			writeST(t, filepath.Join(dir, "model.safetensors"), reshaped(want, kProj, []int{2, 8}))
		}, "model.safetensors: " + kProj + " has shape [2 8], the config builds [4 8]"},
		{"a tied lm_head of the wrong shape", func(t *testing.T, dir string) {
			writeST(t, filepath.Join(dir, "model.safetensors"), append(append([]Tensor{}, want...), Tensor{"lm_head.weight", []int{10, 4}}))
		}, "lm_head.weight has shape [10 4], the tied embedding is [10 8]"},
		{"a missing tensor", func(t *testing.T, dir string) {
			writeST(t, filepath.Join(dir, "model.safetensors"), without(want, "model.layers.1.mlp.up_proj.weight"))
		}, "model.safetensors: model.layers.1.mlp.up_proj.weight is missing"},
		{"an extra tensor", func(t *testing.T, dir string) {
			writeST(t, filepath.Join(dir, "model.safetensors"), append(append([]Tensor{}, want...), Tensor{"model.layers.0.self_attn.q_norm.weight", []int{2}}))
		}, "model.safetensors: model.layers.0.self_attn.q_norm.weight is not a parameter the config builds"},
		{"an index naming two shards", func(t *testing.T, dir string) {
			a, b := "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
			writeST(t, filepath.Join(dir, a), want[:7])
			writeST(t, filepath.Join(dir, b), want[7:])
			placed := map[string]string{}
			for i, x := range want {
				placed[x.Name] = map[bool]string{true: a, false: b}[i < 7]
			}
			writeIndex(t, dir, placed)
		}, ""},
		{"an index that misplaces a tensor", func(t *testing.T, dir string) {
			a, b := "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
			writeST(t, filepath.Join(dir, a), want[:7])
			writeST(t, filepath.Join(dir, b), want[7:])
			placed := map[string]string{}
			for _, x := range want {
				placed[x.Name] = a
			}
			placed["model.norm.weight"] = b
			writeIndex(t, dir, placed)
		}, "weight_map puts"},
		{"a tensor in two shards", func(t *testing.T, dir string) {
			writeST(t, filepath.Join(dir, "a.safetensors"), want)
			writeST(t, filepath.Join(dir, "b.safetensors"), want[:1])
		}, "b.safetensors: model.embed_tokens.weight is also in a.safetensors"},
		{"a header length beyond the file", func(t *testing.T, dir string) {
			data := binary.LittleEndian.AppendUint64(nil, 1000)
			writeFile(t, dir, "model.safetensors", append(data, `{}`...))
		}, "model.safetensors: header length 1000 is beyond the file (10 bytes)"},
		{"a header length of 2^64-1", func(t *testing.T, dir string) {
			writeFile(t, dir, "model.safetensors", binary.LittleEndian.AppendUint64(nil, ^uint64(0)))
		}, "header length 18446744073709551615 is beyond the file"},
		{"a negative dimension", func(t *testing.T, dir string) {
			h := `{"x": {"dtype": "BF16", "shape": [-1, 2], "data_offsets": [0, 0]}}`
			writeFile(t, dir, "model.safetensors", append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...))
		}, "x: shape[0] is -1, not a non-negative integer"},
		{"data offsets beyond the data", func(t *testing.T, dir string) {
			h := `{"x": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}`
			writeFile(t, dir, "model.safetensors", append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...))
		}, "outside the data section of 0 bytes"},
		{"a FIFO", func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, "model.safetensors"), 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, "model.safetensors is a named pipe, not a regular file"},
		{"a FIFO named by the index", func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, "model-00001-of-00001.safetensors"), 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			writeIndex(t, dir, map[string]string{"model.norm.weight": "model-00001-of-00001.safetensors"})
		}, "model-00001-of-00001.safetensors is a named pipe, not a regular file"},
		{"a FIFO as the index", func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, IndexFile), 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, IndexFile + " is a named pipe, not a regular file"},
		{"dot-dot in weight_map", func(t *testing.T, dir string) {
			writeST(t, filepath.Join(dir, "model.safetensors"), want)
			writeIndex(t, dir, map[string]string{"model.norm.weight": ".."})
		}, `weight_map puts model.norm.weight in "..", not a file name inside the directory`},
		{"a path in weight_map", func(t *testing.T, dir string) {
			writeST(t, filepath.Join(dir, "model.safetensors"), want)
			writeIndex(t, dir, map[string]string{"model.norm.weight": "../model.safetensors"})
		}, `in "../model.safetensors", not a file name inside the directory`},
		{"no files", func(t *testing.T, dir string) {}, "no *.safetensors files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			type result struct {
				n   int
				err error
			}
			done := make(chan result, 1)
			go func() {
				n, err := CheckSafetensors(dir, want)
				done <- result{n, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("CheckSafetensors blocked")
			}
			if tt.err == "" {
				if r.err != nil || r.n != len(want) {
					t.Errorf("CheckSafetensors = %d, %v; want %d, nil", r.n, r.err, len(want))
				}
				return
			}
			if r.err == nil || !strings.Contains(r.err.Error(), tt.err) {
				t.Errorf("CheckSafetensors = %d, %v; want an error containing %q", r.n, r.err, tt.err)
			}
		})
	}
}

// TestCheckSafetensorsGPT2 checks GPT-2's "transformer." prefix and its
// attention buffers, which its checkpoints store.
func TestCheckSafetensorsGPT2(t *testing.T) {
	c, err := Parse([]byte(`{"model_type": "gpt2", "n_embd": 8, "n_layer": 2, "n_head": 2, "vocab_size": 10, "n_positions": 4}`))
	if err != nil {
		t.Fatal(err)
	}
	var ts []Tensor
	for _, x := range c.Tensors() {
		ts = append(ts, Tensor{"transformer." + x.Name, x.Shape})
	}
	ts = append(ts, Tensor{"transformer.h.0.attn.bias", []int{1, 1, 4, 4}}, Tensor{"transformer.h.1.attn.masked_bias", []int{}})
	dir := t.TempDir()
	writeST(t, filepath.Join(dir, "model.safetensors"), ts)
	if n, err := CheckSafetensors(dir, c.Tensors()); err != nil || n != len(c.Tensors()) {
		t.Errorf("CheckSafetensors = %d, %v; want %d, nil", n, err, len(c.Tensors()))
	}
}

// TestLoadSnapshot checks that Load checks a snapshot's safetensors.
func TestLoadSnapshot(t *testing.T) {
	c := tinyLlama(t)
	cfg := `{"model_type": "llama", "hidden_size": 8, "intermediate_size": 16,
		"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
		"vocab_size": 10, "max_position_embeddings": 16, "tie_word_embeddings": true}`
	for _, tc := range []struct {
		name string
		ts   []Tensor
		err  string
	}{
		{"matching", c.Tensors(), ""},
		{"differing", reshaped(c.Tensors(), "model.norm.weight", []int{4}), "model.norm.weight has shape [4], the config builds [8]"},
	} {
		dir := t.TempDir()
		writeFile(t, dir, "config.json", []byte(cfg))
		writeST(t, filepath.Join(dir, "model.safetensors"), tc.ts)
		m, err := Load(dir)
		switch {
		case tc.err == "" && (err != nil || m.Checked != len(c.Tensors()) || m.Dir != dir):
			t.Errorf("%s: Load = checked %d dir %q, %v", tc.name, m.Checked, m.Dir, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: Load error %v, want one containing %q", tc.name, err, tc.err)
		}
	}
}

// TestCheckSafetensorsHeadDim checks a checkpoint whose heads × head_dim
// (4 × 4 = 16) is not its hidden size (8), as transformers lays it out
// (issue 44 item 21): q_proj [heads·head_dim, hidden], k_proj and v_proj
// [kv_heads·head_dim, hidden], o_proj [hidden, heads·head_dim]. The
// shapes are written by hand, not from Config.Tensors, so that a config
// building o_proj as [hidden, hidden] refuses this correct file.
func TestCheckSafetensorsHeadDim(t *testing.T) {
	c, err := Parse([]byte(`{"model_type": "llama", "hidden_size": 8, "intermediate_size": 16,
		"num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 4,
		"vocab_size": 10, "max_position_embeddings": 16, "tie_word_embeddings": true}`))
	if err != nil {
		t.Fatal(err)
	}
	file := []Tensor{
		{"model.embed_tokens.weight", []int{10, 8}},
		{"model.layers.0.self_attn.q_proj.weight", []int{16, 8}},
		{"model.layers.0.self_attn.k_proj.weight", []int{8, 8}},
		{"model.layers.0.self_attn.v_proj.weight", []int{8, 8}},
		{"model.layers.0.self_attn.o_proj.weight", []int{8, 16}},
		{"model.layers.0.mlp.gate_proj.weight", []int{16, 8}},
		{"model.layers.0.mlp.up_proj.weight", []int{16, 8}},
		{"model.layers.0.mlp.down_proj.weight", []int{8, 16}},
		{"model.layers.0.input_layernorm.weight", []int{8}},
		{"model.layers.0.post_attention_layernorm.weight", []int{8}},
		{"model.norm.weight", []int{8}},
	}
	dir := t.TempDir()
	writeST(t, filepath.Join(dir, "model.safetensors"), file)
	if n, err := CheckSafetensors(dir, c.Tensors()); err != nil || n != len(file) {
		t.Errorf("CheckSafetensors = %d, %v; want %d, nil", n, err, len(file))
	}
}
