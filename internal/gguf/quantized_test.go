package gguf

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	parser "github.com/gpustack/gguf-parser-go"

	"gpuz/internal/half"
	"gpuz/internal/hfconfig"
	"gpuz/internal/quant"
)

// quantLlamas are tiny Llama-family models whose rows are whole blocks:
// every matrix's rows (the hidden size, the queries' width, the
// intermediate size) a multiple of 32, and of 256 in the second, which
// Q4_K's super-blocks need. The first ties the embedding (so the
// quantized token_embd is the head too); the second is qwen2 with its q,
// k, v biases and an untied head, which stays of the matrices' float
// type.
var quantLlamas = []struct {
	name   string
	config string
	kinds  []Type
}{
	{"llama-gqa-tied", `{"model_type": "llama", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
		"num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300, "max_position_embeddings": 64,
		"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": true, "hidden_act": "silu"}`,
		[]Type{Q8_0, Q4_0}},
	{"qwen2-bias-untied-256", `{"model_type": "qwen2", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
		"num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 272, "max_position_embeddings": 128,
		"rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": false, "hidden_act": "silu",
		"use_sliding_window": false, "sliding_window": 64}`,
		[]Type{Q8_0, Q4_0, Q4_K, Q6_K}},
}

// parserType is gguf-parser-go's name of each type written.
var parserType = map[Type]parser.GGMLType{
	F32: parser.GGMLTypeF32, F16: parser.GGMLTypeF16,
	Q8_0: parser.GGMLTypeQ8_0, Q4_0: parser.GGMLTypeQ4_0, Q4_K: parser.GGMLTypeQ4_K,
	Q6_K: parser.GGMLTypeQ6_K,
}

// maxRelRMS is the largest error, relative to the weights' own root mean
// square, that each kind may leave on weights drawn from a normal
// distribution: half a step's uniform error (step/√12) with a 32-weight
// block's step amax/127 (Q8_0: amax about 2.5σ, so 0.006σ) or amax/8
// (Q4_0: 0.09σ), Q4_K's sub-block range/15 (about 0.09σ), Q6_K's
// 16-weight sub-block's amax/32 (amax about 1.8σ: 0.016σ), each with room
// to spare (measured: 0.0054, 0.086, 0.071 and 0.018) but far
// below the next kind's.
var maxRelRMS = map[Type]float64{Q8_0: 0.01, Q4_0: 0.12, Q4_K: 0.12, Q6_K: 0.03}

// fileRows returns, by tensor name, the float rows the file's matrices
// hold in llama.cpp's order: gpuz's parameters cut into llama.cpp's
// tensors, the queries' and keys' rows moved to llama.cpp's rotary order
// (transformers' row r to the file's row hfconfig.RopeFileRow(r, head
// dim)), and each tensor's row width.
func fileRows(c hfconfig.Config, layers int, params map[string][]float32) (rows map[string][]float32, width map[string]int) {
	q, kv, d, inter := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim, c.Hidden, c.Intermediate
	cut := func(v []float32, from, n, w int) []float32 { return v[from*w : (from+n)*w] }
	permute := func(v []float32, w int) []float32 {
		out := make([]float32, len(v))
		for r := range len(v) / w {
			f := hfconfig.RopeFileRow(r, c.HeadDim)
			copy(out[f*w:(f+1)*w], v[r*w:(r+1)*w])
		}
		return out
	}
	rows = map[string][]float32{"token_embd.weight": params["model.embed_tokens.weight"]}
	width = map[string]int{"token_embd.weight": d}
	if !c.TieEmbeddings {
		rows["output.weight"], width["output.weight"] = params["lm_head.weight"], d
	}
	for i := range layers {
		blk, layer := "blk."+strconv.Itoa(i)+".", "model.layers."+strconv.Itoa(i)+"."
		qkv, up := params[layer+"self_attn.qkv_proj.weight"], params[layer+"mlp.gate_up_proj.weight"]
		for name, v := range map[string][]float32{
			"attn_q.weight":      permute(cut(qkv, 0, q, d), d),
			"attn_k.weight":      permute(cut(qkv, q, kv, d), d),
			"attn_v.weight":      cut(qkv, q+kv, kv, d),
			"ffn_gate.weight":    cut(up, 0, inter, d),
			"ffn_up.weight":      cut(up, inter, inter, d),
			"attn_output.weight": params[layer+"self_attn.o_proj.weight"],
			"ffn_down.weight":    params[layer+"mlp.down_proj.weight"],
		} {
			rows[blk+name], width[blk+name] = v, d
		}
		width[blk+"attn_output.weight"], width[blk+"ffn_down.weight"] = q, inter
	}
	return rows, width
}

