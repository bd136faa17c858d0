package models

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gorgonia.org/gorgonia"

	"gpuz/internal/engine"
	"gpuz/internal/hfconfig"
	"gpuz/internal/levers"
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
	// Attention is fused (the default, as transformers' default
	// scaled_dot_product_attention) or eager (levers.Attention).
	Attention levers.Attention
	// LoRA adapts the decoder layers' linear layers (levers.LoRA: the
	// targets are named as transformers names the modules, q_proj and
	// v_proj by default, c_attn for GPT-2); the zero value is off.
	LoRA levers.LoRA
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
	if err := c.Attention.Validate(); err != nil {
		return err
	}
	if err := checkLoRA(c); err != nil {
		return err
	}
	qkv := (cfg.Heads + 2*cfg.KVHeads) * cfg.HeadDim
	extents := []extent{
		{"the embedding, vocab × hidden", []int{cfg.Vocab, cfg.Hidden}},
		{"a layer's MLP weight, 2 × intermediate × hidden", []int{2, cfg.Intermediate, cfg.Hidden}},
		{"the logits, batch × seq-len × vocab", []int{c.Batch, c.SeqLen, cfg.Vocab}},
		{"a layer's queries, keys and values, batch × seq-len × width", []int{c.Batch, c.SeqLen, qkv}},
		{"a layer's MLP activations, batch × seq-len × 2 × intermediate", []int{c.Batch, c.SeqLen, 2, cfg.Intermediate}},
		{"the data set, 2 × samples × seq-len", []int{2, c.Samples, c.SeqLen}},
	}
	if !c.attention().Fused() {
		extents = append(extents, extent{"a layer's attention probabilities, batch × heads × seq-len²", []int{c.Batch, cfg.Heads, c.SeqLen, c.SeqLen}})
	}
	return tooLarge(extents...)
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
	ad, err := newAdapters(c, m)
	if err != nil {
		return nil, err
	}
	b := &llmBuilder{LLMConfig: c, cfg: c.Model.Config, m: m, ad: ad}
	logits, err := b.logits()
	if err != nil {
		return nil, err
	}
	return m.withOutput(logits, ops.SoftmaxCrossEntropy{})
}

// logits builds the model's graph, its family's, and returns its logits,
// or the builder's first error.
func (b *llmBuilder) logits() (*gorgonia.Node, error) {
	var logits *gorgonia.Node
	if b.cfg.Arch == hfconfig.ArchGPT2 {
		logits = b.gpt2()
	} else {
		logits = b.llama()
	}
	return logits, b.err
}

// llmBuilder builds one llm graph. Its methods that add ops keep the
// first error (an op whose shapes do not fit, named with the layer and
// the op) and add nothing once there is one, so that a layer reads as its
// formula; Build returns the error.
type llmBuilder struct {
	LLMConfig
	cfg hfconfig.Config
	m   *Model
	// ad adds LoRA's adapters, nil when it is off.
	ad *adapters
	// where names the block being built, for errors; current is it.
	where   string
	current *engine.Block
	// pass is the generation pass being built (generate.go), nil for
	// the training and evaluation graph.
	pass *genPass
	err  error
}

// normal02 is the weights' initialisation of transformers' decoders:
// N(0, initializer_range²) with the default range 0.02.
var normal02 = normal(0.02)

// apply adds the op of spec on inputs; what names it in an error.
func (b *llmBuilder) apply(what string, spec ops.Spec, inputs ...*gorgonia.Node) *gorgonia.Node {
	if b.err != nil {
		return nil
	}
	n, err := ops.Apply(spec, inputs...)
	if err != nil {
		b.err = fmt.Errorf("%s%s: %w", b.where, what, err)
	}
	return n
}

// linear adds x·Wᵀ, plus bias when it is not nil.
func (b *llmBuilder) linear(what string, x, w, bias *gorgonia.Node) *gorgonia.Node {
	if bias == nil {
		return b.apply(what, ops.Projection{}, x, w)
	}
	return b.apply(what, ops.Linear{}, x, w, bias)
}

