package hfconfig

import (
	"strings"
	"testing"
)

// TestParseDefaults checks that a size the file leaves out takes the
// default of transformers' config class for its model_type
// (configuration_llama.py, _mistral.py, _qwen2.py, _gpt2.py), that
// Defaulted lists it, and that a null one is no default.
func TestParseDefaults(t *testing.T) {
	mistral := strings.Replace(llamaJSON, `"llama"`, `"mistral"`, 1)
	qwen2 := strings.Replace(llamaJSON, `"llama"`, `"qwen2"`, 1)
	tests := []struct {
		name      string
		base      string
		set       map[string]string // "" deletes the field
		got       func(Config) int
		want      int
		defaulted string // Defaulted, exactly
	}{
		{"llama vocab_size", llamaJSON, map[string]string{"vocab_size": ""}, func(c Config) int { return c.Vocab }, 32000, "vocab_size 32000"},
		{"llama max_position_embeddings", llamaJSON, map[string]string{"max_position_embeddings": ""}, func(c Config) int { return c.MaxPositions }, 2048, "max_position_embeddings 2048"},
		{"llama hidden_size", llamaJSON, map[string]string{"hidden_size": ""}, func(c Config) int { return c.Hidden }, 4096, "hidden_size 4096"},
		{"llama intermediate_size", llamaJSON, map[string]string{"intermediate_size": ""}, func(c Config) int { return c.Intermediate }, 11008, "intermediate_size 11008"},
		{"llama num_hidden_layers", llamaJSON, map[string]string{"num_hidden_layers": ""}, func(c Config) int { return c.Layers }, 32, "num_hidden_layers 32"},
		{"llama num_attention_heads", llamaJSON, map[string]string{"num_attention_heads": ""}, func(c Config) int { return c.Heads }, 32, "num_attention_heads 32"},
		{"llama kv heads are the heads", llamaJSON, map[string]string{"num_key_value_heads": ""}, func(c Config) int { return c.KVHeads }, 4, ""},
		{"mistral max_position_embeddings", mistral, map[string]string{"max_position_embeddings": "", "sliding_window": "null"}, func(c Config) int { return c.MaxPositions }, 131072, "max_position_embeddings 131072"},
		{"mistral intermediate_size", mistral, map[string]string{"intermediate_size": "", "sliding_window": "null"}, func(c Config) int { return c.Intermediate }, 14336, "intermediate_size 14336"},
		{"mistral kv heads", mistral, map[string]string{"num_key_value_heads": "", "num_attention_heads": "8", "sliding_window": "null"}, func(c Config) int { return c.KVHeads }, 8, "num_key_value_heads 8"},
		{"mistral null kv heads are the heads", mistral, map[string]string{"num_key_value_heads": "null", "sliding_window": "null"}, func(c Config) int { return c.KVHeads }, 4, ""},
		{"mistral sliding_window", mistral, nil, func(c Config) int { return c.SlidingWindow }, 4096, "sliding_window 4096"},
		{"qwen2 max_position_embeddings", qwen2, map[string]string{"max_position_embeddings": ""}, func(c Config) int { return c.MaxPositions }, 32768, "max_position_embeddings 32768"},
		{"qwen2 vocab_size", qwen2, map[string]string{"vocab_size": ""}, func(c Config) int { return c.Vocab }, 151936, "vocab_size 151936"},
		{"qwen2 kv heads", qwen2, map[string]string{"num_key_value_heads": "", "num_attention_heads": "32"}, func(c Config) int { return c.KVHeads }, 32, "num_key_value_heads 32"},
		{"qwen2 window off", qwen2, nil, func(c Config) int { return c.SlidingWindow }, 0, ""},
		{"qwen2 window on, max_window_layers 28 of 2", qwen2, map[string]string{"use_sliding_window": "true", "sliding_window": "16"}, func(c Config) int { return c.SlidingWindow }, 0, "max_window_layers 28"},
		{"qwen2 window on, sliding_window 4096", qwen2, map[string]string{"use_sliding_window": "true", "max_window_layers": "1"}, func(c Config) int { return c.SlidingWindow }, 4096, "sliding_window 4096"},
		{"gpt2 vocab_size", gpt2JSON, map[string]string{"vocab_size": ""}, func(c Config) int { return c.Vocab }, 50257, "vocab_size 50257"},
		{"gpt2 n_positions", gpt2JSON, map[string]string{"n_positions": ""}, func(c Config) int { return c.MaxPositions }, 1024, "n_positions 1024"},
		{"gpt2 n_embd", gpt2JSON, map[string]string{"n_embd": ""}, func(c Config) int { return c.Hidden }, 768, "n_embd 768"},
		{"gpt2 n_layer", gpt2JSON, map[string]string{"n_layer": ""}, func(c Config) int { return c.Layers }, 12, "n_layer 12"},
		{"gpt2 n_head", gpt2JSON, map[string]string{"n_head": "", "n_embd": "96"}, func(c Config) int { return c.Heads }, 12, "n_head 12"},
		{"gpt2 n_inner is 4·n_embd, no default", gpt2JSON, nil, func(c Config) int { return c.Intermediate }, 256, ""},
		{"two left out", llamaJSON, map[string]string{"vocab_size": "", "max_position_embeddings": ""}, func(c Config) int { return c.Vocab }, 32000, "vocab_size 32000, max_position_embeddings 2048"},
	}
	for _, tt := range tests {
		c, err := Parse(edit(t, tt.base, tt.set))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got := tt.got(c); got != tt.want || c.Defaulted != tt.defaulted {
			t.Errorf("%s: %d, Defaulted %q; want %d, %q", tt.name, got, c.Defaulted, tt.want, tt.defaulted)
		}
	}
}

