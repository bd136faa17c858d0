package models

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gorgonia.org/gorgonia"

	"gpuz/internal/engine"
	"gpuz/internal/hfconfig"
	"gpuz/internal/ops"
)

// LLMConfig sizes the llm workload: the decoder transformer a Hugging Face
// config describes (Model), built with its first Layers decoder layers, fed
// sequences of SeqLen token ids drawn uniformly below the vocabulary and
// trained with cross-entropy to predict each next token, as a causal
// language model is.
//
// Its blocks are, in the model's order, the embedding ("embed"), each
// decoder layer ("layer1" … "layerN") and the final norm with the head
// ("head"). A tied embedding belongs to the embed block: the head's
// product reads it there (see docs/architecture.md, "Shared weights").
//
// The queries', keys' and values' weights are one parameter
// (qkv_proj: q_proj's rows, then k_proj's, then v_proj's), and so are the
// MLP's gate and up weights (gate_up_proj), as vLLM fuses them: one
// product each instead of three and two, the same parameters and values
// (hfconfig.Config.Tensors names them apart).
type LLMConfig struct {
	// Model is the configuration the graph follows.
	Model hfconfig.Model
	// Layers is how many of the model's decoder layers are built: all of
	// them at full scale.
	Layers int
	// SeqLen is the tokens per sequence.
	SeqLen int
	// Feed sizes the data set and the run, as in every workload.
	Feed
}

// maxLLMVocab bounds the vocabulary: every id is exact in float32.
const maxLLMVocab = 1 << 24

// DataLen is the number of values Data makes, computed without making
// them: the input ids and their targets.
func (c LLMConfig) DataLen() int { return 2 * c.Samples * c.SeqLen }

// Data returns the workload's data: Samples sequences of SeqLen+1 token ids
// drawn uniformly from [0, vocab), stored as float32; the input is each
// sequence's first SeqLen ids and the target its last SeqLen, so that each
// position is trained to predict the id after it.
func (c LLMConfig) Data(seed uint64) Data {
	rng := rand.New(rand.NewPCG(seed, math.MaxUint64))
	n := c.Samples * c.SeqLen
	d := Data{Samples: c.Samples, RowLen: c.SeqLen, Values: make([]float32, n), Targets: make([]float32, n)}
	vocab := c.Model.Vocab
	for s := range c.Samples {
		prev := float32(rng.IntN(vocab))
		for t := range c.SeqLen {
			next := float32(rng.IntN(vocab))
			d.Values[s*c.SeqLen+t], d.Targets[s*c.SeqLen+t] = prev, next
			prev = next
		}
	}
	return d
}

// Validate reports the first size that cannot make a model.
func (c LLMConfig) Validate() error { return validate(&c, c.check) }