// adapt adds LoRA's adapter of the layer name (of kind kind) on input x
// to its output y, over y's columns [off, off+n) (adapters.adapt); y
// itself when the layer is no target.
func (b *llmBuilder) adapt(block *engine.Block, name, kind string, x, y *gorgonia.Node, off, n int) *gorgonia.Node {
	if b.err != nil {
		return nil
	}
	out, err := b.ad.adapt(block, name, kind, x, y, off, n)
	if err != nil {
		b.err = fmt.Errorf("%s%w", b.where, err)
	}
	return out
}

// attention adds the causal attention of the packed queries, keys and
// values qkv, heads merged: fused, or the heads' probabilities and then
// their mix of the values (attentionOps).
func (b *llmBuilder) attention(attn ops.AttentionConfig, qkv *gorgonia.Node) *gorgonia.Node {
	if b.err != nil {
		return nil
	}
	if b.pass != nil {
		return b.pass.attend(b, attn, qkv)
	}
	out, err := attentionOps(b.LLMConfig.attention(), attn, qkv)
	if err != nil {
		b.err = fmt.Errorf("%sattention: %w", b.where, err)
	}
	return out
}

// paramAdder adds a parameter to a block: its name, initialiser and shape.
type paramAdder func(name string, init func(*rand.Rand, []float32), shape ...int) *gorgonia.Node

// block starts a block named name; its adder adds the block's parameters,
// named prefix + their name.
func (b *llmBuilder) block(name, prefix string) (*engine.Block, paramAdder) {
	block := &engine.Block{Name: name}
	b.where, b.current = name+": ", block
	return block, func(param string, init func(*rand.Rand, []float32), shape ...int) *gorgonia.Node {
		if n := b.pass.shared(prefix + param); n != nil { // a later generation pass's
			return n
		}
		return b.m.param(block, prefix+param, init, shape...)
	}
}

// head adds the final block: its norm (normalise, given the block's
// parameter adder) and the product with the output weight, the
// embedding's table when tied (it stays the embed block's: see
// LLMConfig), else lm_head's own; it returns the logits.
func (b *llmBuilder) head(x, embedW *gorgonia.Node, normalise func(x *gorgonia.Node, p paramAdder) *gorgonia.Node) *gorgonia.Node {
	head, p := b.block("head", "")
	x = b.pass.lastRows(b, x)
	x = normalise(x, p)
	w := embedW
	if !b.cfg.TieEmbeddings {
		w = p("lm_head.weight", normal02, b.cfg.Vocab, b.cfg.Hidden)
	}
	b.m.Blocks = append(b.m.Blocks, *head)
	return b.apply("lm_head", ops.Projection{}, x, w)
}

