package models

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"gorgonia.org/gorgonia"

	"gpuz/internal/peertest"
)

// genTorchLLMs are small configurations of each family generation
// serves, sized so that a break shows: grouped-query attention whose two
// mappings of a query head to its key and value head (h / group, h mod
// kv heads) differ (llama, and qwen2 with its q/k/v biases), mistral
// untied with a sliding window that cannot matter, llama3's rope scaling
// with an explicit head_dim, and GPT-2 with its learned positions.
var genTorchLLMs = []struct{ name, config string }{
	{"llama-gqa", `{"model_type": "llama", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
		"num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 256, "max_position_embeddings": 64,
		"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": true, "hidden_act": "silu"}`},
	{"llama3-rope-headdim", `{"model_type": "llama", "hidden_size": 48, "intermediate_size": 80, "num_hidden_layers": 2,
		"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 300, "max_position_embeddings": 256,
		"rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": false, "hidden_act": "silu",
		"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
		"original_max_position_embeddings": 8}}`},
	{"qwen2-bias-gqa", `{"model_type": "qwen2", "hidden_size": 48, "intermediate_size": 88, "num_hidden_layers": 3,
		"num_attention_heads": 6, "num_key_value_heads": 2, "vocab_size": 512, "max_position_embeddings": 128,
		"rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": true, "hidden_act": "silu",
		"use_sliding_window": false, "sliding_window": 64}`},
	{"mistral-gqa-untied", `{"model_type": "mistral", "hidden_size": 64, "intermediate_size": 112, "num_hidden_layers": 2,
		"num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 384, "max_position_embeddings": 128,
		"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": false, "hidden_act": "silu",
		"sliding_window": 32}`},
	{"gpt2", `{"model_type": "gpt2", "n_embd": 48, "n_layer": 2, "n_head": 4, "n_positions": 32,
		"vocab_size": 1000, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new",
		"resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0}`},
}

// The generation TestGenerationMatchesTorch compares: 2 sequences, a
// prompt of 7 tokens, 6 generated, in caches of one position more than
// the passes fill (the last generated token is never fed), so that a key
// written one position late stays in the cache and shows as wrong logits
// rather than an error.
const (
	torchGenBatch, torchGenPrompt, torchGenTokens = 2, 7, 6
	torchGenContext                               = torchGenPrompt + torchGenTokens
)

// genSharpen is the factor TestGenerationMatchesTorch multiplies the drawn
// weights by (N(0, 0.02²) becomes N(0, 0.3²)); genJitter the standard
// deviation of the noise it adds to the constant ones (norms' weights 1,
// biases 0), so that every bias and every norm's weight counts. With
// transformers' 0.02 every attention is nearly uniform, nearly blind to
// where a key sits: the decode's rotary angle planted one position late
// moved these configs' logits by only 4e-4 to 5e-3 of a row's largest;
// sharpened, by 0.2 to 1.2 of it (a cache written one position late,
// which leaves a hole of zeros, by 0.04 to 0.2 unsharpened).
const (
	genSharpen = 15
	genJitter  = 0.1
)

// genLogitTol is the tolerance of TestGenerationMatchesTorch's logits,
// relative to a row's largest (closeLogits): float32 rounding of two
// programs that sum in other orders, measured at 7e-7 to 2.6e-6 here.
const genLogitTol = 1e-5

// genTorchDump is what TestGenerationMatchesTorch hands
// scripts/torch_llm.py generate: the config, gpuz's weights by gpuz's
// names, the prompts and the tokens to generate.
type genTorchDump struct {
	Config json.RawMessage      `json:"config"`
	Init   map[string][]float32 `json:"init"`
	Prompt [][]int              `json:"prompt"`
	Tokens int                  `json:"tokens"`
}

// genTorchResult is what torch_llm.py generate prints of a dump: each
// sequence's generated ids and each generated position's logits.
type genTorchResult struct {
	IDs    [][]int       `json:"ids"`
	Logits [][][]float32 `json:"logits"`
}

// TestGenerationMatchesTorch generates greedily on the host with each
// family's small config, weights sharpened (genSharpen), and has
// scripts/torch_llm.py generate, a PyTorch greedy decode with a KV cache
// of its own written from transformers' formulas, generate from the same
// weights and prompts (its --check also holds its decode to its own
// forward pass): the generated ids must be equal, and each generated
// position's logits equal to float32 rounding (genLogitTol). A break of
// the cache (a key or value written at the wrong position, a query head
// reading another group's keys and values) moves the logits by more than
// a tenth of their size. GPUZ_TORCH_PYTHON as TestLLMMatchesTorch.
func TestGenerationMatchesTorch(t *testing.T) {
	python := peertest.Python(t)
	script := peertest.Script(t, "torch_llm.py")
	for _, tc := range genTorchLLMs {
		t.Run(tc.name, func(t *testing.T) {
			dump, got := generateForTorch(t, tc.config)
			checkGenerationWithTorch(t, got, generateWithTorch(t, python, script, dump))
		})
	}
}

