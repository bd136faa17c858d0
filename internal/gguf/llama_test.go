package gguf

import (
	"encoding/binary"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	parser "github.com/gpustack/gguf-parser-go"
	"gorgonia.org/gorgonia"

	"gpuz/internal/half"
	"gpuz/internal/hfconfig"
	"gpuz/internal/models"
)

// tinyLlamas are small models of the Llama family that cover what
// changes the file: grouped-query attention with tied embeddings, an
// untied head with an explicit head_dim and llama3's rope scaling (so
// rope_freqs.weight), and qwen2's q, k, v biases. Their vocabularies
// hold the 256 byte tokens, which llama.cpp looks its newline up among.
var tinyLlamas = []struct{ name, config string }{
	{"llama-gqa-tied", `{"model_type": "llama", "hidden_size": 48, "intermediate_size": 80, "num_hidden_layers": 2,
		"num_attention_heads": 6, "num_key_value_heads": 2, "vocab_size": 300, "max_position_embeddings": 64,
		"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": true, "hidden_act": "silu"}`},
	{"llama3-rope-untied-headdim", `{"model_type": "llama", "hidden_size": 40, "intermediate_size": 72, "num_hidden_layers": 2,
		"num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 12, "vocab_size": 283, "max_position_embeddings": 256,
		"rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": false, "hidden_act": "silu",
		"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
		"original_max_position_embeddings": 16}}`},
	{"qwen2-bias-mha", `{"model_type": "qwen2", "hidden_size": 32, "intermediate_size": 56, "num_hidden_layers": 2,
		"num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 271, "max_position_embeddings": 128,
		"rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": true, "hidden_act": "silu",
		"use_sliding_window": false, "sliding_window": 64}`},
}

// tinyModel parses a tiny config.
func tinyModel(t *testing.T, config string) hfconfig.Model {
	t.Helper()
	cfg, err := hfconfig.Parse([]byte(config))
	if err != nil {
		t.Fatal(err)
	}
	return hfconfig.Model{Config: cfg, Name: "tiny"}
}

