package hfconfig_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gpuz/internal/gguf"
	"gpuz/internal/hfconfig"
	"gpuz/internal/quant"
)

// ggufTiny is a llama config with llama3 scaling, an untied head and
// grouped-query attention: every part of a GGUF file the reader turns
// into a Config field.
const ggufTiny = `{"model_type": "llama", "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
	"num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300, "max_position_embeddings": 64,
	"rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": false, "hidden_act": "silu",
	"attention_bias": true,
	"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
	"original_max_position_embeddings": 16}}`

// ggufFile describes a GGUF file to write: the config's metadata and
// tensors (gguf.Llama's) with edits.
type ggufFile struct {
	config string
	// meta edits the metadata; tensors the tensor table.
	meta    func([]gguf.KV) []gguf.KV
	tensors func([]gguf.Tensor) []gguf.Tensor
	// bytes edits the file's bytes (byte surgery on what the Encoder
	// refuses to write).
	bytes func(t *testing.T, b []byte) []byte
}

// write writes f into dir as name and returns its path. Each tensor's
// values are its index in the table plus its elements' positions/1024, so
// that a tensor's bytes say which tensor they are.
func (f ggufFile) write(t *testing.T, dir, name string) string {
	t.Helper()
	c, err := hfconfig.Parse([]byte(f.config))
	if err != nil {
		t.Fatal(err)
	}
	l := gguf.Llama{Config: c, Layers: c.Layers, Name: "tiny", Type: gguf.F32}
	meta := l.Metadata()
	var tensors []gguf.Tensor
	if div := c.RopeFactors(); div != nil {
		tensors = append(tensors, gguf.Tensor{Name: "rope_freqs.weight", Dims: []uint64{uint64(len(div))}, Type: gguf.F32})
	}
	for _, p := range c.Tensors() {
		name, ok := c.Arch.GGUFName(p.Name)
		if !ok {
			t.Fatalf("%s has no GGUF name", p.Name)
		}
		dims := make([]uint64, len(p.Shape))
		for i, d := range p.Shape {
			dims[len(dims)-1-i] = uint64(d)
		}
		tensors = append(tensors, gguf.Tensor{Name: name, Dims: dims, Type: gguf.F32})
	}
	if f.meta != nil {
		meta = f.meta(meta)
	}
	if f.tensors != nil {
		tensors = f.tensors(tensors)
	}
	var buf bytes.Buffer
	enc, err := gguf.NewEncoder(&buf, meta, tensors)
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range tensors {
		if tt.Name == "rope_freqs.weight" {
			if err := enc.Write(tt.Name, c.RopeFactors()); err != nil {
				t.Fatal(err)
			}
			continue
		}
		n := uint64(1)
		for _, d := range tt.Dims {
			n *= d
		}
		v := make([]float32, n)
		for j := range v {
			v[j] = float32(i) + float32(j)/1024
		}
		if err := enc.Write(tt.Name, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if f.bytes != nil {
		b = f.bytes(t, b)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o666); err != nil {
		t.Fatal(err)
	}
	return path
}

// setKV replaces key's value in meta (or appends it).
func setKV(key string, v any) func([]gguf.KV) []gguf.KV {
	return func(meta []gguf.KV) []gguf.KV {
		for i := range meta {
			if meta[i].Key == key {
				meta[i].Value = v
				return meta
			}
		}
		return append(meta, gguf.KV{Key: key, Value: v})
	}
}

// tensorInfo returns the offset in b of the tensor table's entry of name,
// just after the name: its dimension count, dimensions, type and offset.
func tensorInfo(t *testing.T, b []byte, name string) int {
	t.Helper()
	rec := binary.LittleEndian.AppendUint64(nil, uint64(len(name)))
	rec = append(rec, name...)
	i := bytes.Index(b, rec)
	if i < 0 {
		t.Fatalf("no tensor %s in the header", name)
	}
	return i + len(rec)
}

// setType sets tensor name's ggml type to typ.
func setType(name string, typ uint32) func(*testing.T, []byte) []byte {
	return func(t *testing.T, b []byte) []byte {
		i := tensorInfo(t, b, name)
		n := int(binary.LittleEndian.Uint32(b[i:]))
		binary.LittleEndian.PutUint32(b[i+4+8*n:], typ)
		return b
	}
}

// TestLoadGGUF reads a GGUF file written from a config back: the same
// Config (the llama3 scaling as the file's divisors, the same
// frequencies), every tensor checked, its kind, its bytes, and which
// are in llama.cpp's rotary order.
func TestLoadGGUF(t *testing.T) {
	want, err := hfconfig.Parse([]byte(ggufTiny))
	if err != nil {
		t.Fatal(err)
	}
	path := ggufFile{config: ggufTiny}.write(t, t.TempDir(), "tiny.gguf")
	m, err := hfconfig.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	got := m.Config
	if !slices.Equal(got.RopeInvFreq(), want.RopeInvFreq()) {
		t.Errorf("RopeInvFreq %v, want %v", got.RopeInvFreq(), want.RopeInvFreq())
	}
	if s := got.RopeScaling; s == nil || s.Type != hfconfig.RopeFreqs || !slices.Equal(s.Divisors, want.RopeFactors()) {
		t.Errorf("RopeScaling %+v, want the divisors %v", s, want.RopeFactors())
	}
	got.RopeScaling, want.RopeScaling = nil, nil
	want.Defaulted, want.Dropouts = "", ""
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Config\n got %+v\nwant %+v", got, want)
	}
	if n := len(want.Tensors()); m.Checked != n || len(m.Kinds) != n {
		t.Errorf("checked %d, %d kinds, want %d", m.Checked, len(m.Kinds), n)
	}
	for name, k := range m.Kinds {
		if k != quant.F32 {
			t.Errorf("%s is %v, want f32", name, k)
		}
	}
	if got := m.GGUF.KindsSummary(); got != "F32 30 tensors" {
		t.Errorf("KindsSummary %q", got)
	}
	data, err := m.GGUF.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	for i, tt := range m.GGUF.Tensors {
		permuted := strings.Contains(tt.Name, "attn_q.") || strings.Contains(tt.Name, "attn_k.")
		if tt.RopePermuted != permuted {
			t.Errorf("%s: RopePermuted %v", tt.Name, tt.RopePermuted)
		}
		if tt.Name == "rope_freqs.weight" {
			continue
		}
		b := make([]byte, tt.Bytes)
		if err := data.ReadTensor(tt.Name, b); err != nil {
			t.Fatal(err)
		}
		last := math.Float32frombits(binary.LittleEndian.Uint32(b[len(b)-4:]))
		if wantLast := float32(i) + float32(len(b)/4-1)/1024; last != wantLast {
			t.Errorf("%s's last value %v, want %v", tt.Name, last, wantLast)
		}
	}
	if err := data.ReadTensor("output.weight", make([]byte, 3)); err == nil {
		t.Error("ReadTensor into a buffer of the wrong size: no error")
	}
}

// TestRopeFileRow checks that RopeFileRow is a permutation within each
// head that pairs transformers' rows j and j+d/2 as the file's 2j, 2j+1.
func TestRopeFileRow(t *testing.T) {
	const headDim, heads = 8, 3
	seen := map[int]bool{}
	for r := range headDim * heads {
		f := hfconfig.RopeFileRow(r, headDim)
		if f/headDim != r/headDim || seen[f] {
			t.Fatalf("row %d → %d: not a permutation within the head", r, f)
		}
		seen[f] = true
		if j := r % headDim; j < headDim/2 && hfconfig.RopeFileRow(r+headDim/2, headDim) != f+1 {
			t.Errorf("rows %d and %d are not adjacent in the file", r, r+headDim/2)
		}
	}
}

// TestLoadGGUFBadInput reads broken GGUF files: each one error line
// naming the problem, never a panic, nothing read past the file.
func TestLoadGGUFBadInput(t *testing.T) {
	dir := t.TempDir()
	u64 := func(off int, v uint64) func(*testing.T, []byte) []byte {
		return func(t *testing.T, b []byte) []byte {
			binary.LittleEndian.PutUint64(b[off:], v)
			return b
		}
	}
	for _, tc := range []struct {
		name string
		file ggufFile
		want string
	}{
		{"truncated header", ggufFile{bytes: func(_ *testing.T, b []byte) []byte { return b[:30] }}, "malformed GGUF file: tensor count too large for remaining bytes"},
		{"not gguf", ggufFile{bytes: func(_ *testing.T, b []byte) []byte { copy(b, "JUNK"); return b }}, `not a GGUF file: it does not begin with "GGUF"`},
		{"absurd tensor count", ggufFile{bytes: u64(8, 1<<60)}, "tensor count too large for remaining bytes"},
		{"absurd metadata count", ggufFile{bytes: u64(16, 1<<62)}, "metadatakvcount count too large"},
		{"absurd string length", ggufFile{bytes: u64(24, 1<<62)}, "read key: read string: length 4611686018427387904 exceeds"},
		{"truncated data", ggufFile{bytes: func(_ *testing.T, b []byte) []byte { return b[:len(b)-100] }}, "tensor data needs"},
		{"offset beyond the file", ggufFile{bytes: func(t *testing.T, b []byte) []byte {
			i := tensorInfo(t, b, "output_norm.weight")
			binary.LittleEndian.PutUint64(b[i+4+8+4:], 1<<40)
			return b
		}}, "output_norm.weight: its 128 bytes at offset 1099511627776 of the data"},
		{"dimensions overflow", ggufFile{bytes: func(t *testing.T, b []byte) []byte {
			i := tensorInfo(t, b, "token_embd.weight")
			binary.LittleEndian.PutUint64(b[i+4:], 1<<40)
			binary.LittleEndian.PutUint64(b[i+12:], 1<<40)
			return b
		}}, "malformed GGUF file: gguf: uint64 overflow"},
		{"alignment not a uint32", ggufFile{bytes: func(t *testing.T, b []byte) []byte {
			i := bytes.Index(b, []byte("general.alignment"))
			binary.LittleEndian.PutUint32(b[i+len("general.alignment"):], 5) // int32
			return b
		}}, `malformed GGUF file: key "general.alignment" try to get type Uint32 but type Int32`},
		{"unknown architecture", ggufFile{meta: setKV("general.architecture", "mamba")}, `general.architecture "mamba" is not supported (supported: llama, qwen2)`},
		{"no architecture", ggufFile{meta: func(m []gguf.KV) []gguf.KV { return m[1:] }}, "general.architecture is missing"},
		{"metadata key twice", ggufFile{meta: func(m []gguf.KV) []gguf.KV { return append(m, m[len(m)-1]) }}, `metadata key "tokenizer.ggml.add_eos_token" is given twice`},
		{"absurd layers", ggufFile{meta: setKV("llama.block_count", uint32(math.MaxUint32))}, "llama.block_count 4294967295 is beyond 2147483647"},
		{"zero heads", ggufFile{meta: setKV("llama.attention.head_count", uint32(0))}, "llama.attention.head_count must be positive, got 0"},
		{"size a string", ggufFile{meta: setKV("llama.embedding_length", "32")}, "llama.embedding_length must be an integer, got a string"},
		{"partial rotary", ggufFile{meta: setKV("llama.rope.dimension_count", uint32(4))}, "llama.rope.dimension_count 4 differs from the head width 8"},
		{"yarn", ggufFile{meta: setKV("llama.rope.scaling.type", "yarn")}, `llama.rope.scaling.type "yarn" is not supported`},
		{"shapes differ from the metadata", ggufFile{meta: setKV("llama.feed_forward_length", uint32(40))}, "blk.0.ffn_gate.weight has dimensions [32 48], the metadata's model has [32 40] (model.layers.0.mlp.gate_proj.weight)"},
		{"tensor missing", ggufFile{meta: setKV("llama.block_count", uint32(3))}, "blk.2.attn_q.weight (model.layers.2.self_attn.q_proj.weight) is missing"},
		{"tensor extra", ggufFile{meta: setKV("llama.block_count", uint32(1))}, "blk.1.attn_k.bias is not a tensor of the model the metadata describes"},
		{"duplicate tensor names", ggufFile{bytes: func(t *testing.T, b []byte) []byte {
			i := tensorInfo(t, b, "blk.0.ffn_up.weight")
			copy(b[i-len("blk.0.ffn_up.weight"):], "blk.0.attn_q.weight")
			return b
		}}, "tensor blk.0.attn_q.weight is in the table twice"},
		{"type gpuz does not implement", ggufFile{bytes: setType("blk.0.ffn_down.weight", 13)}, "blk.0.ffn_down.weight is Q5_K, which gpuz does not implement (it implements F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K)"},
		{"quantized rows not whole blocks", ggufFile{bytes: setType("blk.0.ffn_down.weight", 8)}, "blk.0.ffn_down.weight: a q8_0 weight's rows must be a multiple of 32 weights; these have 48"},
		{"rope divisors not positive", ggufFile{bytes: func(t *testing.T, b []byte) []byte {
			// rope_freqs.weight's data comes first, where the table's
			// last entry (output.weight's: 2 dimensions) ends, aligned.
			i := tensorInfo(t, b, "output.weight")
			start := (i + 4 + 2*8 + 4 + 8 + 31) / 32 * 32
			binary.LittleEndian.PutUint32(b[start:], math.Float32bits(-1))
			return b
		}}, "rope_freqs.weight[0] must be a positive divisor, got -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.file.config = ggufTiny
			path := tc.file.write(t, dir, strings.ReplaceAll(tc.name, " ", "-")+".gguf")
			_, err := hfconfig.Load(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Load: %v\nwant one line containing %q", err, tc.want)
			}
		})
	}
}

