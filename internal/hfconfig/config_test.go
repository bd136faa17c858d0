package hfconfig

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestPresetsParamCount checks every preset's ParamCount against its
// published safetensors total.
func TestPresetsParamCount(t *testing.T) {
	ps := Presets()
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
		if got := p.Config.ParamCount(); got != p.Params {
			t.Errorf("%s: ParamCount() = %d, published %d", p.Name, got, p.Params)
		}
		if p.Name != strings.ToLower(p.Name) || p.Repo == "" || !strings.HasPrefix(p.Source, "https://huggingface.co/"+p.Repo+"/") {
			t.Errorf("%s: name, repo %q or source %q malformed", p.Name, p.Repo, p.Source)
		}
	}
	for _, want := range []string{"gpt2", "smollm2-135m", "qwen2.5-0.5b", "llama-3.2-1b", "tinyllama-1.1b", "llama-3.1-8b"} {
		if !slices.Contains(names, want) {
			t.Errorf("no preset %s", want)
		}
	}
	files, _ := presetFiles.ReadDir("presets")
	if len(files) != len(ps) {
		t.Errorf("%d files in presets/, %d presets indexed", len(files), len(ps))
	}
}

// TestTestdataParamCount checks configurations of models that are not
// presets against their published totals.
func TestTestdataParamCount(t *testing.T) {
	tests := []struct {
		file string
		want int64
	}{
		{"gpt2-medium.json", 354_823_168},
		{"smollm2-360m.json", 361_821_120},
		{"qwen2.5-1.5b.json", 1_543_714_304},
		{"mistral-7b-v0.1.json", 7_241_732_096},
	}
	for _, tt := range tests {
		m, err := Load(filepath.Join("testdata", tt.file))
		if err != nil {
			t.Errorf("%s: %v", tt.file, err)
			continue
		}
		if got := m.ParamCount(); got != tt.want {
			t.Errorf("%s: ParamCount() = %d, published %d", tt.file, got, tt.want)
		}
		var sum int64
		for _, ts := range m.Tensors() {
			n := int64(1)
			for _, d := range ts.Shape {
				n *= int64(d)
			}
			sum += n
		}
		if sum != m.ParamCount() {
			t.Errorf("%s: Tensors() sum to %d, ParamCount() %d", tt.file, sum, m.ParamCount())
		}
	}
}

// TestParseFields checks what Parse reads from the presets' and
// testdata's files, field by field.
func TestParseFields(t *testing.T) {
	tests := []struct {
		name string
		want Config
	}{
		{"gpt2", Config{
			ModelType: "gpt2", Arch: ArchGPT2, Hidden: 768, Intermediate: 3072, Layers: 12, Heads: 12,
			KVHeads: 12, HeadDim: 64, Vocab: 50257, MaxPositions: 1024, TieEmbeddings: true,
			Act: ActGELUTanh, NormEps: 1e-5, Dropout: 0.1, Dropouts: "resid_pdrop 0.1, embd_pdrop 0.1, attn_pdrop 0.1",
		}},
		{"qwen2.5-0.5b", Config{
			ModelType: "qwen2", Arch: ArchLlama, Hidden: 896, Intermediate: 4864, Layers: 24, Heads: 14,
			KVHeads: 2, HeadDim: 64, Vocab: 151936, MaxPositions: 32768, TieEmbeddings: true, QKVBias: true,
			Act: ActSiLU, NormEps: 1e-6, RopeTheta: 1e6,
		}},
		{"llama-3.2-1b", Config{
			ModelType: "llama", Arch: ArchLlama, Hidden: 2048, Intermediate: 8192, Layers: 16, Heads: 32,
			KVHeads: 8, HeadDim: 64, Vocab: 128256, MaxPositions: 131072, TieEmbeddings: true,
			Act: ActSiLU, NormEps: 1e-5, RopeTheta: 500000,
			RopeScaling: &RopeScaling{Type: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 8192},
		}},
		{"testdata/mistral-7b-v0.1.json", Config{
			ModelType: "mistral", Arch: ArchLlama, Hidden: 4096, Intermediate: 14336, Layers: 32, Heads: 32,
			KVHeads: 8, HeadDim: 128, Vocab: 32000, MaxPositions: 32768,
			Act: ActSiLU, NormEps: 1e-5, RopeTheta: 10000, SlidingWindow: 4096,
		}},
	}
	for _, tt := range tests {
		m, err := Load(tt.name)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		got := m.Config
		gs, ws := got.RopeScaling, tt.want.RopeScaling
		got.RopeScaling, tt.want.RopeScaling = nil, nil
		if got != tt.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, tt.want)
		}
		if !reflect.DeepEqual(gs, ws) {
			t.Errorf("%s: RopeScaling %+v, want %+v", tt.name, gs, ws)
		}
	}
}

