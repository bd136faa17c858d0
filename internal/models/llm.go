package models

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

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
	if cfg.Arch == nil {
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
	b := &llmBuilder{LLMConfig: c, cfg: c.Model.Config, arch: c.Model.Arch, m: m, ad: ad}
	logits, err := b.logits()
	if err != nil {
		return nil, err
	}
	return m.withOutput(logits, ops.SoftmaxCrossEntropy{})
}

// logits builds the model's graph, its family's (decoder), and returns
// its logits, or the builder's first error.
func (b *llmBuilder) logits() (*gorgonia.Node, error) {
	logits := b.decoder()
	return logits, b.err
}

// llmBuilder builds one llm graph. Its methods that add ops keep the
// first error (an op whose shapes do not fit, named with the layer and
// the op) and add nothing once there is one, so that a layer reads as its
// formula; Build returns the error.
type llmBuilder struct {
	LLMConfig
	cfg  hfconfig.Config
	arch *hfconfig.Arch // cfg's: the ops and the names
	m    *Model
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

// linear adds the linear module's product: x·Wᵀ (plus bias when it is
// not nil) for nn.Linear's weights, x·W + bias for Conv1D's.
func (b *llmBuilder) linear(what string, x, w, bias *gorgonia.Node) *gorgonia.Node {
	if b.arch.Weights == hfconfig.Conv1DWeights {
		return b.apply(what, ops.Conv1D{}, x, w, bias)
	}
	if b.err == nil && !slices.Contains(b.m.products, w) {
		b.m.products = append(b.m.products, w)
	}
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

// normParams adds the parameters of the norm named name: its weight and,
// for LayerNorm, its bias.
func (b *llmBuilder) normParams(p paramAdder, name string) []*gorgonia.Node {
	d := b.cfg.Hidden
	w := []*gorgonia.Node{p(name+".weight", constant(1), d)}
	if b.arch.Norm == hfconfig.LayerNorm {
		w = append(w, p(name+".bias", constant(0), d))
	}
	return w
}

// norm adds the norm of x with the parameters w (normParams).
func (b *llmBuilder) norm(what string, x *gorgonia.Node, w []*gorgonia.Node) *gorgonia.Node {
	if b.arch.Norm == hfconfig.LayerNorm {
		return b.apply(what, ops.LayerNorm{Eps: b.cfg.NormEps}, append([]*gorgonia.Node{x}, w...)...)
	}
	return b.apply(what, ops.RMSNorm{Eps: b.cfg.NormEps}, append([]*gorgonia.Node{x}, w...)...)
}

// projection is one linear module of a layer: its size and names
// (hfconfig.Projection), its weight and bias.
type projection struct {
	hfconfig.Projection
	w, bias *gorgonia.Node
}

// projParams adds the parameters of c's module of role r: its weight,
// drawn from init, and its bias when it has one.
func (b *llmBuilder) projParams(p paramAdder, r hfconfig.Role, init func(*rand.Rand, []float32)) projection {
	pr := projection{Projection: b.cfg.Projection(r)}
	pr.w = p(pr.Name+".weight", init, b.arch.WeightShape(pr.In, pr.Out)...)
	if pr.Bias {
		pr.bias = p(pr.Name+".bias", constant(0), pr.Out)
	}
	return pr
}

// project adds the module pr on x and LoRA's adapters of its parts (each
// transformers' module among its columns), in the layer's block; prefix
// is the layer's name prefix.
func (b *llmBuilder) project(block *engine.Block, prefix string, pr projection, x *gorgonia.Node) *gorgonia.Node {
	y := b.linear(pr.Name, x, pr.w, pr.bias)
	for _, part := range pr.Parts {
		y = b.adapt(block, prefix+part.Name, kind(part.Name), x, y, part.Off, part.Width)
	}
	return y
}

// kind is a module's last name component, as LoRA's targets name it
// (PEFT's suffix match): "q_proj" of "self_attn.q_proj".
func kind(module string) string {
	return module[strings.LastIndexByte(module, '.')+1:]
}

// decoder builds the graph the family's Arch describes and returns its
// logits (for the Llama family, then GPT-2):
//
//	x = embed_tokens(ids)                       x = wte(ids) + wpe(positions)
//	per layer: h = norm(x)                       (rmsnorm; ln_1: LayerNorm)
//	           x = x + o_proj(attention(rope(qkv_proj(h))))      (no rope: c_attn, c_proj)
//	           h = norm(x)
//	           x = x + down_proj(silu(gate) ⊙ up), gate|up = gate_up_proj(h)
//	                                             (x + c_proj(gelu_new(c_fc(h))))
//	logits = lm_head(norm(x))   (the embedding's weight when tied)
//
// Each parameter is named as the Arch names its module, with weights
// drawn as transformers' _init_weights draws them: N(0, 0.02²) for every
// nn.Linear, Conv1D and nn.Embedding weight (GPT-2's learned positions
// too; OpenAI's TensorFlow GPT-2 drew them at 0.01, transformers does
// not), norms' weights 1, biases 0, and for GPT-2 the residual
// projections' weights scaled by 1/√(2·n_layer).
func (b *llmBuilder) decoder() *gorgonia.Node {
	cfg, a, m := b.cfg, b.arch, b.m
	mods := a.Modules
	embed, p := b.block("embed", "")
	embedW := p(mods.Embed+".weight", normal02, cfg.Vocab, cfg.Hidden)
	var posW *gorgonia.Node
	if a.Positions == hfconfig.Learned {
		posW = p(mods.Positions+".weight", normal02, cfg.MaxPositions, cfg.Hidden)
	}
	m.Blocks = append(m.Blocks, *embed)
	if a.Weights != hfconfig.Conv1DWeights {
		m.embedding = embedW // a table quantized beside nn.Linear's weights
	}
	x := b.apply(mods.Embed, ops.TokenEmbedding{}, m.Input, embedW)
	if posW != nil {
		x = b.positions(mods.Positions, x, posW)
	}

	attn := ops.AttentionConfig{Heads: cfg.Heads, SeqLen: b.SeqLen, Causal: true}
	if a.GroupedKV() {
		attn.KVHeads = cfg.KVHeads
	}
	var rotate func(qkv *gorgonia.Node) *gorgonia.Node
	if a.Positions == hfconfig.Rotary {
		rotate = b.rotary()
	}
	residual := normal02
	if a.ScaledResidualInit {
		residual = normal(0.02 / math.Sqrt(2*float64(cfg.Layers)))
	}
	for l := 1; l <= b.Layers; l++ {
		prefix := mods.Layers + strconv.Itoa(l-1) + "."
		block, p := b.block(fmt.Sprintf("layer%d", l), prefix)
		attnNorm := b.normParams(p, mods.AttnNorm)
		qkvP := b.projParams(p, hfconfig.QKV, normal02)
		outP := b.projParams(p, hfconfig.Out, residual)
		mlpNorm := b.normParams(p, mods.MLPNorm)
		upP := b.projParams(p, hfconfig.Up, normal02)
		downP := b.projParams(p, hfconfig.Down, residual)

		h := b.norm(mods.AttnNorm, x, attnNorm)
		qkv := b.project(block, prefix, qkvP, h)
		if rotate != nil {
			qkv = rotate(qkv)
		}
		mixed := b.attention(attn, qkv)
		x = b.apply("residual", ops.Add{}, x, b.project(block, prefix, outP, mixed))
		h = b.norm(mods.MLPNorm, x, mlpNorm)
		up := b.project(block, prefix, upP, h)
		var act *gorgonia.Node
		switch a.MLP {
		case hfconfig.GatedSiLU:
			act = b.apply("silu(gate) ⊙ up", ops.SwiGLU{}, up)
		case hfconfig.GELUTanh:
			act = b.apply("gelu_tanh", ops.GELUTanh{}, up)
		}
		x = b.apply("residual", ops.Add{}, x, b.project(block, prefix, downP, act))
		m.Blocks = append(m.Blocks, *block)
	}

	head, p := b.block("head", "")
	x = b.pass.lastRows(b, x)
	x = b.norm(mods.FinalNorm, x, b.normParams(p, mods.FinalNorm))
	w := embedW
	if !cfg.TieEmbeddings {
		w = p(mods.Head+".weight", normal02, cfg.Vocab, cfg.Hidden)
	}
	b.m.Blocks = append(b.m.Blocks, *head)
	return b.apply(mods.Head, ops.Projection{}, x, w)
}

// rotary returns the rotary embedding of packed rows qkv, its tables
// (RotaryTables) added to the model's constants, made when they are set
// (rotaryConstants): for positions 0 …
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
		cosN, sinN = m.tensor("rope.cos", b.SeqLen, hd/2), m.tensor("rope.sin", b.SeqLen, hd/2)
		m.Constants = append(m.Constants, rotaryConstants(cfg.RopeInvFreq(), b.SeqLen, cosN, sinN)...)
	}
	rope := ops.Rotary{Heads: cfg.Heads + cfg.KVHeads, HeadDim: hd, SeqLen: rows}
	return func(qkv *gorgonia.Node) *gorgonia.Node { return b.apply("rotary embedding", rope, qkv, cosN, sinN) }
}