// checkGenerationWithTorch compares gpuz's generation with PyTorch's, in
// each sequence position by position up to the first difference (the
// later positions' inputs differ then): the logits to genLogitTol, the
// ids exactly. So that equal ids are not rounding's choice, the two
// largest logits of each of PyTorch's rows must differ by more than twice
// the tolerance; here they differ by at least 0.5% of the largest.
func checkGenerationWithTorch(t *testing.T, got generation, want genTorchResult) {
	t.Helper()
	vocab := len(got.logits[0]) / torchGenBatch
	worst, narrowest := 0.0, math.Inf(1)
	for s := range torchGenBatch {
		for i := range torchGenTokens {
			g, w := got.logits[i][s*vocab:(s+1)*vocab], want.Logits[s][i]
			if len(w) != vocab {
				t.Fatalf("sequence %d, generated token %d: PyTorch's %d logits, want the vocabulary's %d", s, i, len(w), vocab)
			}
			if err := closeLogits(g, w, genLogitTol); err != nil {
				t.Errorf("sequence %d, generated token %d against PyTorch's: %v", s, i, err)
				break
			}
			if got.tokens[s][i] != want.IDs[s][i] {
				t.Errorf("sequence %d, generated token %d: gpuz generated %d, PyTorch %d (gpuz's ids %v, PyTorch's %v)",
					s, i, got.tokens[s][i], want.IDs[s][i], got.tokens[s], want.IDs[s])
				break
			}
			gap := topGap(w)
			if gap <= 2*genLogitTol {
				t.Errorf("sequence %d, generated token %d: PyTorch's two largest logits differ by %.3g of the largest, within rounding: the ids' comparison is chance's (change the config)", s, i, gap)
			}
			worst, narrowest = max(worst, relDiff(g, w)), min(narrowest, gap)
		}
	}
	t.Logf("logits apart by at most %.3g of a row's largest; a row's two largest apart by at least %.3g of it", worst, narrowest)
}

// generateForTorch builds config's generation on the host, initialises it
// from seed 1 sharpened (sharpenInit), generates torchGenTokens from a
// prompt drawn from seed 2, and returns the dump of the weights and the
// prompt for torch_llm.py with gpuz's tokens and logits.
func generateForTorch(t *testing.T, config string) (genTorchDump, generation) {
	t.Helper()
	llm := tinyLLM(t, config, torchGenContext, torchGenBatch)
	g, err := GenerateConfig{Model: llm.Model, Layers: llm.Layers, Batch: torchGenBatch, Prompt: torchGenPrompt,
		Context: torchGenContext}.Build()
	if err != nil {
		t.Fatal(err)
	}
	prog := loadOnHost(t, g.Spec())
	dump := genTorchDump{Config: json.RawMessage(config), Init: map[string][]float32{}, Tokens: torchGenTokens}
	if err := g.InitParams(1, sharpenInit(g.Model, dump.Init, prog.SetInput)); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(2, 0))
	prompt := make([]float32, 0, torchGenBatch*torchGenPrompt)
	for range torchGenBatch {
		ids := make([]int, torchGenPrompt)
		for i := range ids {
			ids[i] = rng.IntN(llm.Model.Vocab)
			prompt = append(prompt, float32(ids[i]))
		}
		dump.Prompt = append(dump.Prompt, ids)
	}
	var out generation
	out.tokens, err = g.Generate(prog, prompt, torchGenTokens, func(_ int, logits []float32) {
		out.logits = append(out.logits, logits)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dump, out
}

// sharpenInit returns m.InitParams' setter that sharpens each of m's
// parameters before handing it to set, and keeps a copy in init by the
// parameter's name: drawn values are multiplied by genSharpen; constant
// ones (a norm's ones, a bias's zeros) get noise of genJitter, from a
// generator of its own, so that every bias and every norm's weight
// counts. m's constants (InitParams hands them to set too) pass as they
// are.
func sharpenInit(m *Model, init map[string][]float32, set func(*gorgonia.Node, []float32) error) func(*gorgonia.Node, []float32) error {
	rng := rand.New(rand.NewPCG(3, 0))
	params := map[*gorgonia.Node]bool{}
	for _, p := range m.paramOrder() {
		params[p] = true
	}
	return func(p *gorgonia.Node, v []float32) error {
		if !params[p] {
			return set(p, v)
		}
		constant := !slices.ContainsFunc(v, func(x float32) bool { return x != v[0] })
		for i := range v {
			if constant {
				v[i] += float32(rng.NormFloat64() * genJitter)
			} else {
				v[i] *= genSharpen
			}
		}
		init[p.Name()] = slices.Clone(v)
		return set(p, v)
	}
}

// generateWithTorch writes dump and returns what torch_llm.py generate
// --check generates from it.
func generateWithTorch(t *testing.T, python, script string, dump genTorchDump) genTorchResult {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "dump.json"), filepath.Join(dir, "torch.json")
	data, err := json.Marshal(dump)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if log, err := exec.Command(python, script, "generate", in, "--check", "--json", out).CombinedOutput(); err != nil {
		t.Fatalf("torch_llm.py generate: %v\n%s", err, log)
	}
	data, err = os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var r genTorchResult
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("torch_llm.py generate's JSON: %v", err)
	}
	if len(r.IDs) != torchGenBatch || len(r.Logits) != torchGenBatch {
		t.Fatalf("torch_llm.py generate: %d sequences of ids and %d of logits, want %d", len(r.IDs), len(r.Logits), torchGenBatch)
	}
	for s := range torchGenBatch {
		if len(r.IDs[s]) != torchGenTokens || len(r.Logits[s]) != torchGenTokens {
			t.Fatalf("torch_llm.py generate: sequence %d has %d ids and %d logits' rows, want %d", s, len(r.IDs[s]), len(r.Logits[s]), torchGenTokens)
		}
	}
	return r
}

// relDiff is the largest difference between got and want over want's
// largest magnitude.
func relDiff(got, want []float32) float64 {
	var d, scale float64
	for j := range want {
		d = max(d, math.Abs(float64(got[j]-want[j])))
		scale = max(scale, math.Abs(float64(want[j])))
	}
	return d / scale
}

// topGap is the gap between the two largest of x over x's largest magnitude.
func topGap(x []float32) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	var scale float64
	for _, v := range x {
		scale = max(scale, math.Abs(float64(v)))
	}
	return float64(s[len(s)-1]-s[len(s)-2]) / scale
}