// llamaJSON is a small llama config.json that the bad-input rows edit.
const llamaJSON = `{
  "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
  "vocab_size": 100, "max_position_embeddings": 32, "hidden_act": "silu",
  "rms_norm_eps": 1e-5, "rope_theta": 10000, "torch_dtype": "bfloat16",
  "bos_token_id": 1, "architectures": ["LlamaForCausalLM"], "use_cache": true,
  "initializer_range": 0.02, "pretraining_tp": 2
}`

// gpt2JSON is a small gpt2 config.json that the bad-input rows edit.
const gpt2JSON = `{
  "model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4,
  "vocab_size": 100, "n_positions": 32, "activation_function": "gelu_new"
}`

// edit returns base with the fields of set replaced or added (a nil value
// deletes the field), re-encoded as JSON text.
func edit(t *testing.T, base string, set map[string]string) []byte {
	t.Helper()
	var o object
	if err := jsonUnmarshal([]byte(base), &o); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		if v == "" {
			delete(o, k)
		} else {
			o[k] = []byte(v)
		}
	}
	data, err := jsonMarshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestParseRefuses checks one bad input per validation rule: Parse
// refuses it, in one line that names the field.
func TestParseRefuses(t *testing.T) {
	tests := []struct {
		name string
		base string
		set  map[string]string // "" deletes the field
		want string            // in the message
	}{
		{"unknown model_type", llamaJSON, map[string]string{"model_type": `"falcon"`}, `model_type "falcon" is not supported (supported: gpt2, llama, mistral, qwen2)`},
		{"no model_type", llamaJSON, map[string]string{"model_type": ""}, "model_type is missing"},
		{"null vocab_size", llamaJSON, map[string]string{"vocab_size": "null"}, "vocab_size is null"},
		{"null n_layer", gpt2JSON, map[string]string{"n_layer": "null"}, "n_layer is null"},
		{"zero layers", llamaJSON, map[string]string{"num_hidden_layers": "0"}, "num_hidden_layers must be positive"},
		{"negative intermediate", llamaJSON, map[string]string{"intermediate_size": "-4"}, "intermediate_size must be positive"},
		{"zero n_embd", gpt2JSON, map[string]string{"n_embd": "0"}, "n_embd must be positive"},
		{"fractional size", llamaJSON, map[string]string{"hidden_size": "64.5"}, "hidden_size must be an integer"},
		{"string size", gpt2JSON, map[string]string{"n_head": `"4"`}, "n_head must be an integer"},
		{"heads not dividing hidden", llamaJSON, map[string]string{"num_attention_heads": "5", "num_key_value_heads": "5"}, "num_attention_heads 5 does not divide hidden_size 64"},
		{"n_head not dividing n_embd", gpt2JSON, map[string]string{"n_head": "5"}, "n_head 5 does not divide n_embd 64"},
		{"kv heads not dividing heads", llamaJSON, map[string]string{"num_key_value_heads": "3"}, "num_key_value_heads 3 does not divide num_attention_heads 4"},
		{"llama act", llamaJSON, map[string]string{"hidden_act": `"gelu"`}, `hidden_act "gelu" is not supported`},
		{"gpt2 erf gelu", gpt2JSON, map[string]string{"activation_function": `"gelu"`}, `activation_function "gelu" is GELU's erf form`},
		{"gpt2 relu", gpt2JSON, map[string]string{"activation_function": `"relu"`}, `activation_function "relu" is not supported`},
		{"rope_scaling linear", llamaJSON, map[string]string{"rope_scaling": `{"rope_type": "linear", "factor": 2}`}, `rope_scaling of rope_type "linear" is not supported`},
		{"rope_scaling yarn old key", llamaJSON, map[string]string{"rope_scaling": `{"type": "yarn", "factor": 4}`}, `rope_scaling of rope_type "yarn"`},
		{"llama3 without factor", llamaJSON, map[string]string{"rope_scaling": `{"rope_type": "llama3", "low_freq_factor": 1, "high_freq_factor": 4, "original_max_position_embeddings": 16}`}, "rope_scaling.factor is missing"},
		{"llama3 bands crossed", llamaJSON, map[string]string{"rope_scaling": `{"rope_type": "llama3", "factor": 8, "low_freq_factor": 4, "high_freq_factor": 1, "original_max_position_embeddings": 16}`}, "rope_scaling.high_freq_factor 1 must be greater than low_freq_factor 4"},
		{"scale_attn_weights false", gpt2JSON, map[string]string{"scale_attn_weights": "false"}, "scale_attn_weights false is not supported"},
		{"scale by inverse layer", gpt2JSON, map[string]string{"scale_attn_by_inverse_layer_idx": "true"}, "scale_attn_by_inverse_layer_idx true is not supported"},
		{"reorder and upcast", gpt2JSON, map[string]string{"reorder_and_upcast_attn": "true"}, "reorder_and_upcast_attn true is not supported"},
		{"cross attention", gpt2JSON, map[string]string{"add_cross_attention": "true"}, "add_cross_attention true is not supported"},
		{"odd head_dim", llamaJSON, map[string]string{"head_dim": "15"}, "head_dim 15 is odd"},
		{"odd head_dim derived", llamaJSON, map[string]string{"hidden_size": "36"}, "head_dim 9 is odd"},
		{"vocab beyond 2^24", llamaJSON, map[string]string{"vocab_size": "16777217"}, "vocab_size 16777217 is beyond 2^24"},
		{"products overflow", llamaJSON, map[string]string{"hidden_size": "4611686018427387904", "intermediate_size": "4611686018427387904", "num_attention_heads": "2", "num_key_value_heads": "2"}, "overflows int64"},
		{"n_embd overflows 4·n_embd", gpt2JSON, map[string]string{"n_embd": "4611686018427387904"}, "n_embd 4611686018427387904 is too large"},
		{"layers beyond bound", gpt2JSON, map[string]string{"n_layer": "100000"}, "n_layer 100000 is beyond 65536"},
		{"bool field mistyped", llamaJSON, map[string]string{"attention_bias": `"yes"`}, "attention_bias must be true or false"},
		{"eps zero", gpt2JSON, map[string]string{"layer_norm_epsilon": "0"}, "layer_norm_epsilon must be positive"},
		{"rope_theta negative", llamaJSON, map[string]string{"rope_theta": "-1"}, "rope_theta must be positive"},
		// issue 44 item 24: malformed inputs that a planted change let
		// through with every test passing.
		{"gpt2 n_inner zero", gpt2JSON, map[string]string{"n_inner": "0"}, "n_inner must be positive, got 0"},
		{"llama3 bands equal", llamaJSON, map[string]string{"rope_scaling": `{"rope_type": "llama3", "factor": 8, "low_freq_factor": 4, "high_freq_factor": 4, "original_max_position_embeddings": 16}`}, "rope_scaling.high_freq_factor 4 must be greater than low_freq_factor 4"},
		{"llama3 original positions zero", llamaJSON, map[string]string{"rope_scaling": `{"rope_type": "llama3", "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4, "original_max_position_embeddings": 0}`}, "rope_scaling.original_max_position_embeddings must be positive, got 0"},
		{"llama3 factor below 1", llamaJSON, map[string]string{"rope_scaling": `{"rope_type": "llama3", "factor": 0.5, "low_freq_factor": 1, "high_freq_factor": 4, "original_max_position_embeddings": 16}`}, "rope_scaling.factor must be at least 1, got 0.5"},
		// issue 44 item 4: the maximum over the three hid a negative one.
		{"attn_pdrop negative", gpt2JSON, map[string]string{"attn_pdrop": "-0.5"}, "attn_pdrop must be a probability from 0 to 1, got -0.5"},
		{"resid_pdrop above 1", gpt2JSON, map[string]string{"resid_pdrop": "1.5"}, "resid_pdrop must be a probability from 0 to 1, got 1.5"},
		{"attention_dropout negative", llamaJSON, map[string]string{"attention_dropout": "-0.1"}, "attention_dropout must be a probability from 0 to 1, got -0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(edit(t, tt.base, tt.set))
			if err == nil {
				t.Fatalf("Parse accepted it")
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want one line containing %q", msg, tt.want)
			}
		})
	}
	for _, bad := range []string{`{"model_type": "llama",`, `[1, 2]`, `null`, ``} {
		if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "malformed JSON") {
			t.Errorf("Parse(%q) = %v, want malformed JSON", bad, err)
		}
	}
}

