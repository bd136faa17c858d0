package models

import (
	"math"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"

	"gpuz/internal/hfconfig"
)

// fusedParts says which Hugging Face tensors each fused parameter of gpuz's
// Llama-family graph joins, rows in order.
var fusedParts = map[string][]string{
	"self_attn.qkv_proj.weight": {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight"},
	"self_attn.qkv_proj.bias":   {"self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias"},
	"mlp.gate_up_proj.weight":   {"mlp.gate_proj.weight", "mlp.up_proj.weight"},
	"mlp.gate_up_proj.bias":     {"mlp.gate_proj.bias", "mlp.up_proj.bias"},
}

// TestLLMParamsAreTheConfigsTensors builds every preset at full depth (a
// graph only: no weights are allocated) and checks that its parameters are
// exactly the tensors hfconfig names for the config, the fused ones
// joining theirs by rows, so that the safetensors check (against
// Config.Tensors) checks the model gpuz builds; and that the model's
// parameter count is the preset's published total.
func TestLLMParamsAreTheConfigsTensors(t *testing.T) {
	for _, p := range hfconfig.Presets() {
		t.Run(p.Name, func(t *testing.T) {
			c := LLMConfig{Model: hfconfig.Model{Config: p.Config, Name: p.Name}, Layers: p.Config.Layers, SeqLen: 8,
				Feed: Feed{Samples: 1, Batch: 1, Epochs: 2}}
			m, err := c.Build()
			if err != nil {
				t.Fatal(err)
			}
			want := map[string][]int{}
			for _, tn := range p.Config.Tensors() {
				want[tn.Name] = tn.Shape
			}
			seen := map[string]bool{}
			for _, b := range m.Blocks {
				for _, param := range b.Params {
					name, shape := param.Name(), []int(param.Shape())
					prefix, rest, fused := cutFused(name)
					if !fused {
						if !slices.Equal(want[name], shape) {
							t.Errorf("%s: shape %v, the config's tensor %v", name, shape, want[name])
						}
						seen[name] = true
						continue
					}
					rows := 0
					for _, part := range fusedParts[rest] {
						s, ok := want[prefix+part]
						if !ok {
							t.Fatalf("%s joins %s, which the config lacks", name, prefix+part)
						}
						rows += s[0]
						if len(s) == 2 && s[1] != shape[1] {
							t.Errorf("%s: %d columns, %s has %d", name, shape[1], prefix+part, s[1])
						}
						seen[prefix+part] = true
					}
					if rows != shape[0] {
						t.Errorf("%s: %d rows, its parts %d", name, shape[0], rows)
					}
				}
			}
			for _, tn := range p.Config.Tensors() {
				if !seen[tn.Name] {
					t.Errorf("the config's tensor %s is not in the model", tn.Name)
				}
			}
			if got := m.ParamCount(); got != p.Params {
				t.Errorf("model has %d parameters, the published total is %d", got, p.Params)
			}
		})
	}
}

// cutFused splits a fused parameter's name into its layer prefix and the
// fused part's name.
func cutFused(name string) (prefix, rest string, ok bool) {
	for part := range fusedParts {
		if p, found := strings.CutSuffix(name, part); found {
			return p, part, true
		}
	}
	return "", "", false
}

// TestLLMData checks the causal language model's data: ids below the
// vocabulary, and each target the id that follows in the same sequence.
func TestLLMData(t *testing.T) {
	c := tinyLLM(t, tinyLLMs[0].config, 9, 2)
	c.Samples = 4
	d := c.Data(3)
	if len(d.Values) != 4*9 || len(d.Targets) != 4*9 {
		t.Fatalf("%d ids and %d targets, want %d", len(d.Values), len(d.Targets), 4*9)
	}
	for i, v := range d.Values {
		if v < 0 || int(v) >= c.Model.Vocab || v != float32(math.Trunc(float64(v))) {
			t.Fatalf("id %d is %v", i, v)
		}
		if i%9 != 8 && d.Targets[i] != d.Values[i+1] {
			t.Fatalf("target %d is %v, the next id %v", i, d.Targets[i], d.Values[i+1])
		}
	}
	if slices.Equal(d.Values, d.Targets) {
		t.Error("targets equal the ids")
	}
}

// TestLLMLossFalls trains each tiny configuration on one batch: the loss
// starts near ln(vocab), as near-uniform predictions give, and falls.
func TestLLMLossFalls(t *testing.T) {
	for _, tc := range tinyLLMs {
		t.Run(tc.name, func(t *testing.T) {
			c := tinyLLM(t, tc.config, 8, 2)
			losses := trainFirstBatch(t, &c, 1e-2, 6)
			if first := losses[0]; math.Abs(first-math.Log(float64(c.Model.Vocab))) > 0.5 {
				t.Errorf("first loss %.3f, want about ln(%d) = %.3f", first, c.Model.Vocab, math.Log(float64(c.Model.Vocab)))
			}
			if !(losses[len(losses)-1] < losses[0]-0.1) {
				t.Errorf("losses %v do not fall", losses)
			}
		})
	}
}

// TestLLMVocabularyBound checks the llm workload's bound on the
// vocabulary at its edge (issue 44 item 24): 2²⁴ ids are all exact in
// float32 and accepted; one more is refused.
func TestLLMVocabularyBound(t *testing.T) {
	const config = `{"model_type": "llama", "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
		"num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": 16777216, "max_position_embeddings": 16}`
	c := tinyLLM(t, config, 4, 1)
	if err := c.Validate(); err != nil {
		t.Errorf("a vocabulary of 2^24: %v", err)
	}
	c.Model.Vocab++
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "2^24") {
		t.Errorf("a vocabulary of 2^24 + 1: %v, want it refused", err)
	}
}