// TestDefaultedWarns checks that Check says in one line which defaults
// were taken, and says nothing of them when none was.
func TestDefaultedWarns(t *testing.T) {
	c, err := Parse(edit(t, llamaJSON, map[string]string{"max_position_embeddings": ""}))
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Check(16)
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 1 || !strings.Contains(w[0], "transformers") || !strings.HasSuffix(w[0], ": max_position_embeddings 2048") || strings.Contains(w[0], "\n") {
		t.Errorf("warnings %q, want one line ending \": max_position_embeddings 2048\"", w)
	}
	c, err = Parse([]byte(llamaJSON))
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := c.Check(16); len(w) != 0 {
		t.Errorf("warnings %q for a file that gives every size", w)
	}
}

// TestParseFloatDefaults checks the floats a file may leave out (issue 44
// item 21): each takes its model_type's default in transformers' config
// class (LlamaConfig, MistralConfig and Qwen2Config: rms_norm_eps 1e-6,
// rope_theta 10000.0; GPT2Config: layer_norm_epsilon 1e-5), and a value
// the file gives is read as given.
func TestParseFloatDefaults(t *testing.T) {
	mistral := strings.Replace(llamaJSON, `"llama"`, `"mistral"`, 1)
	qwen2 := strings.Replace(llamaJSON, `"llama"`, `"qwen2"`, 1)
	eps := func(c Config) float64 { return c.NormEps }
	theta := func(c Config) float64 { return c.RopeTheta }
	tests := []struct {
		name string
		base string
		set  map[string]string // "" deletes the field
		got  func(Config) float64
		want float64
	}{
		{"llama rms_norm_eps", llamaJSON, map[string]string{"rms_norm_eps": ""}, eps, 1e-6},
		{"llama rope_theta", llamaJSON, map[string]string{"rope_theta": ""}, theta, 10000},
		{"mistral rms_norm_eps", mistral, map[string]string{"rms_norm_eps": ""}, eps, 1e-6},
		{"mistral rope_theta", mistral, map[string]string{"rope_theta": ""}, theta, 10000},
		{"qwen2 rms_norm_eps", qwen2, map[string]string{"rms_norm_eps": ""}, eps, 1e-6},
		{"qwen2 rope_theta", qwen2, map[string]string{"rope_theta": ""}, theta, 10000},
		{"gpt2 layer_norm_epsilon", gpt2JSON, nil, eps, 1e-5},
		{"llama rms_norm_eps given", llamaJSON, nil, eps, 1e-5},
		{"llama rope_theta given", llamaJSON, map[string]string{"rope_theta": "500000"}, theta, 500000},
		{"gpt2 layer_norm_epsilon given", gpt2JSON, map[string]string{"layer_norm_epsilon": "1e-6"}, eps, 1e-6},
	}
	for _, tt := range tests {
		c, err := Parse(edit(t, tt.base, tt.set))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got := tt.got(c); got != tt.want {
			t.Errorf("%s: %g, want %g", tt.name, got, tt.want)
		}
	}
}

// TestParseBiases checks that each bias flag is read from its own key
// (issue 44 item 21), as transformers builds the modules: Llama's
// attention_bias gives q, k, v and o_proj biases and mlp_bias the MLP's;
// Mistral has no mlp_bias (MistralMLP's projections have none); Qwen2's
// q, k and v always have biases and its o_proj never.
func TestParseBiases(t *testing.T) {
	mistral := strings.Replace(llamaJSON, `"llama"`, `"mistral"`, 1)
	qwen2 := strings.Replace(llamaJSON, `"llama"`, `"qwen2"`, 1)
	tests := []struct {
		name          string
		base          string
		set           map[string]string
		qkv, out, mlp bool
	}{
		{"llama none", llamaJSON, nil, false, false, false},
		{"llama attention_bias alone", llamaJSON, map[string]string{"attention_bias": "true"}, true, true, false},
		{"llama mlp_bias alone", llamaJSON, map[string]string{"mlp_bias": "true"}, false, false, true},
		{"llama both", llamaJSON, map[string]string{"attention_bias": "true", "mlp_bias": "true"}, true, true, true},
		{"mistral attention_bias", mistral, map[string]string{"attention_bias": "true"}, true, true, false},
		{"mistral mlp_bias has no module", mistral, map[string]string{"mlp_bias": "true"}, false, false, false},
		{"qwen2 default", qwen2, nil, true, false, false},
		{"qwen2 attention_bias and mlp_bias have no module", qwen2, map[string]string{"attention_bias": "true", "mlp_bias": "true"}, true, false, false},
	}
	for _, tt := range tests {
		c, err := Parse(edit(t, tt.base, tt.set))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if c.QKVBias != tt.qkv || c.OutBias != tt.out || c.MLPBias != tt.mlp {
			t.Errorf("%s: biases qkv %v, o %v, mlp %v; want %v, %v, %v", tt.name, c.QKVBias, c.OutBias, c.MLPBias, tt.qkv, tt.out, tt.mlp)
		}
	}
}