// readBytes returns the raw bytes of the tensor name of the parsed file
// at path: the size gguf-parser-go computes from its type and
// dimensions, at the data's start plus the tensor's offset.
func readBytes(t *testing.T, path string, gf *parser.GGUFFile, name string) []byte {
	t.Helper()
	info, ok := gf.TensorInfos.Get(name)
	if !ok {
		t.Fatalf("no tensor %s", name)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, info.Bytes())
	if _, err := f.ReadAt(b, gf.TensorDataStartOffset+int64(info.Offset)); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// TestLlamaFileQuantized writes each tiny model with its projections and
// token embedding in each block type and reads it back with
// gguf-parser-go: the file type in the metadata; every tensor's type (the
// projections' and the embedding's the block type, the untied head the
// matrices' F16, the norms and biases F32), dimensions and size (the
// parser's own, from its type traits, equal to rows·RowBytes), each
// aligned and after the one before, and the file's length; the quantized
// bytes equal quant.Quantize of gpuz's float rows in the file's order
// (the queries' and keys' rows permuted for llama.cpp's rotary pairs
// first); and those bytes, dequantized, within the kind's error of the
// floats. The file read as a model (hfconfig.Load) has the kind as its
// projections' and embedding's.
func TestLlamaFileQuantized(t *testing.T) {
	for _, tc := range quantLlamas {
		for _, kind := range tc.kinds {
			t.Run(tc.name+"/"+kind.String(), func(t *testing.T) {
				m := tinyModel(t, tc.config)
				c, layers := m.Config, m.Layers
				path, params := exportModel(t, m, layers, 3, F16, kind, nil)
				gf, err := parser.ParseGGUFFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if ft, ok := gf.Header.MetadataKV.Get("general.file_type"); !ok || ft.ValueUint32() != (Llama{Type: F16, Weights: kind}).FileType() {
					t.Errorf("general.file_type %v, want %d", ft.Value, (Llama{Type: F16, Weights: kind}).FileType())
				}
				rows, width := fileRows(c, layers, params)
				want := wantTensors(c, layers, parserType[kind])
				if !c.TieEmbeddings {
					want["output.weight"] = wantTensor{want["output.weight"].dims, parser.GGMLTypeF16}
				}
				if len(gf.TensorInfos) != len(want) {
					t.Errorf("%d tensors, want %d", len(gf.TensorInfos), len(want))
				}
				qk, _ := kind.kind()
				end := uint64(0)
				for _, info := range gf.TensorInfos {
					w, ok := want[info.Name]
					switch {
					case !ok:
						t.Errorf("unexpected tensor %s", info.Name)
						continue
					case !slices.Equal(info.Dimensions, w.dims) || info.Type != w.typ:
						t.Errorf("%s: dimensions %v of %v, want %v of %v", info.Name, info.Dimensions, info.Type, w.dims, w.typ)
						continue
					case info.Offset%Alignment != 0 || info.Offset < end:
						t.Errorf("%s at offset %d: want a multiple of %d from %d on", info.Name, info.Offset, Alignment, end)
					}
					end = info.Offset + info.Bytes()
					if w.typ != parserType[kind] {
						continue
					}
					cols := width[info.Name]
					n := len(rows[info.Name]) / cols
					if int64(info.Bytes()) != int64(n)*qk.RowBytes(cols) {
						t.Errorf("%s: %d bytes by gguf-parser-go's count, %d rows of %d by quant's", info.Name, info.Bytes(), n, qk.RowBytes(cols))
					}
					got := readBytes(t, path, gf, info.Name)
					q := make([]byte, qk.Bytes(n, cols))
					if err := quant.Quantize(qk, q, rows[info.Name], n, cols); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, q) {
						t.Errorf("%s: the file's bytes differ from quant.Quantize of gpuz's rows in the file's order", info.Name)
					}
					y := make([]float32, n*cols)
					if err := quant.Dequantize(qk, y, got, n, cols); err != nil {
						t.Fatal(err)
					}
					if e := relRMS(rows[info.Name], y); !(e <= maxRelRMS[kind]) {
						t.Errorf("%s: dequantized, a root mean square error of %.4g of the weights', over %v's %g", info.Name, e, kind, maxRelRMS[kind])
					}
				}
				if fi, err := os.Stat(path); err != nil || fi.Size() != gf.TensorDataStartOffset+padded(int64(end)) {
					t.Errorf("the file's size (%v): want the data's start %d and its %d bytes padded", err, gf.TensorDataStartOffset, end)
				}
				if !c.TieEmbeddings {
					head := readTensor(t, path, gf, "output.weight")
					for i, x := range params["lm_head.weight"] {
						if head[i] != half.FP16ToFloat32(half.FP16FromFloat32(x)) {
							t.Fatalf("output.weight[%d] = %g, want gpuz's %g in binary16", i, head[i], x)
						}
					}
				}

				read, err := hfconfig.Load(path)
				if err != nil {
					t.Fatal(err)
				}
				for name, k := range read.Kinds {
					wantKind := quant.F32
					switch {
					case name == "lm_head.weight":
						wantKind = quant.F16
					case strings.HasSuffix(name, "proj.weight") || name == "model.embed_tokens.weight":
						wantKind = qk
					}
					if k != wantKind {
						t.Errorf("read as a model, %s is %v, want %v", name, k, wantKind)
					}
				}
			})
		}
	}
}