// check is Validate's checks particular to the workload.
func (c LLMConfig) check() error {
	cfg := c.Model.Config
	if cfg.Arch == "" {
		return errors.New("no model: give --model (gpuz llm --list-models lists the presets)")
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	switch {
	case c.Layers > cfg.Layers:
		return fmt.Errorf("--layers (%d) must be at most the model's %d layers", c.Layers, cfg.Layers)
	case c.Samples%c.Batch != 0:
		return divides(c.Samples, c.Batch)
	case cfg.Vocab > maxLLMVocab:
		return fmt.Errorf("the model's vocabulary (%d) must be at most 2²⁴ so that every id is exact in float32", cfg.Vocab)
	}
	if _, err := cfg.Check(c.SeqLen); err != nil {
		return err
	}
	if err := tooLong("layers", c.Layers, maxAttentionLayer); err != nil {
		return err
	}
	qkv := (cfg.Heads + 2*cfg.KVHeads) * cfg.HeadDim
	return tooLarge(
		extent{"the embedding, vocab × hidden", []int{cfg.Vocab, cfg.Hidden}},
		extent{"a layer's MLP weight, 2 × intermediate × hidden", []int{2, cfg.Intermediate, cfg.Hidden}},
		extent{"the logits, batch × seq-len × vocab", []int{c.Batch, c.SeqLen, cfg.Vocab}},
		extent{"a layer's attention probabilities, batch × heads × seq-len²", []int{c.Batch, cfg.Heads, c.SeqLen, c.SeqLen}},
		extent{"a layer's queries, keys and values, batch × seq-len × width", []int{c.Batch, c.SeqLen, qkv}},
		extent{"a layer's MLP activations, batch × seq-len × 2 × intermediate", []int{c.Batch, c.SeqLen, 2, cfg.Intermediate}},
		extent{"the data set, 2 × samples × seq-len", []int{2, c.Samples, c.SeqLen}},
	)
}

// Warnings returns the header's warning lines for the model at this
// sequence length: what the config declares that gpuz does not compute and
// that cannot change the answer here, or only as it says.
func (c LLMConfig) Warnings() []string {
	w, _ := c.Model.Check(c.SeqLen)
	return w
}

// Build returns the workload's graph for one batch.
func (c LLMConfig) Build() (*Model, error) {
	m, err := newModel(c, "ids", c.Batch, c.SeqLen)
	if err != nil {
		return nil, err
	}
	b := llmBuilder{LLMConfig: c, cfg: c.Model.Config, m: m}
	if c.Model.Arch == hfconfig.ArchGPT2 {
		return b.gpt2()
	}
	return b.llama()
}

// llmBuilder builds one llm graph.
type llmBuilder struct {
	LLMConfig
	cfg hfconfig.Config
	m   *Model
}

// normal02 is the weights' initialisation of transformers' decoders:
// N(0, initializer_range²) with the default range 0.02.
var normal02 = normal(0.02)

// param adds a parameter to block, named name.
func (b llmBuilder) param(block *engine.Block, name string, init func(*rand.Rand, []float32), shape ...int) *gorgonia.Node {
	return b.m.param(block, name, init, shape...)
}

// apply applies spec to inputs, naming what failed.
func apply(what string, spec ops.Spec, inputs ...*gorgonia.Node) (*gorgonia.Node, error) {
	n, err := ops.Apply(spec, inputs...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return n, nil
}

// linear applies x·Wᵀ, plus bias when it is not nil.
func linear(what string, x, w, bias *gorgonia.Node) (*gorgonia.Node, error) {
	if bias == nil {
		return apply(what, ops.Projection{}, x, w)
	}
	return apply(what, ops.Linear{}, x, w, bias)
}

// llama builds the Llama family's graph (llama, mistral, qwen2):
//
//	x = embed_tokens(ids)
//	per layer: x = x + o_proj(attention(rope(qkv_proj(rmsnorm(x)))))
//	           x = x + down_proj(silu(gate) ⊙ up), gate|up = gate_up_proj(rmsnorm(x))
//	logits = lm_head(rmsnorm(x))   (embed_tokens' weight when tied)
func (b llmBuilder) llama() (*Model, error) {
	cfg, m := b.cfg, b.m
	d, hd := cfg.Hidden, cfg.HeadDim
	embed := engine.Block{Name: "embed"}
	embedW := b.param(&embed, "model.embed_tokens.weight", normal02, cfg.Vocab, d)
	m.Blocks = append(m.Blocks, embed)

	cos, sin := RotaryTables(cfg.RopeInvFreq(), b.SeqLen)
	cosN, sinN := m.tensor("rope.cos", b.SeqLen, hd/2), m.tensor("rope.sin", b.SeqLen, hd/2)
	m.Constants = append(m.Constants, Constant{Node: cosN, Values: cos}, Constant{Node: sinN, Values: sin})

	x, err := apply("embed_tokens", ops.TokenEmbedding{}, m.Input, embedW)
	if err != nil {
		return nil, err
	}
	attn := ops.AttentionConfig{Heads: cfg.Heads, KVHeads: cfg.KVHeads, SeqLen: b.SeqLen, Causal: true}
	rope := ops.Rotary{Heads: cfg.Heads + cfg.KVHeads, HeadDim: hd, SeqLen: b.SeqLen}
	norm := ops.RMSNorm{Eps: cfg.NormEps}
	qkvRows := (cfg.Heads + 2*cfg.KVHeads) * hd
	for l := 1; l <= b.Layers; l++ {
		block := engine.Block{Name: fmt.Sprintf("layer%d", l)}
		pre := fmt.Sprintf("model.layers.%d.", l-1)
		p := func(name string, init func(*rand.Rand, []float32), shape ...int) *gorgonia.Node {
			return b.param(&block, pre+name, init, shape...)
		}
		bias := func(on bool, name string, n int) *gorgonia.Node {
			if !on {
				return nil
			}
			return p(name, constant(0), n)
		}
		inNorm := p("input_layernorm.weight", constant(1), d)
		qkvW := p("self_attn.qkv_proj.weight", normal02, qkvRows, d)
		qkvB := bias(cfg.QKVBias, "self_attn.qkv_proj.bias", qkvRows)
		oW := p("self_attn.o_proj.weight", normal02, d, cfg.Heads*hd)
		oB := bias(cfg.OutBias, "self_attn.o_proj.bias", d)
		postNorm := p("post_attention_layernorm.weight", constant(1), d)
		guW := p("mlp.gate_up_proj.weight", normal02, 2*cfg.Intermediate, d)
		guB := bias(cfg.MLPBias, "mlp.gate_up_proj.bias", 2*cfg.Intermediate)
		downW := p("mlp.down_proj.weight", normal02, d, cfg.Intermediate)
		downB := bias(cfg.MLPBias, "mlp.down_proj.bias", d)

		steps := []func() error{
			func() (err error) {
				h, err := apply("input_layernorm", norm, x, inNorm)
				if err != nil {
					return err
				}
				qkv, err := linear("qkv_proj", h, qkvW, qkvB)
				if err != nil {
					return err
				}
				if qkv, err = apply("rotary embedding", rope, qkv, cosN, sinN); err != nil {
					return err
				}
				probs, err := apply("attention", ops.AttentionProbs{AttentionConfig: attn}, qkv)
				if err != nil {
					return err
				}
				mixed, err := apply("attention", ops.AttentionMix{AttentionConfig: attn}, probs, qkv)
				if err != nil {
					return err
				}
				o, err := linear("o_proj", mixed, oW, oB)
				if err != nil {
					return err
				}
				x, err = apply("residual", ops.Add{}, x, o)
				return err
			},
			func() (err error) {
				h, err := apply("post_attention_layernorm", norm, x, postNorm)
				if err != nil {
					return err
				}
				gu, err := linear("gate_up_proj", h, guW, guB)
				if err != nil {
					return err
				}
				act, err := apply("silu(gate) ⊙ up", ops.SwiGLU{}, gu)
				if err != nil {
					return err
				}
				down, err := linear("down_proj", act, downW, downB)
				if err != nil {
					return err
				}
				x, err = apply("residual", ops.Add{}, x, down)
				return err
			},
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return nil, fmt.Errorf("%s: %w", block.Name, err)
			}
		}
		m.Blocks = append(m.Blocks, block)
	}

	head := engine.Block{Name: "head"}
	normW := b.param(&head, "model.norm.weight", constant(1), d)
	headW := embedW
	if !cfg.TieEmbeddings {
		headW = b.param(&head, "lm_head.weight", normal02, cfg.Vocab, d)
	}
	m.Blocks = append(m.Blocks, head)
	if x, err = apply("norm", norm, x, normW); err != nil {
		return nil, err
	}
	logits, err := apply("lm_head", ops.Projection{}, x, headW)
	if err != nil {
		return nil, err
	}
	return m.withOutput(logits, ops.SoftmaxCrossEntropy{})
}

// gpt2 builds GPT-2's graph:
//
//	x = wte(ids) + wpe(positions)
//	per layer: x = x + c_proj(attention(c_attn(ln_1(x))))
//	           x = x + mlp.c_proj(gelu_new(c_fc(ln_2(x))))
//	logits = ln_f(x)·wteᵀ   (lm_head's own weight when untied)
func (b llmBuilder) gpt2() (*Model, error) {
	cfg, m := b.cfg, b.m
	d := cfg.Hidden
	// transformers' GPT2 initialisation: N(0, 0.02²) weights, zero biases,
	// and the residual projections' weights scaled by 1/√(2·n_layer).
	residual := normal(0.02 / math.Sqrt(2*float64(cfg.Layers)))
	embed := engine.Block{Name: "embed"}
	wte := b.param(&embed, "wte.weight", normal02, cfg.Vocab, d)
	wpe := b.param(&embed, "wpe.weight", normal(0.01), cfg.MaxPositions, d)
	m.Blocks = append(m.Blocks, embed)

	x, err := apply("wte", ops.TokenEmbedding{}, m.Input, wte)
	if err != nil {
		return nil, err
	}
	if x, err = apply("wpe", ops.AddPositions{SeqLen: b.SeqLen}, x, wpe); err != nil {
		return nil, err
	}
	attn := ops.AttentionConfig{Heads: cfg.Heads, SeqLen: b.SeqLen, Causal: true}
	ln := ops.LayerNorm{Eps: cfg.NormEps}
	for l := 1; l <= b.Layers; l++ {
		block := engine.Block{Name: fmt.Sprintf("layer%d", l)}
		pre := fmt.Sprintf("h.%d.", l-1)
		p := func(name string, init func(*rand.Rand, []float32), shape ...int) *gorgonia.Node {
			return b.param(&block, pre+name, init, shape...)
		}
		ln1W, ln1B := p("ln_1.weight", constant(1), d), p("ln_1.bias", constant(0), d)
		attnW, attnB := p("attn.c_attn.weight", normal02, d, 3*d), p("attn.c_attn.bias", constant(0), 3*d)
		projW, projB := p("attn.c_proj.weight", residual, d, d), p("attn.c_proj.bias", constant(0), d)
		ln2W, ln2B := p("ln_2.weight", constant(1), d), p("ln_2.bias", constant(0), d)
		fcW, fcB := p("mlp.c_fc.weight", normal02, d, cfg.Intermediate), p("mlp.c_fc.bias", constant(0), cfg.Intermediate)
		outW, outB := p("mlp.c_proj.weight", residual, cfg.Intermediate, d), p("mlp.c_proj.bias", constant(0), d)

		layer := func() error {
			h, err := apply("ln_1", ln, x, ln1W, ln1B)
			if err != nil {
				return err
			}
			qkv, err := apply("c_attn", ops.Conv1D{}, h, attnW, attnB)
			if err != nil {
				return err
			}
			probs, err := apply("attention", ops.AttentionProbs{AttentionConfig: attn}, qkv)
			if err != nil {
				return err
			}
			mixed, err := apply("attention", ops.AttentionMix{AttentionConfig: attn}, probs, qkv)
			if err != nil {
				return err
			}
			a, err := apply("attn.c_proj", ops.Conv1D{}, mixed, projW, projB)
			if err != nil {
				return err
			}
			if x, err = apply("residual", ops.Add{}, x, a); err != nil {
				return err
			}
			h, err = apply("ln_2", ln, x, ln2W, ln2B)
			if err != nil {
				return err
			}
			f, err := apply("c_fc", ops.Conv1D{}, h, fcW, fcB)
			if err != nil {
				return err
			}
			if f, err = apply("gelu_new", ops.GELUTanh{}, f); err != nil {
				return err
			}
			if f, err = apply("mlp.c_proj", ops.Conv1D{}, f, outW, outB); err != nil {
				return err
			}
			x, err = apply("residual", ops.Add{}, x, f)
			return err
		}
		if err := layer(); err != nil {
			return nil, fmt.Errorf("%s: %w", block.Name, err)
		}
		m.Blocks = append(m.Blocks, block)
	}

	head := engine.Block{Name: "head"}
	lnfW, lnfB := b.param(&head, "ln_f.weight", constant(1), d), b.param(&head, "ln_f.bias", constant(0), d)
	headW := wte
	if !cfg.TieEmbeddings {
		headW = b.param(&head, "lm_head.weight", normal02, cfg.Vocab, d)
	}
	m.Blocks = append(m.Blocks, head)
	if x, err = apply("ln_f", ln, x, lnfW, lnfB); err != nil {
		return nil, err
	}
	logits, err := apply("lm_head", ops.Projection{}, x, headW)
	if err != nil {
		return nil, err
	}
	return m.withOutput(logits, ops.SoftmaxCrossEntropy{})
}

// RotaryTables returns the rotary embedding's cos and sin tables
// [seqLen, len(invFreq)] for positions 0 … seqLen−1, each angle
// position·invFreq[j] and its cosine and sine rounded to float32 as
// transformers computes them (the angle a float32 product, its cosine and
// sine of that float32).
func RotaryTables(invFreq []float32, seqLen int) (cos, sin []float32) {
	n := len(invFreq)
	cos, sin = make([]float32, seqLen*n), make([]float32, seqLen*n)
	for s := range seqLen {
		for j, f := range invFreq {
			angle := float64(float32(s) * f)
			cos[s*n+j], sin[s*n+j] = float32(math.Cos(angle)), float32(math.Sin(angle))
		}
	}
	return cos, sin
}
