package hfconfig

// This file is the family table: each architecture gpuz builds is one
// value (an Arch) and each model_type one row (a modelType) naming its
// Arch and transformers' defaults. Everything that differs between the
// families is read from here, by the parser, Config.Tensors, Check, the
// model builder (package models) and LoRA's targets; no other file asks
// which family a config is. A next family is one more Arch and its rows;
// GGUF's names for the same tensors (token_embd, blk.N.attn_q…) are the
// Arch's ggufNames, beside its Modules.

// Arch is one architecture as data: the computation a family of
// model_types describes (its ops), how its config.json spells the sizes,
// its modules as transformers names them, and LoRA's default targets.
// The values are ArchLlama and ArchGPT2; a Config points at one of them.
type Arch struct {
	// Name names the family in messages, e.g. "GPT-2".
	Name string
	// Norm is the layer norm: RMSNorm (weight) or LayerNorm (weight and
	// bias).
	Norm NormKind
	// Positions is how positions enter: rotary embeddings of the queries
	// and keys, or a learned table added to the token embeddings.
	Positions PositionKind
	// MLP is the feed-forward block: silu(gate) ⊙ up, or GELU (tanh form)
	// of one projection.
	MLP MLPKind
	// Act is the activation the MLP computes, as Config.Act names it.
	Act string
	// Weights is how transformers stores a linear layer's weight.
	Weights WeightLayout
	// Biases says whether every linear layer has a bias (GPT-2's Conv1D)
	// or only those a model_type's flags give (Config's QKVBias, OutBias
	// and MLPBias).
	Biases BiasKind
	// ScaledResidualInit is transformers' initialisation of the residual
	// projections (Out and Down) by 0.02/√(2·layers) rather than 0.02.
	ScaledResidualInit bool
	// Modules are the parameters' module names.
	Modules Modules
	// LoRADefault is PEFT's default target modules for the family, by
	// their last name component.
	LoRADefault []string

	keys keys
	// ggufNames maps each of transformers' modules (a decoder layer's
	// relative to Modules.Layers and its index) to llama.cpp's name of its
	// tensors (a layer's relative to "blk.N."), as convert_hf_to_gguf.py
	// and gguf-py's tensor_mapping.py name them; nil when gpuz neither
	// reads nor writes the family as GGUF.
	ggufNames map[string]string
	// stateOrder is a decoder layer's modules in transformers'
	// state_dict order.
	stateOrder []Role
	// innerFromHidden, when not 0, makes the MLP's width that multiple of
	// the hidden size when the file leaves it out (GPT-2's n_inner null).
	innerFromHidden int
	// act is how the file names the activation.
	act actKey
	// dropoutKeys are the file's dropout probabilities, each
	// dropoutDefault when absent and refused outside [0, 1];
	// Config.Dropout is their largest, Config.Dropouts names them.
	dropoutKeys    []string
	dropoutDefault float64
	// fixed are flags that change the computation, with the value gpuz
	// builds: another value is refused.
	fixed []fixedFlag
	// positive are integers that must be at least 1 when given.
	positive []string
}

// NormKind is an Arch's layer norm.
type NormKind int

// The layer norms.
const (
	RMSNorm   NormKind = iota // x/rms(x)·w (the Llama family)
	LayerNorm                 // (x−mean)/std·w + b (GPT-2)
)

// PositionKind is how an Arch's positions enter.
type PositionKind int

// The positions.
const (
	Rotary  PositionKind = iota // rotary embeddings of queries and keys
	Learned                     // a learned table of MaxPositions rows added to the embeddings
)

// MLPKind is an Arch's feed-forward block.
type MLPKind int

// The feed-forward blocks.
const (
	GatedSiLU MLPKind = iota // down(silu(gate) ⊙ up): Up packs gate and up
	GELUTanh                 // down(gelu_tanh(up))
)

// WeightLayout is how a linear layer's weight is stored.
type WeightLayout int

// The layouts.
const (
	LinearWeights WeightLayout = iota // nn.Linear: [out, in], y = x·Wᵀ (+ b)
	Conv1DWeights                     // transformers' Conv1D: [in, out], y = x·W + b
)

// BiasKind says which linear layers of an Arch have biases.
type BiasKind int

// The bias kinds.
const (
	FlaggedBiases BiasKind = iota // those the Config's flags give
	AllBiases                     // every linear layer, always
)

// Role is one module of a decoder layer, whatever the family names it.
type Role int

// The roles of a decoder layer, in the order the layer computes them.
const (
	AttnNorm Role = iota // the norm before attention
	QKV                  // the queries', keys' and values' projection
	Out                  // the attention's output projection
	MLPNorm              // the norm before the MLP
	Up                   // the MLP's input projection (gate and up when gated)
	Down                 // the MLP's output projection
)