// llama builds the Llama family's graph (llama, mistral, qwen2) and
// returns its logits:
//
//	x = embed_tokens(ids)
//	per layer: x = x + o_proj(attention(rope(qkv_proj(rmsnorm(x)))))
//	           x = x + down_proj(silu(gate) ⊙ up), gate|up = gate_up_proj(rmsnorm(x))
//	logits = lm_head(rmsnorm(x))   (embed_tokens' weight when tied)
func (b *llmBuilder) llama() *gorgonia.Node {
	cfg, m := b.cfg, b.m
	d, hd := cfg.Hidden, cfg.HeadDim
	embed, p := b.block("embed", "")
	embedW := p("model.embed_tokens.weight", normal02, cfg.Vocab, d)
	m.Blocks = append(m.Blocks, *embed)
	x := b.apply("embed_tokens", ops.TokenEmbedding{}, m.Input, embedW)

	rotate := b.rotary()
	attn := ops.AttentionConfig{Heads: cfg.Heads, KVHeads: cfg.KVHeads, SeqLen: b.SeqLen, Causal: true}
	norm := ops.RMSNorm{Eps: cfg.NormEps}
	qkvRows := (cfg.Heads + 2*cfg.KVHeads) * hd
	for l := 1; l <= b.Layers; l++ {
		block, p := b.block(fmt.Sprintf("layer%d", l), fmt.Sprintf("model.layers.%d.", l-1))
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

		prefix := fmt.Sprintf("model.layers.%d.", l-1)
		q, kv := cfg.Heads*hd, cfg.KVHeads*hd
		h := b.apply("input_layernorm", norm, x, inNorm)
		qkv := b.linear("qkv_proj", h, qkvW, qkvB)
		qkv = b.adapt(block, prefix+"self_attn.q_proj", "q_proj", h, qkv, 0, q)
		qkv = b.adapt(block, prefix+"self_attn.k_proj", "k_proj", h, qkv, q, kv)
		qkv = b.adapt(block, prefix+"self_attn.v_proj", "v_proj", h, qkv, q+kv, kv)
		qkv = rotate(qkv)
		mixed := b.attention(attn, qkv)
		o := b.adapt(block, prefix+"self_attn.o_proj", "o_proj", mixed, b.linear("o_proj", mixed, oW, oB), 0, d)
		x = b.apply("residual", ops.Add{}, x, o)
		h = b.apply("post_attention_layernorm", norm, x, postNorm)
		gu := b.linear("gate_up_proj", h, guW, guB)
		gu = b.adapt(block, prefix+"mlp.gate_proj", "gate_proj", h, gu, 0, cfg.Intermediate)
		gu = b.adapt(block, prefix+"mlp.up_proj", "up_proj", h, gu, cfg.Intermediate, cfg.Intermediate)
		act := b.apply("silu(gate) ⊙ up", ops.SwiGLU{}, gu)
		down := b.adapt(block, prefix+"mlp.down_proj", "down_proj", act, b.linear("down_proj", act, downW, downB), 0, d)
		x = b.apply("residual", ops.Add{}, x, down)
		m.Blocks = append(m.Blocks, *block)
	}
	return b.head(x, embedW, func(x *gorgonia.Node, p paramAdder) *gorgonia.Node {
		return b.apply("norm", norm, x, p("model.norm.weight", constant(1), d))
	})
}

// rotary returns the rotary embedding of packed rows qkv, its tables
// (RotaryTables) added to the model's constants: for positions 0 …
// SeqLen−1, or in a generation pass the rows of the new tokens' positions
// (genPass.rotaryTables).
func (b *llmBuilder) rotary() func(qkv *gorgonia.Node) *gorgonia.Node {
	cfg, m := b.cfg, b.m
	hd := cfg.HeadDim
	rows := b.SeqLen
	var cosN, sinN *gorgonia.Node
	if b.pass != nil {
		cosN, sinN, rows = b.pass.rotaryTables(b)
	} else {
		cos, sin := RotaryTables(cfg.RopeInvFreq(), b.SeqLen)
		cosN, sinN = m.tensor("rope.cos", b.SeqLen, hd/2), m.tensor("rope.sin", b.SeqLen, hd/2)
		m.Constants = append(m.Constants, Constant{Node: cosN, Values: cos}, Constant{Node: sinN, Values: sin})
	}
	rope := ops.Rotary{Heads: cfg.Heads + cfg.KVHeads, HeadDim: hd, SeqLen: rows}
	return func(qkv *gorgonia.Node) *gorgonia.Node { return b.apply("rotary embedding", rope, qkv, cosN, sinN) }
}

// positions adds GPT-2's learned positions wpe to x: row r of each
// sequence's, or in a generation pass the rows of the new tokens'
// positions (genPass.positions).
func (b *llmBuilder) positions(x, wpe *gorgonia.Node) *gorgonia.Node {
	if b.pass != nil {
		return b.pass.positions(b, x, wpe)
	}
	return b.apply("wpe", ops.AddPositions{SeqLen: b.SeqLen}, x, wpe)
}

