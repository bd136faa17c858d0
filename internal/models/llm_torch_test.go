package models

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"gorgonia.org/gorgonia"

	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/hfconfig"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/peertest"
)

// tinyLLMs are small configurations of both families that cover what
// changes the computation: grouped-query attention, tied and untied
// embeddings, the q/k/v biases (qwen2), llama3's rope scaling, an explicit
// head_dim, and GPT-2 with its learned positions and Conv1D weights.
var tinyLLMs = []struct{ name, config string }{
	{"llama-gqa-tied", `{"model_type": "llama", "hidden_size": 48, "intermediate_size": 80, "num_hidden_layers": 2,
		"num_attention_heads": 6, "num_key_value_heads": 2, "vocab_size": 97, "max_position_embeddings": 64,
		"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": true, "hidden_act": "silu"}`},
	{"llama3-rope-untied-headdim", `{"model_type": "llama", "hidden_size": 40, "intermediate_size": 72, "num_hidden_layers": 2,
		"num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 12, "vocab_size": 83, "max_position_embeddings": 256,
		"rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": false, "hidden_act": "silu",
		"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
		"original_max_position_embeddings": 16}}`},
	{"qwen2-bias-mha", `{"model_type": "qwen2", "hidden_size": 32, "intermediate_size": 56, "num_hidden_layers": 2,
		"num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 71, "max_position_embeddings": 128,
		"rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": true, "hidden_act": "silu",
		"use_sliding_window": false, "sliding_window": 64}`},
	{"gpt2-tied", `{"model_type": "gpt2", "n_embd": 36, "n_layer": 2, "n_head": 3, "n_positions": 40,
		"vocab_size": 89, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new",
		"resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0}`},
}

// tinyLLM returns the llm workload's config of a tiny model at a
// sequence length and batch.
func tinyLLM(t *testing.T, config string, seq, batch int) LLMConfig {
	t.Helper()
	cfg, err := hfconfig.Parse([]byte(config))
	if err != nil {
		t.Fatal(err)
	}
	return LLMConfig{Model: hfconfig.Model{Config: cfg, Name: "tiny"}, Layers: cfg.Layers, SeqLen: seq,
		Feed: Feed{Samples: batch, Batch: batch, Epochs: 2}}
}

// torchDump is what TestLLMMatchesTorch hands scripts/torch_llm.py: the
// config, the data, gpuz's blocks and initial weights, and what gpuz
// computed from them in two training steps.
type torchDump struct {
	Config  json.RawMessage      `json:"config"`
	SeqLen  int                  `json:"seq_len"`
	Batch   int                  `json:"batch"`
	LR      float64              `json:"lr"`
	Eps     float64              `json:"eps"`
	Clip    float64              `json:"clip"`
	IDs     []float32            `json:"ids"`
	Targets []float32            `json:"targets"`
	Blocks  []torchBlock         `json:"blocks"`
	Init    map[string][]float32 `json:"init"`
	Shapes  map[string][]int     `json:"shapes"`
	Losses  []float64            `json:"losses"`
	Grads   map[string][]float32 `json:"grads"`  // at the first step
	Grads2  map[string][]float32 `json:"grads2"` // at the second
	Final   map[string][]float32 `json:"final"`  // after the second
	// LoRA is the adapters' setting, nil without LoRA: the blocks then
	// list the adapters alone, and Init holds the frozen weights too.
	LoRA *torchLoRA `json:"lora,omitempty"`
}

// torchLoRA is LoRA's setting as the user gives it, which torch_llm.py
// applies: the rank, α and the target layers as --lora-targets names them
// (none for PEFT's default of the model_type, which the script knows).
type torchLoRA struct {
	Rank    int      `json:"rank"`
	Alpha   float64  `json:"alpha"`
	Targets []string `json:"targets"`
}

type torchBlock struct {
	Name   string   `json:"name"`
	Params []string `json:"params"`
}

// TestLLMMatchesTorch trains each tiny configuration, with its attention
// eager and fused, two steps on the host
// and has PyTorch (scripts/torch_llm.py, the model written from the
// transformers formulas) train the same weights on the same data: the
// losses, the first step's gradients and the weights after the second must
// agree to float32 rounding (the script's tolerances). It needs python3
// with torch: GPUZ_TORCH_PYTHON names the interpreter (CI sets it after
// installing Debian's python3-torch); without it the test is skipped.
func TestLLMMatchesTorch(t *testing.T) {
	python := peertest.Python(t)
	script := peertest.Script(t, "torch_llm.py")
	for _, tc := range tinyLLMs {
		for _, attention := range levers.Attentions() {
			t.Run(tc.name+"/"+string(attention), func(t *testing.T) {
				checkWithTorch(t, python, script, trainForTorch(t, tc.config, attention, levers.LoRA{}, 7, 2))
			})
		}
	}
}