// Module is one module gpuz builds: its name, and, when gpuz packs
// modules that transformers keeps apart (vLLM's qkv_proj and
// gate_up_proj), transformers' modules in the order of its rows.
type Module struct {
	Name  string
	Parts []string // nil when transformers has the module as it is
}

// Modules are an Arch's parameters by module, named as transformers names
// them (a decoder layer's relative to Layers + its index + ".").
type Modules struct {
	Embed     string // the token embedding
	Positions string // the learned position table; "" for rotary positions
	Layers    string // the decoder layers' prefix
	AttnNorm  string
	QKV       Module
	Out       string
	MLPNorm   string
	Up        Module
	Down      string
	FinalNorm string // the norm after the last layer
	Head      string // the output projection when untied
}

// keys are the names a config.json of one Arch gives its fields, written
// once: the parser reads them and the errors name them.
type keys struct {
	vocab, maxPos, hidden, intermediate, layers, heads string
	kvHeads, headDim                                   string // "" when the Arch has none (GPT-2)
	eps, tie                                           string
	ropeTheta, ropeScaling                             string // "" when the positions are learned
}

// actKey is how a config.json names the activation: the key, its default,
// the values gpuz builds and, for values it refuses, the reason.
type actKey struct {
	key, def  string
	supported []string
	refused   map[string]string
}

// fixedFlag is a boolean that changes the computation and the value gpuz
// builds (transformers' default).
type fixedFlag struct {
	key  string
	want bool
}

// modelType is one model_type: its Arch and what transformers' config
// class fills in for the fields a file leaves out.
type modelType struct {
	name  string
	arch  *Arch
	class string   // transformers' config class, for messages
	sizes defaults // the sizes' defaults
	// kvHeads is num_key_value_heads' default; 0 means the heads (as
	// transformers' None).
	kvHeads                   int
	eps, ropeTheta            float64
	tie                       bool
	qkvBias, outBias, mlpBias biasRule
	window                    windowRule
}

// defaults are a config class's sizes when the file leaves them out.
type defaults struct {
	vocab, maxPos, hidden, intermediate, layers, heads int
}

// biasRule says where a projection's bias comes from: a flag of the file
// (key, false when absent), always there, or (the zero rule) never.
type biasRule struct {
	key    string
	always bool
}

// windowRule is a model_type's sliding window: the key giving its size
// (none when ""), its default, and for Qwen2 the flag that turns it on and
// the number of layers before the first windowed one.
type windowRule struct {
	key               string
	def               int
	enable            string // the flag, "" when the window is on whenever given
	fullLayers        string // the layers [0, fullLayers) attend fully
	fullLayersDefault int
}