// exportModel writes m's first layers, drawn from seed as a run draws
// them (and changed by edit when it is not nil), to a file of type typ
// and weights (Llama's Weights) in a temporary folder, and returns its
// path and gpuz's parameters by name.
func exportModel(t *testing.T, m hfconfig.Model, layers int, seed uint64, typ, weights Type, edit func(name string, values []float32)) (string, map[string][]float32) {
	t.Helper()
	model, err := models.LLMConfig{Model: m, Layers: layers, SeqLen: 1, Feed: models.Feed{Samples: 1, Batch: 1, Epochs: 1}}.Build()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lw, err := Llama{Config: m.Config, Layers: layers, Name: m.Name, Type: typ, Weights: weights}.NewWriter(f)
	if err != nil {
		t.Fatal(err)
	}
	params := map[string][]float32{}
	err = model.InitParams(seed, func(p *gorgonia.Node, values []float32) error {
		if slices.ContainsFunc(model.Constants, func(c models.Constant) bool { return c.Node == p }) {
			return nil
		}
		if edit != nil {
			edit(p.Name(), values)
		}
		params[p.Name()] = slices.Clone(values)
		return lw.Param(p.Name(), values)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, params
}

// readTensor returns the values of the tensor name of the parsed file at
// path, read at the file's tensor data start plus the tensor's offset.
func readTensor(t *testing.T, path string, gf *parser.GGUFFile, name string) []float32 {
	t.Helper()
	info, ok := gf.TensorInfos.Get(name)
	if !ok {
		t.Fatalf("no tensor %s", name)
	}
	n := 1
	for _, d := range info.Dimensions {
		n *= int(d)
	}
	size := 4
	if info.Type == parser.GGMLTypeF16 {
		size = 2
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n*size)
	if _, err := f.ReadAt(b, gf.TensorDataStartOffset+int64(info.Offset)); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	v := make([]float32, n)
	for i := range v {
		if size == 2 {
			v[i] = half.FP16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
		} else {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	}
	return v
}

// wantTensor is a tensor the file must hold: its dimensions as ggml
// counts them and its type.
type wantTensor struct {
	dims []uint64
	typ  parser.GGMLType
}

// wantTensors lists the tensors of c's first layers as llama.cpp's llama
// architecture names and shapes them, matrices of type typ.
func wantTensors(c hfconfig.Config, layers int, typ parser.GGMLType) map[string]wantTensor {
	d, q, kv, inter := uint64(c.Hidden), uint64(c.Heads*c.HeadDim), uint64(c.KVHeads*c.HeadDim), uint64(c.Intermediate)
	v := func(n uint64) wantTensor { return wantTensor{[]uint64{n}, parser.GGMLTypeF32} }
	m := func(cols, rows uint64) wantTensor { return wantTensor{[]uint64{cols, rows}, typ} }
	want := map[string]wantTensor{
		"token_embd.weight":  m(d, uint64(c.Vocab)),
		"output_norm.weight": v(d),
	}
	if !c.TieEmbeddings {
		want["output.weight"] = m(d, uint64(c.Vocab))
	}
	if c.RopeScaling != nil {
		want["rope_freqs.weight"] = v(uint64(c.HeadDim / 2))
	}
	for i := range layers {
		blk := "blk." + strconv.Itoa(i) + "."
		want[blk+"attn_norm.weight"] = v(d)
		want[blk+"attn_q.weight"] = m(d, q)
		want[blk+"attn_k.weight"] = m(d, kv)
		want[blk+"attn_v.weight"] = m(d, kv)
		want[blk+"attn_output.weight"] = m(q, d)
		want[blk+"ffn_norm.weight"] = v(d)
		want[blk+"ffn_gate.weight"] = m(d, inter)
		want[blk+"ffn_up.weight"] = m(d, inter)
		want[blk+"ffn_down.weight"] = m(inter, d)
		if c.QKVBias {
			want[blk+"attn_q.bias"], want[blk+"attn_k.bias"], want[blk+"attn_v.bias"] = v(q), v(kv), v(kv)
		}
	}
	return want
}

// TestLlamaFile writes each tiny model in F16 and F32 and reads it back
// with gguf-parser-go: the metadata llama.cpp reads, every tensor's name,
// dimensions and type, the alignment of the data and of each tensor, and
// the values: the embedding, the values' and the MLP's rows cut from
// gpuz's packed parameters, the head, the biases, each as gpuz drew it
// (rounded to binary16 in F16), and the queries and keys through
// checkRotaryScores.
func TestLlamaFile(t *testing.T) {
	for _, tc := range tinyLlamas {
		for _, typ := range []Type{F16, F32} {
			t.Run(tc.name+"/"+typ.String(), func(t *testing.T) {
				m := tinyModel(t, tc.config)
				c := m.Config
				layers := c.Layers
				path, params := exportModel(t, m, layers, 3, typ, F32, nil)
				gf, err := parser.ParseGGUFFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if gf.Header.Version != parser.GGUFVersionV3 {
					t.Errorf("version %v, want 3", gf.Header.Version)
				}
				checkMetadata(t, gf, c, layers, typ)

				ptype := parser.GGMLTypeF32
				if typ == F16 {
					ptype = parser.GGMLTypeF16
				}
				want := wantTensors(c, layers, ptype)
				if len(gf.TensorInfos) != len(want) {
					t.Errorf("%d tensors, want %d", len(gf.TensorInfos), len(want))
				}
				if gf.TensorDataStartOffset%Alignment != 0 {
					t.Errorf("the tensor data starts at %d, not a multiple of %d", gf.TensorDataStartOffset, Alignment)
				}
				end := uint64(0)
				for _, info := range gf.TensorInfos {
					w, ok := want[info.Name]
					switch {
					case !ok:
						t.Errorf("unexpected tensor %s", info.Name)
						continue
					case !slices.Equal(info.Dimensions, w.dims) || info.Type != w.typ:
						t.Errorf("%s: dimensions %v of %v, want %v of %v", info.Name, info.Dimensions, info.Type, w.dims, w.typ)
					case info.Offset%Alignment != 0:
						t.Errorf("%s at offset %d, not a multiple of %d", info.Name, info.Offset, Alignment)
					case info.Offset < end:
						t.Errorf("%s at offset %d overlaps the tensor before, which ends at %d", info.Name, info.Offset, end)
					}
					end = info.Offset + info.Bytes()
				}
				if fi, err := os.Stat(path); err != nil || fi.Size() != gf.TensorDataStartOffset+int64(padded(int64(end))) {
					t.Errorf("the file is %d bytes, want the data's start %d and its %d bytes padded (%v)", fi.Size(), gf.TensorDataStartOffset, end, err)
				}

				round := func(v []float32) []float32 {
					if typ == F32 {
						return v
					}
					r := make([]float32, len(v))
					for i, x := range v {
						r[i] = half.FP16ToFloat32(half.FP16FromFloat32(x))
					}
					return r
				}
				q, kv, d := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim, c.Hidden
				rows := func(v []float32, from, n int) []float32 { return v[from*d : (from+n)*d] }
				expect := map[string][]float32{"token_embd.weight": round(params["model.embed_tokens.weight"])}
				if !c.TieEmbeddings {
					expect["output.weight"] = round(params["lm_head.weight"])
				}
				for i := range layers {
					blk, layer := "blk."+strconv.Itoa(i)+".", "model.layers."+strconv.Itoa(i)+"."
					qkv, up := params[layer+"self_attn.qkv_proj.weight"], params[layer+"mlp.gate_up_proj.weight"]
					expect[blk+"attn_v.weight"] = round(rows(qkv, q+kv, kv))
					expect[blk+"ffn_gate.weight"] = round(rows(up, 0, c.Intermediate))
					expect[blk+"ffn_up.weight"] = round(rows(up, c.Intermediate, c.Intermediate))
					expect[blk+"ffn_down.weight"] = round(params[layer+"mlp.down_proj.weight"])
					expect[blk+"attn_output.weight"] = round(params[layer+"self_attn.o_proj.weight"])
					if c.QKVBias {
						expect[blk+"attn_v.bias"] = params[layer+"self_attn.qkv_proj.bias"][q+kv:]
					}
					checkRotaryScores(t, path, gf, c, i, params, round)
				}
				for name, v := range expect {
					if got := readTensor(t, path, gf, name); !slices.Equal(got, v) {
						t.Errorf("%s: the file's values differ from gpuz's", name)
					}
				}
			})
		}
	}
}

// checkMetadata checks the file's metadata against c.
func checkMetadata(t *testing.T, gf *parser.GGUFFile, c hfconfig.Config, layers int, typ Type) {
	t.Helper()
	kvs := gf.Header.MetadataKV
	get := func(key string) parser.GGUFMetadataKV {
		kv, ok := kvs.Get(key)
		if !ok {
			t.Fatalf("no metadata %s", key)
		}
		return kv
	}
	if a := get("general.architecture").ValueString(); a != "llama" {
		t.Errorf("general.architecture %q, want llama", a)
	}
	fileType := uint32(1)
	if typ == F32 {
		fileType = 0
	}
	for key, want := range map[string]uint32{
		"general.alignment":             Alignment,
		"general.file_type":             fileType,
		"llama.vocab_size":              uint32(c.Vocab),
		"llama.context_length":          uint32(c.MaxPositions),
		"llama.embedding_length":        uint32(c.Hidden),
		"llama.block_count":             uint32(layers),
		"llama.feed_forward_length":     uint32(c.Intermediate),
		"llama.attention.head_count":    uint32(c.Heads),
		"llama.attention.head_count_kv": uint32(c.KVHeads),
		"llama.attention.key_length":    uint32(c.HeadDim),
		"llama.attention.value_length":  uint32(c.HeadDim),
		"llama.rope.dimension_count":    uint32(c.HeadDim),
		"tokenizer.ggml.bos_token_id":   1,
		"tokenizer.ggml.eos_token_id":   2,
	} {
		if got := get(key).ValueUint32(); got != want {
			t.Errorf("%s = %d, want %d", key, got, want)
		}
	}
	for key, want := range map[string]float32{
		"llama.rope.freq_base":                   float32(c.RopeTheta),
		"llama.attention.layer_norm_rms_epsilon": float32(c.NormEps),
	} {
		if got := get(key).ValueFloat32(); got != want {
			t.Errorf("%s = %g, want %g", key, got, want)
		}
	}
	if m := get("tokenizer.ggml.model").ValueString(); m != "llama" {
		t.Errorf("tokenizer.ggml.model %q, want llama", m)
	}
	tokens := get("tokenizer.ggml.tokens").ValueArray().ValuesString()
	if len(tokens) != c.Vocab || tokens[1] != "<s>" || tokens[3+10] != "<0x0A>" || len(slices.Compact(slices.Sorted(slices.Values(tokens)))) != c.Vocab {
		t.Errorf("%d tokens (%q …), want %d distinct with <s> at 1 and <0x0A> at 13", len(tokens), tokens[:min(4, len(tokens))], c.Vocab)
	}
	if n := len(get("tokenizer.ggml.scores").ValueArray().ValuesFloat32()); n != c.Vocab {
		t.Errorf("%d scores, want %d", n, c.Vocab)
	}
	if n := len(get("tokenizer.ggml.token_type").ValueArray().ValuesInt32()); n != c.Vocab {
		t.Errorf("%d token types, want %d", n, c.Vocab)
	}
}

// checkRotaryScores checks layer's queries and keys as llama.cpp's llama
// architecture computes with them: for a random input and a few pairs of
// positions, each head's query at the first and its key-value head's key
// at the second, computed
// from the file's weights (and biases) and turned by llama.cpp's rotary
// embedding (adjacent pairs, θ = position·base^(−2i/d) divided by
// rope_freqs[i] when the file has it), give the same score q·k as
// transformers' computation from gpuz's weights (the halves turned by
// the config's inverse frequencies). The score depends on the positions'
// difference only, so a pair at one position would not see a rotation's
// error; the permutation of the rows is invisible in the score, its
// absence (or a wrong divisor) is not.
func checkRotaryScores(t *testing.T, path string, gf *parser.GGUFFile, c hfconfig.Config, layer int, params map[string][]float32, round func([]float32) []float32) {
	t.Helper()
	blk, prefix := "blk."+strconv.Itoa(layer)+".", "model.layers."+strconv.Itoa(layer)+"."
	d, hd, q, kv := c.Hidden, c.HeadDim, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	qkv := round(params[prefix+"self_attn.qkv_proj.weight"])
	bias := make([]float32, q+2*kv)
	if c.QKVBias {
		bias = params[prefix+"self_attn.qkv_proj.bias"]
	}
	fileQ, fileK := readTensor(t, path, gf, blk+"attn_q.weight"), readTensor(t, path, gf, blk+"attn_k.weight")
	fileQB, fileKB := make([]float32, q), make([]float32, kv)
	if c.QKVBias {
		fileQB, fileKB = readTensor(t, path, gf, blk+"attn_q.bias"), readTensor(t, path, gf, blk+"attn_k.bias")
	}
	factors := slices.Repeat([]float32{1}, hd/2)
	if _, ok := gf.TensorInfos.Get("rope_freqs.weight"); ok {
		factors = readTensor(t, path, gf, "rope_freqs.weight")
	}
	invFreq := c.RopeInvFreq()
	rng := rand.New(rand.NewPCG(9, 0))
	x := make([]float64, d)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	// project returns rows [from, from+n) of w·x + b.
	project := func(w, b []float32, from, n int) []float64 {
		y := make([]float64, n)
		for r := range n {
			s := float64(b[from+r])
			for j, xv := range x {
				s += float64(w[(from+r)*d+j]) * xv
			}
			y[r] = s
		}
		return y
	}
	hfQ, hfK := project(qkv, bias, 0, q), project(qkv, bias, q, kv)
	ggQ, ggK := project(fileQ, fileQB, 0, q), project(fileK, fileKB, 0, kv)
	for _, pos := range [][2]int{{1, 0}, {5, 2}, {40, 7}, {3, 30}} {
		for h := range c.Heads {
			g := h / (c.Heads / c.KVHeads)
			// transformers: x1 = v[j], x2 = v[j+hd/2] turned by pos·invFreq[j].
			hfRot := func(v []float64, pos int) []float64 {
				out := make([]float64, hd)
				for j := range hd / 2 {
					a := float64(pos) * float64(invFreq[j])
					x1, x2 := v[j], v[j+hd/2]
					out[j], out[j+hd/2] = x1*math.Cos(a)-x2*math.Sin(a), x2*math.Cos(a)+x1*math.Sin(a)
				}
				return out
			}
			// llama.cpp (ggml_rope, mode 0): pairs (v[2i], v[2i+1]) turned by
			// pos·base^(−2i/hd)/factor[i].
			ggRot := func(v []float64, pos int) []float64 {
				out := make([]float64, hd)
				for i := range hd / 2 {
					a := float64(pos) * math.Pow(c.RopeTheta, -2*float64(i)/float64(hd)) / float64(factors[i])
					x0, x1 := v[2*i], v[2*i+1]
					out[2*i], out[2*i+1] = x0*math.Cos(a)-x1*math.Sin(a), x0*math.Sin(a)+x1*math.Cos(a)
				}
				return out
			}
			dot := func(a, b []float64) float64 {
				s := 0.0
				for i := range a {
					s += a[i] * b[i]
				}
				return s
			}
			want := dot(hfRot(hfQ[h*hd:(h+1)*hd], pos[0]), hfRot(hfK[g*hd:(g+1)*hd], pos[1]))
			got := dot(ggRot(ggQ[h*hd:(h+1)*hd], pos[0]), ggRot(ggK[g*hd:(g+1)*hd], pos[1]))
			if math.Abs(got-want) > 1e-4*(1+math.Abs(want)) {
				t.Fatalf("layer %d, head %d, query at %d, key at %d: the file's rotated q·k is %g, transformers' %g", layer, h, pos[0], pos[1], got, want)
			}
		}
	}
}

// TestLlamaRefuses checks what Llama refuses: GPT-2, MLP biases, layers
// beyond the model's, a vocabulary without room for the special tokens,
// and, writing, a parameter it has no tensor for, one given twice and a
// file closed before every parameter is written.
func TestLlamaRefuses(t *testing.T) {
	llama := tinyModel(t, tinyLlamas[0].config)
	gpt2 := tinyModel(t, `{"model_type": "gpt2", "n_embd": 36, "n_layer": 2, "n_head": 3, "n_positions": 40, "vocab_size": 89}`)
	mlpBias := tinyModel(t, strings.Replace(tinyLlamas[0].config, `"hidden_act"`, `"mlp_bias": true, "hidden_act"`, 1))
	small := llama
	small.Vocab = 2
	for _, tc := range []struct {
		name  string
		l     Llama
		write func(lw *LlamaWriter) error
		want  string
	}{
		{"gpt2", Llama{Config: gpt2.Config, Layers: 1, Type: F16}, nil, "not GPT-2 (gpt2)"},
		{"mlp bias", Llama{Config: mlpBias.Config, Layers: 1, Type: F16}, nil, "no MLP biases"},
		{"layers", Llama{Config: llama.Config, Layers: 3, Type: F16}, nil, "3 layers: want 1 to the model's 2"},
		{"vocabulary", Llama{Config: small.Config, Layers: 1, Type: F16}, nil, "a vocabulary of 2 tokens"},
		{"unknown", Llama{Config: llama.Config, Layers: 1, Type: F16}, func(lw *LlamaWriter) error {
			return lw.Param("model.layers.1.input_layernorm.weight", make([]float32, 48))
		}, "parameter model.layers.1.input_layernorm.weight has no tensor"},
		{"twice", Llama{Config: llama.Config, Layers: 1, Type: F16}, func(lw *LlamaWriter) error {
			lw.Param("model.norm.weight", make([]float32, 48))
			return lw.Param("model.norm.weight", make([]float32, 48))
		}, "parameter model.norm.weight given twice"},
		{"missing", Llama{Config: llama.Config, Layers: 1, Type: F16}, func(lw *LlamaWriter) error { return lw.Close() }, "parameter model.embed_tokens.weight was not written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lw, err := tc.l.NewWriter(io.Discard)
			if err == nil && tc.write != nil {
				err = tc.write(lw)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