// TestLoadGGUFKinds reads a file with quantized tensors: their kinds by
// transformers' names, their bytes as the kind stores them, the summary.
func TestLoadGGUFKinds(t *testing.T) {
	file := ggufFile{config: ggufTiny, bytes: func(t *testing.T, b []byte) []byte {
		b = setType("token_embd.weight", 8)(t, b)           // Q8_0
		return setType("blk.1.attn_output.weight", 2)(t, b) // Q4_0
	}}
	m, err := hfconfig.Load(file.write(t, t.TempDir(), "q.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]quant.Kind{"model.embed_tokens.weight": quant.Q8_0, "model.layers.1.self_attn.o_proj.weight": quant.Q4_0, "model.norm.weight": quant.F32}
	for name, k := range want {
		if m.Kinds[name] != k {
			t.Errorf("%s is %v, want %v", name, m.Kinds[name], k)
		}
	}
	for _, tt := range m.GGUF.Tensors {
		if tt.Name == "token_embd.weight" && tt.Bytes != 300*34 {
			t.Errorf("token_embd.weight: %d bytes, want 300 rows of one 34-byte block", tt.Bytes)
		}
	}
	if got := m.GGUF.KindsSummary(); got != "F32 28 tensors, Q8_0 1 tensor, Q4_0 1 tensor" {
		t.Errorf("KindsSummary %q", got)
	}
}

// TestLoadGGUFQwen2 reads a file of llama.cpp's qwen2 architecture (the
// llama file's keys renamed): model_type qwen2, its q, k, v biases, and
// no rows in the llama architecture's rotary order.
func TestLoadGGUFQwen2(t *testing.T) {
	const config = `{"model_type": "qwen2", "hidden_size": 32, "intermediate_size": 56, "num_hidden_layers": 2,
		"num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 271, "max_position_embeddings": 128,
		"rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": true, "hidden_act": "silu",
		"use_sliding_window": false}`
	file := ggufFile{config: config, meta: func(meta []gguf.KV) []gguf.KV {
		for i := range meta {
			meta[i].Key = strings.Replace(meta[i].Key, "llama.", "qwen2.", 1)
		}
		return setKV("general.architecture", "qwen2")(meta)
	}}
	m, err := hfconfig.Load(file.write(t, t.TempDir(), "qwen2.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := hfconfig.Parse([]byte(config))
	if err != nil {
		t.Fatal(err)
	}
	want.Defaulted, want.Dropouts = "", ""
	if !reflect.DeepEqual(m.Config, want) {
		t.Errorf("Config\n got %+v\nwant %+v", m.Config, want)
	}
	for _, tt := range m.GGUF.Tensors {
		if tt.RopePermuted {
			t.Errorf("%s: RopePermuted in a qwen2 file", tt.Name)
		}
	}
}