// TestParseAccepts checks inputs that look unusual but that transformers
// computes as gpuz does.
func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name  string
		base  string
		set   map[string]string
		check func(Config) bool
	}{
		{"pretraining_tp 2 is a slicing", llamaJSON, nil, func(c Config) bool { return c.KVHeads == 2 && c.HeadDim == 16 }},
		{"head_dim given, not hidden/heads", llamaJSON, map[string]string{"head_dim": "32"}, func(c Config) bool {
			return c.HeadDim == 32 && c.Tensors()[1].Shape[0] == 128
		}},
		{"kv heads default to heads", llamaJSON, map[string]string{"num_key_value_heads": "null"}, func(c Config) bool { return c.KVHeads == 4 }},
		{"old rope_scaling key", llamaJSON, map[string]string{"rope_scaling": `{"type": "llama3", "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4, "original_max_position_embeddings": 16}`}, func(c Config) bool {
			return c.RopeScaling != nil && c.RopeScaling.Factor == 8
		}},
		{"attention and mlp biases", llamaJSON, map[string]string{"attention_bias": "true", "mlp_bias": "true"}, func(c Config) bool {
			return c.QKVBias && c.OutBias && c.MLPBias
		}},
		{"gpt2 n_inner", gpt2JSON, map[string]string{"n_inner": "100"}, func(c Config) bool { return c.Intermediate == 100 }},
		{"gpt2 n_inner null is 4·n_embd", gpt2JSON, map[string]string{"n_inner": "null"}, func(c Config) bool { return c.Intermediate == 4*c.Hidden }},
		// issue 44 item 24: valid inputs at the boundary, which a planted
		// change refused with every test passing.
		{"vocabulary of exactly 2^24", llamaJSON, map[string]string{"vocab_size": "16777216"}, func(c Config) bool { return c.Vocab == MaxVocab }},
		{"llama3 factor 1", llamaJSON, map[string]string{"rope_scaling": `{"rope_type": "llama3", "factor": 1, "low_freq_factor": 1, "high_freq_factor": 4, "original_max_position_embeddings": 16}`}, func(c Config) bool {
			return c.RopeScaling != nil && c.RopeScaling.Factor == 1
		}},
		{"layers at the bound", gpt2JSON, map[string]string{"n_layer": "65536"}, func(c Config) bool { return c.Layers == MaxLayers }},
		{"gpt2 untied", gpt2JSON, map[string]string{"tie_word_embeddings": "false"}, func(c Config) bool {
			ts := c.Tensors()
			return !c.TieEmbeddings && ts[len(ts)-1].Name == "lm_head.weight"
		}},
		{"gpt2 pytorch tanh", gpt2JSON, map[string]string{"activation_function": `"gelu_pytorch_tanh"`}, func(c Config) bool { return c.Act == ActGELUTanh }},
		{"gpt2 dropout declared", gpt2JSON, map[string]string{"attn_pdrop": "0.3", "resid_pdrop": "0", "embd_pdrop": "0"}, func(c Config) bool { return c.Dropout == 0.3 && c.Dropouts == "attn_pdrop 0.3" }},
		{"gpt2 dropout of 1", gpt2JSON, map[string]string{"attn_pdrop": "1"}, func(c Config) bool { return c.Dropout == 1 }},
		{"qwen2 sliding window in effect", strings.Replace(llamaJSON, `"llama"`, `"qwen2"`, 1), map[string]string{"use_sliding_window": "true", "sliding_window": "16", "max_window_layers": "1"}, func(c Config) bool {
			return c.SlidingWindow == 16 && c.QKVBias && !c.OutBias
		}},
		{"qwen2 sliding window on no layer", strings.Replace(llamaJSON, `"llama"`, `"qwen2"`, 1), map[string]string{"use_sliding_window": "true", "sliding_window": "16", "max_window_layers": "2"}, func(c Config) bool {
			return c.SlidingWindow == 0
		}},
		{"mistral null window", strings.Replace(llamaJSON, `"llama"`, `"mistral"`, 1), map[string]string{"sliding_window": "null"}, func(c Config) bool { return c.SlidingWindow == 0 }},
	}
	for _, tt := range tests {
		c, err := Parse(edit(t, tt.base, tt.set))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !tt.check(c) {
			t.Errorf("%s: %+v", tt.name, c)
		}
	}
}