// TestLoRAMatchesTorch trains tiny configurations of both families with
// LoRA two steps on the host, and has torch_llm.py train the same
// adapters on the same frozen weights (PEFT's formula written out): the
// losses, the adapters' gradients and their values after two steps agree
// to float32 rounding. The cases cover the default targets (q_proj and
// v_proj, parts of gpuz's packed qkv_proj; GPT-2's c_attn) and every
// linear layer at α/R = 2, and α/R = 1/2 (a scale below 1 dropped or
// inverted fails there only). The script is handed the setting as the
// flags give it (α, and no targets for the default), takes PEFT's
// default targets from its own table and refuses adapters on any other
// layer, so that gpuz's own list is not checked against itself.
// GPUZ_TORCH_PYTHON as TestLLMMatchesTorch.
func TestLoRAMatchesTorch(t *testing.T) {
	python := peertest.Python(t)
	script := peertest.Script(t, "torch_llm.py")
	for _, tc := range tinyLLMs {
		for _, l := range []levers.LoRA{{Rank: 4}, {Rank: 4, Alpha: 2}, {Rank: 3, Alpha: 6, Targets: levers.AllLinear}} {
			t.Run(tc.name+"/"+l.String(), func(t *testing.T) {
				checkWithTorch(t, python, script, trainForTorch(t, tc.config, levers.AttentionFused, l, 7, 2))
			})
		}
	}
}

// checkWithTorch writes dump and runs torch_llm.py check on it.
func checkWithTorch(t *testing.T, python, script string, dump torchDump) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dump.json")
	data, err := json.Marshal(dump)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(python, script, "check", path).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("torch_llm.py check: %v", err)
	}
}

// trainForTorch builds the tiny model of config with its attention eager
// or fused and LoRA as lora says, trains it two steps on its first batch
// with gradients kept, and returns the dump.
func trainForTorch(t *testing.T, config string, attention levers.Attention, lora levers.LoRA, seq, batch int) torchDump {
	t.Helper()
	c := tinyLLM(t, config, seq, batch)
	c.Attention, c.LoRA = attention, lora
	m, err := c.Build()
	if err != nil {
		t.Fatal(err)
	}
	adam := hostmath.DefaultAdam()
	adam.LR = 1e-2 // large enough that two steps move every weight
	// Adam's step is g/(|g| + ε): with ε = 1e-6 rather than 1e-8 a
	// gradient at the level of float32 rounding (about 1e-10 here) moves
	// its weight by a negligible fraction of a step in either program,
	// instead of by a step whose sign is rounding's.
	adam.Eps = 1e-6
	plan, err := engine.Compile(engine.Spec{Inputs: m.Inputs(), Blocks: m.Blocks, Output: m.Loss, Train: true,
		Optimizer: adam, ClipNorm: 1, RetainGradients: true})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := plan.Load(device.NewHost(), engine.Resident{})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if err := m.InitParams(1, prog.SetInput); err != nil {
		t.Fatal(err)
	}
	data := c.Data(1)
	d := torchDump{Config: json.RawMessage(config), SeqLen: seq, Batch: batch, LR: adam.LR, Eps: adam.Eps, Clip: 1,
		IDs: data.Batch(0, batch), Targets: data.TargetBatch(0, batch),
		Init: map[string][]float32{}, Shapes: map[string][]int{}, Grads: map[string][]float32{}, Grads2: map[string][]float32{}, Final: map[string][]float32{}}
	if err := prog.SetInput(m.Input, d.IDs); err != nil {
		t.Fatal(err)
	}
	if err := prog.SetInput(m.Target, d.Targets); err != nil {
		t.Fatal(err)
	}
	if lora.On() {
		// The setting as the user gives it, not as gpuz resolves it: α
		// (R when not given), and the targets named (none: the script
		// takes PEFT's default for the model_type).
		alpha := lora.Alpha
		if alpha == 0 {
			alpha = float64(lora.Rank)
		}
		targets, err := lora.TargetList()
		if err != nil {
			t.Fatal(err)
		}
		d.LoRA = &torchLoRA{Rank: lora.Rank, Alpha: alpha, Targets: targets}
	}
	var params, frozen []*gorgonia.Node
	for _, b := range m.Blocks {
		tb := torchBlock{Name: b.Name, Params: []string{}}
		for _, p := range b.Params {
			tb.Params = append(tb.Params, p.Name())
			params = append(params, p)
		}
		frozen = append(frozen, b.Frozen...)
		d.Blocks = append(d.Blocks, tb)
	}
	read := func(into map[string][]float32, get func(*gorgonia.Node) ([]float32, error)) {
		for _, p := range params {
			v, err := get(p)
			if err != nil {
				t.Fatal(err)
			}
			into[p.Name()] = v
		}
	}
	read(d.Init, prog.Read)
	for _, p := range slices.Concat(params, frozen) {
		d.Shapes[p.Name()] = p.Shape().Clone()
	}
	for _, p := range frozen {
		v, err := prog.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		d.Init[p.Name()] = v
	}
	for step := range 2 {
		loss, err := prog.Run()
		if err != nil {
			t.Fatal(err)
		}
		d.Losses = append(d.Losses, float64(loss))
		read([]map[string][]float32{d.Grads, d.Grads2}[step], prog.Gradient)
	}
	read(d.Final, prog.Read)
	return d
}