// positions adds the learned positions pos (GPT-2's wpe, the module named
// name) to x: row r of each sequence's, or in a generation pass the rows
// of the new tokens' positions (genPass.positions).
func (b *llmBuilder) positions(name string, x, pos *gorgonia.Node) *gorgonia.Node {
	if b.pass != nil {
		return b.pass.positions(b, x, pos)
	}
	return b.apply(name, ops.AddPositions{SeqLen: b.SeqLen}, x, pos)
}

// rotaryConstants returns the constants cos and sin, the rotary tables
// of positions 0 … seqLen−1 (RotaryTables), each made when it is set.
func rotaryConstants(invFreq []float32, seqLen int, cos, sin *gorgonia.Node) []Constant {
	return []Constant{
		{Node: cos, Values: func() []float32 { return rotaryTable(invFreq, seqLen, math.Cos) }},
		{Node: sin, Values: func() []float32 { return rotaryTable(invFreq, seqLen, math.Sin) }},
	}
}

// RotaryTables returns the rotary embedding's cos and sin tables
// [seqLen, len(invFreq)] for positions 0 … seqLen−1, each angle
// position·invFreq[j] and its cosine and sine rounded to float32 as
// transformers computes them (the angle a float32 product, its cosine and
// sine of that float32).
func RotaryTables(invFreq []float32, seqLen int) (cos, sin []float32) {
	return rotaryTable(invFreq, seqLen, math.Cos), rotaryTable(invFreq, seqLen, math.Sin)
}

// rotaryTable is one of RotaryTables' tables: f (the cosine or the sine)
// of every angle, rounded to float32.
func rotaryTable(invFreq []float32, seqLen int, f func(float64) float64) []float32 {
	n := len(invFreq)
	t := make([]float32, seqLen*n)
	for s := range seqLen {
		for j, fr := range invFreq {
			t[s*n+j] = float32(f(float64(float32(s) * fr)))
		}
	}
	return t
}