// TestCheck checks what depends on the sequence length.
func TestCheck(t *testing.T) {
	gpt2, _ := presetNamed("gpt2")
	smol, _ := presetNamed("smollm2-135m")
	qwen, _ := presetNamed("qwen2.5-0.5b")
	mistral, err := Load("testdata/mistral-7b-v0.1.json")
	if err != nil {
		t.Fatal(err)
	}
	scaled := func(original, maxPos int) Config {
		c := smol.Config
		c.MaxPositions = maxPos
		c.RopeScaling = &RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: original}
		return c
	}
	tests := []struct {
		name     string
		c        Config
		seq      int
		err      string   // in the error, "" for none
		warnings []string // each in its warning, in order
	}{
		{"gpt2 fits", gpt2.Config, 1024, "", []string{"dropout (resid_pdrop 0.1, embd_pdrop 0.1, attn_pdrop 0.1)"}},
		{"gpt2 beyond n_positions", gpt2.Config, 1025, "n_positions 1024", nil},
		{"smollm2 within", smol.Config, 2048, "", nil},
		{"smollm2 beyond max positions", smol.Config, 8193, "", []string{"beyond max_position_embeddings 8192"}},
		{"qwen window not in effect", qwen.Config, 32769, "", []string{"beyond max_position_embeddings"}},
		{"mistral window cannot matter", mistral.Config, 4096, "", []string{"sliding_window 4096 cannot matter"}},
		{"mistral window shorter", mistral.Config, 4097, "sliding_window 4096 is shorter than the sequence length 4097", nil},
		{"zero length", smol.Config, 0, "must be positive", nil},
		{"llama3 original below max", scaled(8192, 131072), 2048, "", nil},
		{"llama3 original equal to max", scaled(8192, 8192), 2048, "", []string{"original_max_position_embeddings 8192 is not below max_position_embeddings 8192"}},
		{"llama3 original above max", scaled(8192, 4096), 2048, "", []string{"original_max_position_embeddings 8192 is not below max_position_embeddings 4096"}},
	}
	for _, tt := range tests {
		w, err := tt.c.Check(tt.seq)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if len(w) != len(tt.warnings) {
			t.Errorf("%s: warnings %q, want %d", tt.name, w, len(tt.warnings))
			continue
		}
		for i := range w {
			if !strings.Contains(w[i], tt.warnings[i]) {
				t.Errorf("%s: warning %q, want one containing %q", tt.name, w[i], tt.warnings[i])
			}
		}
	}
}