// TestLLMInitialSpread checks each parameter's initial values against
// transformers' _init_weights (GPT2PreTrainedModel, LlamaPreTrainedModel)
// at initializer_range 0.02: every nn.Linear, Conv1D and nn.Embedding
// weight, GPT-2's wpe included, N(0, 0.02²); GPT-2's c_proj weights
// N(0, (0.02/√(2·n_layer))²); biases 0; norms' weights 1. The standard
// deviation drawn must lie within 10% of the wanted one (the tiny
// models' smallest weight has over 1000 values: the sampling error is
// about 2%).
func TestLLMInitialSpread(t *testing.T) {
	for _, tc := range tinyLLMs {
		t.Run(tc.name, func(t *testing.T) {
			c := tinyLLM(t, tc.config, 4, 1)
			m, err := c.Build()
			if err != nil {
				t.Fatal(err)
			}
			residual := 0.02
			if c.Model.Arch.ScaledResidualInit {
				residual /= math.Sqrt(2 * float64(c.Model.Layers))
			}
			params := m.paramOrder()
			err = m.InitParams(1, func(p *gorgonia.Node, v []float32) error {
				if !slices.Contains(params, p) {
					return nil // a constant: the rotary tables
				}
				name := p.Name()
				var want float64 // the standard deviation; -1: all 1
				switch {
				case strings.HasSuffix(name, ".bias"):
					want = 0
				case strings.Contains(name, "norm") || strings.Contains(name, "ln_"):
					want = -1
				case strings.HasSuffix(name, "c_proj.weight"):
					want = residual
				default:
					want = 0.02
				}
				var sum, sq float64
				for _, x := range v {
					sum += float64(x)
					sq += float64(x) * float64(x)
				}
				n := float64(len(v))
				mean, std := sum/n, math.Sqrt(sq/n-(sum/n)*(sum/n))
				switch {
				case want == -1 && (mean != 1 || std != 0):
					t.Errorf("%s: mean %g, std %g, want all 1", name, mean, std)
				case want == 0 && (mean != 0 || std != 0):
					t.Errorf("%s: mean %g, std %g, want all 0", name, mean, std)
				case want > 0 && (math.Abs(std/want-1) > 0.1 || math.Abs(mean) > 3*want/math.Sqrt(n)+1e-12):
					t.Errorf("%s (%d values): mean %g, std %g, want N(0, %g²)", name, len(v), mean, std, want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