// relRMS returns the root mean square of x − y over that of x.
func relRMS(x, y []float32) float64 {
	var e, s float64
	for i := range x {
		d := float64(x[i]) - float64(y[i])
		e += d * d
		s += float64(x[i]) * float64(x[i])
	}
	return math.Sqrt(e / s)
}

// TestLlamaRefusesWeights checks what Llama refuses of Weights: a float
// type other than the zero value, and rows that are not whole blocks of
// the type (named by the first such tensor); and that the same models
// write in Q8_0 when their rows are whole blocks of 32.
func TestLlamaRefusesWeights(t *testing.T) {
	llama := tinyModel(t, quantLlamas[0].config) // rows of 64 and 96
	odd := tinyModel(t, tinyLlamas[0].config)    // rows of 48
	for _, tc := range []struct {
		name string
		l    Llama
		want string
	}{
		{"f16", Llama{Config: llama.Config, Layers: 1, Type: F32, Weights: F16}, "weights of type F16: want Q8_0, Q4_0, Q4_K or Q6_K (or F32 for the matrices' type)"},
		{"unknown", Llama{Config: llama.Config, Layers: 1, Type: F16, Weights: Type(30)}, "weights of type Type(30): want Q8_0, Q4_0, Q4_K or Q6_K (or F32 for the matrices' type)"},
		{"q4_k", Llama{Config: llama.Config, Layers: 1, Type: F16, Weights: Q4_K}, "token_embd.weight: a q4_k weight's rows must be a multiple of 256 weights; these have 64"},
		{"q8_0", Llama{Config: odd.Config, Layers: 1, Type: F16, Weights: Q8_0}, "token_embd.weight: a q8_0 weight's rows must be a multiple of 32 weights; these have 48"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.l.Check()
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if _, err := tc.l.NewWriter(&bytes.Buffer{}); err == nil {
				t.Errorf("NewWriter accepts what Check refuses")
			}
		})
	}
	if err := (Llama{Config: llama.Config, Layers: 2, Type: F16, Weights: Q8_0}).Check(); err != nil {
		t.Errorf("Q8_0 of rows of 64 and 96: %v", err)
	}
}

// TestEncoderQuantized writes a Q8_0 matrix of three rows of 64 (204
// bytes, padded to 224), a Q4_0 one of one row of 32 (18 bytes) and an F32
// vector after them, and reads the table back: each tensor's offset is
// the padded sizes before it, and its bytes are quant.Quantize's.
func TestEncoderQuantized(t *testing.T) {
	tensors := []Tensor{
		{Name: "q8", Dims: []uint64{64, 3}, Type: Q8_0},
		{Name: "q4", Dims: []uint64{32, 1}, Type: Q4_0},
		{Name: "v", Dims: []uint64{2}, Type: F32},
	}
	values := map[string][]float32{"v": {1, -2}}
	for _, n := range []struct {
		name string
		len  int
	}{{"q8", 192}, {"q4", 32}} {
		v := make([]float32, n.len)
		for i := range v {
			v[i] = float32(math.Sin(float64(3*i + n.len)))
		}
		values[n.name] = v
	}
	var buf bytes.Buffer
	e, err := NewEncoder(&buf, nil, tensors)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"v", "q4", "q8"} {
		if err := e.Write(name, values[name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "q.gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o666); err != nil {
		t.Fatal(err)
	}
	gf, err := parser.ParseGGUFFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		kind   quant.Kind
		rows   int
		offset uint64
	}{{"q8", quant.Q8_0, 3, 0}, {"q4", quant.Q4_0, 1, 224}} {
		info, _ := gf.TensorInfos.Get(tc.name)
		cols := len(values[tc.name]) / tc.rows
		want := make([]byte, tc.kind.Bytes(tc.rows, cols))
		if err := quant.Quantize(tc.kind, want, values[tc.name], tc.rows, cols); err != nil {
			t.Fatal(err)
		}
		if info.Offset != tc.offset || !bytes.Equal(readBytes(t, path, gf, tc.name), want) {
			t.Errorf("%s at offset %d (want %d): its bytes differ from quant.Quantize's", tc.name, info.Offset, tc.offset)
		}
	}
	if info, _ := gf.TensorInfos.Get("v"); info.Offset != 256 || !slices.Equal(readTensor(t, path, gf, "v"), values["v"]) {
		t.Errorf("v at offset %d (want 256, after 224 + 18 padded to 32)", info.Offset)
	}
}