// TestTensorsNames checks the names, shapes and order of a tiny llama
// with every bias and of GPT-2's first layer.
func TestTensorsNames(t *testing.T) {
	c, err := Parse(edit(t, llamaJSON, map[string]string{"attention_bias": "true", "mlp_bias": "true", "num_hidden_layers": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ts := range c.Tensors() {
		got = append(got, ts.Name+" "+shapeString(ts.Shape))
	}
	want := []string{
		"model.embed_tokens.weight [100 64]",
		"model.layers.0.self_attn.q_proj.weight [64 64]", "model.layers.0.self_attn.q_proj.bias [64]",
		"model.layers.0.self_attn.k_proj.weight [32 64]", "model.layers.0.self_attn.k_proj.bias [32]",
		"model.layers.0.self_attn.v_proj.weight [32 64]", "model.layers.0.self_attn.v_proj.bias [32]",
		"model.layers.0.self_attn.o_proj.weight [64 64]", "model.layers.0.self_attn.o_proj.bias [64]",
		"model.layers.0.mlp.gate_proj.weight [128 64]", "model.layers.0.mlp.gate_proj.bias [128]",
		"model.layers.0.mlp.up_proj.weight [128 64]", "model.layers.0.mlp.up_proj.bias [128]",
		"model.layers.0.mlp.down_proj.weight [64 128]", "model.layers.0.mlp.down_proj.bias [64]",
		"model.layers.0.input_layernorm.weight [64]", "model.layers.0.post_attention_layernorm.weight [64]",
		"model.norm.weight [64]", "lm_head.weight [100 64]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Tensors():\n got %q\nwant %q", got, want)
	}
	g, _ := presetNamed("gpt2")
	ts := g.Config.Tensors()
	got = nil
	for _, x := range ts[:14] {
		got = append(got, x.Name+" "+shapeString(x.Shape))
	}
	want = []string{
		"wte.weight [50257 768]", "wpe.weight [1024 768]",
		"h.0.ln_1.weight [768]", "h.0.ln_1.bias [768]",
		"h.0.attn.c_attn.weight [768 2304]", "h.0.attn.c_attn.bias [2304]",
		"h.0.attn.c_proj.weight [768 768]", "h.0.attn.c_proj.bias [768]",
		"h.0.ln_2.weight [768]", "h.0.ln_2.bias [768]",
		"h.0.mlp.c_fc.weight [768 3072]", "h.0.mlp.c_fc.bias [3072]",
		"h.0.mlp.c_proj.weight [3072 768]", "h.0.mlp.c_proj.bias [768]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("GPT-2 Tensors():\n got %q\nwant %q", got, want)
	}
	if last := ts[len(ts)-1].Name; last != "ln_f.bias" || len(ts) != 2+12*12+2 {
		t.Errorf("GPT-2: %d tensors ending %s, want 148 ending ln_f.bias", len(ts), last)
	}
}

// TestLoad checks Load's ways of naming a model.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("testdata/smollm2-360m.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		arg, name, dir string
		hidden         int
		err            string
	}{
		{"SmolLM2-135M", "smollm2-135m", "", 576, ""},
		{"testdata/gpt2-medium.json", "testdata/gpt2-medium.json", "", 1024, ""},
		{dir, dir, dir, 960, ""},
		{"no-such-model", "", "", 0, "neither a file, a directory nor a preset (presets: gpt2, smollm2-135m"},
		{"testdata", "", "", 0, "config.json"},
	}
	for _, tt := range tests {
		m, err := Load(tt.arg)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Load(%q): error %v, want one containing %q", tt.arg, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Load(%q): %v", tt.arg, err)
			continue
		}
		if m.Name != tt.name || m.Dir != tt.dir || m.Hidden != tt.hidden || m.Checked != 0 {
			t.Errorf("Load(%q) = name %q dir %q hidden %d checked %d, want %q %q %d 0", tt.arg, m.Name, m.Dir, m.Hidden, m.Checked, tt.name, tt.dir, tt.hidden)
		}
	}
}