// gpt2 builds GPT-2's graph and returns its logits:
//
//	x = wte(ids) + wpe(positions)
//	per layer: x = x + c_proj(attention(c_attn(ln_1(x))))
//	           x = x + mlp.c_proj(gelu_new(c_fc(ln_2(x))))
//	logits = ln_f(x)·wteᵀ   (lm_head's own weight when untied)
func (b *llmBuilder) gpt2() *gorgonia.Node {
	cfg, m := b.cfg, b.m
	d := cfg.Hidden
	// transformers' GPT2 initialisation: N(0, 0.02²) weights, zero biases,
	// and the residual projections' weights scaled by 1/√(2·n_layer).
	residual := normal(0.02 / math.Sqrt(2*float64(cfg.Layers)))
	embed, p := b.block("embed", "")
	wte := p("wte.weight", normal02, cfg.Vocab, d)
	wpe := p("wpe.weight", normal(0.01), cfg.MaxPositions, d)
	m.Blocks = append(m.Blocks, *embed)
	x := b.apply("wte", ops.TokenEmbedding{}, m.Input, wte)
	x = b.positions(x, wpe)

	attn := ops.AttentionConfig{Heads: cfg.Heads, SeqLen: b.SeqLen, Causal: true}
	ln := ops.LayerNorm{Eps: cfg.NormEps}
	for l := 1; l <= b.Layers; l++ {
		block, p := b.block(fmt.Sprintf("layer%d", l), fmt.Sprintf("h.%d.", l-1))
		ln1W, ln1B := p("ln_1.weight", constant(1), d), p("ln_1.bias", constant(0), d)
		attnW, attnB := p("attn.c_attn.weight", normal02, d, 3*d), p("attn.c_attn.bias", constant(0), 3*d)
		projW, projB := p("attn.c_proj.weight", residual, d, d), p("attn.c_proj.bias", constant(0), d)
		ln2W, ln2B := p("ln_2.weight", constant(1), d), p("ln_2.bias", constant(0), d)
		fcW, fcB := p("mlp.c_fc.weight", normal02, d, cfg.Intermediate), p("mlp.c_fc.bias", constant(0), cfg.Intermediate)
		outW, outB := p("mlp.c_proj.weight", residual, cfg.Intermediate, d), p("mlp.c_proj.bias", constant(0), d)

		prefix := fmt.Sprintf("h.%d.", l-1)
		h := b.apply("ln_1", ln, x, ln1W, ln1B)
		qkv := b.adapt(block, prefix+"attn.c_attn", "c_attn", h, b.apply("c_attn", ops.Conv1D{}, h, attnW, attnB), 0, 3*d)
		mixed := b.attention(attn, qkv)
		proj := b.adapt(block, prefix+"attn.c_proj", "c_proj", mixed, b.apply("attn.c_proj", ops.Conv1D{}, mixed, projW, projB), 0, d)
		x = b.apply("residual", ops.Add{}, x, proj)
		h = b.apply("ln_2", ln, x, ln2W, ln2B)
		fc := b.adapt(block, prefix+"mlp.c_fc", "c_fc", h, b.apply("c_fc", ops.Conv1D{}, h, fcW, fcB), 0, cfg.Intermediate)
		f := b.apply("gelu_new", ops.GELUTanh{}, fc)
		out := b.adapt(block, prefix+"mlp.c_proj", "c_proj", f, b.apply("mlp.c_proj", ops.Conv1D{}, f, outW, outB), 0, d)
		x = b.apply("residual", ops.Add{}, x, out)
		m.Blocks = append(m.Blocks, *block)
	}
	return b.head(x, wte, func(x *gorgonia.Node, p paramAdder) *gorgonia.Node {
		return b.apply("ln_f", ln, x, p("ln_f.weight", constant(1), d), p("ln_f.bias", constant(0), d))
	})
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