// ArchLlama is the Llama family (model_type llama, mistral and qwen2):
// RMSNorm, rotary position embeddings, a SwiGLU MLP, grouped-query
// attention and nn.Linear weights.
var ArchLlama = &Arch{
	Name:      "Llama",
	Norm:      RMSNorm,
	Positions: Rotary,
	MLP:       GatedSiLU,
	Act:       ActSiLU,
	Weights:   LinearWeights,
	Biases:    FlaggedBiases,
	Modules: Modules{
		Embed:     "model.embed_tokens",
		Layers:    "model.layers.",
		AttnNorm:  "input_layernorm",
		QKV:       Module{"self_attn.qkv_proj", []string{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"}},
		Out:       "self_attn.o_proj",
		MLPNorm:   "post_attention_layernorm",
		Up:        Module{"mlp.gate_up_proj", []string{"mlp.gate_proj", "mlp.up_proj"}},
		Down:      "mlp.down_proj",
		FinalNorm: "model.norm",
		Head:      "lm_head",
	},
	LoRADefault: []string{"q_proj", "v_proj"},
	keys: keys{
		vocab: "vocab_size", maxPos: "max_position_embeddings", hidden: "hidden_size",
		intermediate: "intermediate_size", layers: "num_hidden_layers", heads: "num_attention_heads",
		kvHeads: "num_key_value_heads", headDim: "head_dim", eps: "rms_norm_eps", tie: "tie_word_embeddings",
		ropeTheta: "rope_theta", ropeScaling: "rope_scaling",
	},
	ggufNames: map[string]string{
		"model.embed_tokens":       "token_embd",
		"input_layernorm":          "attn_norm",
		"self_attn.q_proj":         "attn_q",
		"self_attn.k_proj":         "attn_k",
		"self_attn.v_proj":         "attn_v",
		"self_attn.o_proj":         "attn_output",
		"post_attention_layernorm": "ffn_norm",
		"mlp.gate_proj":            "ffn_gate",
		"mlp.up_proj":              "ffn_up",
		"mlp.down_proj":            "ffn_down",
		"model.norm":               "output_norm",
		"lm_head":                  "output",
	},
	stateOrder:  []Role{QKV, Out, Up, Down, AttnNorm, MLPNorm},
	act:         actKey{key: "hidden_act", def: "silu", supported: []string{"silu"}},
	dropoutKeys: []string{"attention_dropout"},
	positive:    []string{"pretraining_tp"},
}

// ArchGPT2 is GPT-2 (model_type gpt2): LayerNorm, learned positions, GELU
// in its tanh form, biases everywhere and Conv1D weights stored [in, out].
var ArchGPT2 = &Arch{
	Name:               "GPT-2",
	Norm:               LayerNorm,
	Positions:          Learned,
	MLP:                GELUTanh,
	Act:                ActGELUTanh,
	Weights:            Conv1DWeights,
	Biases:             AllBiases,
	ScaledResidualInit: true,
	Modules: Modules{
		Embed:     "wte",
		Positions: "wpe",
		Layers:    "h.",
		AttnNorm:  "ln_1",
		QKV:       Module{Name: "attn.c_attn"},
		Out:       "attn.c_proj",
		MLPNorm:   "ln_2",
		Up:        Module{Name: "mlp.c_fc"},
		Down:      "mlp.c_proj",
		FinalNorm: "ln_f",
		Head:      "lm_head",
	},
	LoRADefault: []string{"c_attn"},
	keys: keys{
		vocab: "vocab_size", maxPos: "n_positions", hidden: "n_embd",
		intermediate: "n_inner", layers: "n_layer", heads: "n_head",
		eps: "layer_norm_epsilon", tie: "tie_word_embeddings",
	},
	stateOrder:      []Role{AttnNorm, QKV, Out, MLPNorm, Up, Down},
	innerFromHidden: 4,
	act: actKey{key: "activation_function", def: "gelu_new", supported: []string{"gelu_new", "gelu_pytorch_tanh"},
		refused: map[string]string{"gelu": "is GELU's erf form, which gpuz does not build"}},
	dropoutKeys:    []string{"resid_pdrop", "embd_pdrop", "attn_pdrop"},
	dropoutDefault: 0.1,
	fixed: []fixedFlag{
		{"scale_attn_weights", true},
		{"scale_attn_by_inverse_layer_idx", false},
		{"reorder_and_upcast_attn", false},
		{"add_cross_attention", false},
	},
}

// archs are the architectures, for messages and tests.
var archs = []*Arch{ArchLlama, ArchGPT2}

// modelTypes are the model_types gpuz builds, each with transformers'
// defaults (configuration_llama.py, configuration_mistral.py,
// configuration_qwen2.py, configuration_gpt2.py).
var modelTypes = []modelType{
	{
		name: "gpt2", arch: ArchGPT2, class: "GPT2Config",
		sizes: defaults{vocab: 50257, maxPos: 1024, hidden: 768, layers: 12, heads: 12},
		eps:   1e-5, tie: true,
	},
	{
		name: "llama", arch: ArchLlama, class: "LlamaConfig",
		sizes: defaults{vocab: 32000, maxPos: 2048, hidden: 4096, intermediate: 11008, layers: 32, heads: 32},
		eps:   1e-6, ropeTheta: 10000,
		qkvBias: biasRule{key: "attention_bias"}, outBias: biasRule{key: "attention_bias"}, mlpBias: biasRule{key: "mlp_bias"},
	},
	{
		name: "mistral", arch: ArchLlama, class: "MistralConfig",
		sizes:   defaults{vocab: 32000, maxPos: 4096 * 32, hidden: 4096, intermediate: 14336, layers: 32, heads: 32},
		kvHeads: 8, eps: 1e-6, ropeTheta: 10000,
		qkvBias: biasRule{key: "attention_bias"}, outBias: biasRule{key: "attention_bias"},
		window: windowRule{key: "sliding_window", def: 4096},
	},
	{
		name: "qwen2", arch: ArchLlama, class: "Qwen2Config",
		sizes:   defaults{vocab: 151936, maxPos: 32768, hidden: 4096, intermediate: 22016, layers: 32, heads: 32},
		kvHeads: 32, eps: 1e-6, ropeTheta: 10000,
		qkvBias: biasRule{always: true},
		window:  windowRule{key: "sliding_window", def: 4096, enable: "use_sliding_window", fullLayers: "max_window_layers", fullLayersDefault: 28},
	},
}