// TestValidate checks Configs made in Go rather than parsed: Validate
// names the field as a file of the Config's architecture spells it.
func TestValidate(t *testing.T) {
	g, _ := presetNamed("gpt2")
	l, _ := presetNamed("llama-3.2-1b")
	tests := []struct {
		name   string
		base   Config
		change func(*Config)
		want   string // in the error, "" for none
	}{
		{"gpt2 as parsed", g.Config, func(*Config) {}, ""},
		{"llama as parsed", l.Config, func(*Config) {}, ""},
		{"no architecture", Config{}, func(*Config) {}, `architecture "" is not supported`},
		{"gpt2 zero layers", g.Config, func(c *Config) { c.Layers = 0 }, "n_layer must be positive"},
		{"llama zero layers", l.Config, func(c *Config) { c.Layers = 0 }, "num_hidden_layers must be positive"},
		{"gpt2 with llama's act", g.Config, func(c *Config) { c.Act = ActSiLU }, `activation_function "silu"`},
		{"gpt2 with a bias flag", g.Config, func(c *Config) { c.QKVBias = true }, "GPT-2's biases are always there"},
		{"gpt2 head_dim off", g.Config, func(c *Config) { c.HeadDim = 32 }, "n_head 12 and n_embd 768 do not agree"},
		{"llama odd head_dim", l.Config, func(c *Config) { c.HeadDim = 63 }, "head_dim 63 is odd"},
		{"llama3 factor below 1", l.Config, func(c *Config) {
			c.RopeScaling = &RopeScaling{Type: "llama3", Factor: 0.5, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 8192}
		}, "rope_scaling.factor must be at least 1"},
		{"llama3 infinite low factor", l.Config, func(c *Config) {
			c.RopeScaling = &RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: math.Inf(1), HighFreqFactor: 4, OriginalMaxPositions: 8192}
		}, "low_freq_factor must be positive"},
		{"negative window", l.Config, func(c *Config) { c.SlidingWindow = -1 }, "sliding_window must not be negative"},
		{"dropout above 1", g.Config, func(c *Config) { c.Dropout = 1.5 }, "outside [0, 1]"},
		{"layers overflow", l.Config, func(c *Config) { c.Hidden, c.Intermediate = 1<<40, 1<<40 }, "overflows int64"},
	}
	for _, tt := range tests {
		c := tt.base
		tt.change(&c)
		err := c.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}
