package models

import (
	"fmt"
	"math/rand/v2"

	"gorgonia.org/gorgonia"

	"gpuz/internal/engine"
	"gpuz/internal/hfconfig"
	"gpuz/internal/levers"
	"gpuz/internal/ops"
)

// GenerateConfig sizes the llm workload's generation (issue 41): Batch
// sequences each take a prompt of Prompt token ids through the model in
// one pass (prefill), which fills a key-value cache per decoder layer,
// then generate tokens one at a time (decode), each fed back as the next
// input, until the caches' Context positions are full.
type GenerateConfig struct {
	// Model is the configuration the graph follows; Layers how many of
	// its decoder layers are built.
	Model  hfconfig.Model
	Layers int
	// Batch is the sequences generated at once, Prompt the token ids of
	// each one's prompt and Context the positions each cache holds (the
	// prompt and the generated tokens but the last, which no pass reads).
	Batch, Prompt, Context int
	// KVCache is how the caches store their keys and values: float32
	// ("" or levers.FP32), or 16 bits of bf16 or fp16, whatever the
	// weights' precision (engine.Spec.StatePrecision).
	KVCache levers.Precision
}

// llm is the llm workload's config of the same model at sequence length
// seq, one batch: the graph's sizes.
func (c GenerateConfig) llm(seq int) LLMConfig {
	return LLMConfig{Model: c.Model, Layers: c.Layers, SeqLen: seq, Feed: Feed{Samples: c.Batch, Batch: c.Batch, Epochs: 1}}
}

// Validate reports the first setting that cannot make a generation: the
// llm workload's checks at a sequence of Context positions (the model's
// maximum positions among them), a context that cannot hold the prompt,
// and a cache type that is no precision.
func (c GenerateConfig) Validate() error {
	if err := c.KVCache.Validate(); err != nil {
		return fmt.Errorf("the key-value cache's %w", err)
	}
	switch {
	case c.Prompt <= 0:
		return fmt.Errorf("the prompt must be positive, got %d tokens", c.Prompt)
	case c.Context < c.Prompt:
		return fmt.Errorf("a context of %d positions cannot hold a prompt of %d tokens", c.Context, c.Prompt)
	}
	return c.llm(c.Context).Validate()
}

// CacheBytes returns the bytes of every decoder layer's key-value cache,
// as the generation stores them (KVCache: 4 bytes an element, or 2): 2
// (keys and values) · layers · kv heads · head dim · context · batch ·
// the element's bytes. Grouped-query attention's heads share their kv
// head's keys and values, which are never copied per query head.
func (c GenerateConfig) CacheBytes() int64 {
	m := c.Model.Config
	kv := m.KVHeads
	if kv == 0 {
		kv = m.Heads
	}
	elem := int64(4)
	if c.KVCache.Half() {
		elem = 2
	}
	return elem * 2 * int64(c.Layers) * int64(kv) * int64(m.HeadDim) * int64(c.Context) * int64(c.Batch)
}

// Generation is the llm workload's generation graph: its two passes
// (Prefill, of Prompt new tokens per sequence, and Decode, of one) in one
// graph over one set of parameters, with one key-value cache per decoder
// layer, a state of the layer's block (engine.Block.State): [2, batch,
// kv heads, Context, head dim], its keys then its values, written in
// place by each pass and read by the later ones. Its parameters are the
// llm workload's (LLMConfig.Build), in the same order, so that the same
// seed draws the same weights.
type Generation struct {
	*Model
	Config          GenerateConfig
	Prefill, Decode Pass
	// Caches is each decoder layer's key-value cache.
	Caches []*gorgonia.Node
}

// Pass is one pass of a generation: fed the new tokens' ids and positions
// ([batch, Seq] each, new token i of every sequence at position start + i),
// it writes their keys and values into the caches and computes Logits
// [batch, vocab], each sequence's last new token's.
type Pass struct {
	Seq            int
	IDs, Positions *gorgonia.Node
	Logits         *gorgonia.Node
}

// Build returns the generation graph.
func (c GenerateConfig) Build() (*Generation, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m := &Model{Graph: gorgonia.NewGraph(), init: map[*gorgonia.Node]func(*rand.Rand, []float32){}}
	g := &Generation{Model: m, Config: c}
	shared := &genShared{context: c.Context, params: map[string]*gorgonia.Node{}, caches: map[string]*gorgonia.Node{}}
	for i, p := range []*Pass{&g.Prefill, &g.Decode} {
		p.Seq = c.Prompt
		if i > 0 {
			p.Seq = 1
		}
		var err error
		if p.Logits, err = g.buildPass(shared, p); err != nil {
			return nil, err
		}
		if i == 0 { // the later pass reads the first's parameters and caches
			for _, blk := range m.Blocks {
				for _, n := range blk.Params {
					shared.params[n.Name()] = n
				}
				g.Caches = append(g.Caches, blk.State...)
			}
		}
	}
	return g, nil
}

// buildPass adds pass p to the graph and returns its logits: the llm
// workload's builder over p's inputs, with each layer's attention through
// its cache. The first pass declares the blocks; a later one reads their
// parameters (genShared.params) and adds no block.
func (g *Generation) buildPass(shared *genShared, p *Pass) (*gorgonia.Node, error) {
	m, c := g.Model, g.Config
	suffix := fmt.Sprintf(".%d", p.Seq)
	if p == &g.Decode {
		suffix = ".decode"
	}
	p.IDs, p.Positions = m.tensor("ids"+suffix, c.Batch, p.Seq), m.tensor("positions"+suffix, c.Batch, p.Seq)
	m.Input = p.IDs
	declared := len(m.Blocks)
	pass := &genPass{genShared: shared, p: p, first: declared == 0}
	b := &llmBuilder{LLMConfig: c.llm(p.Seq), cfg: c.Model.Config, arch: c.Model.Arch, m: m, pass: pass}
	logits, err := b.logits()
	if err != nil {
		return nil, fmt.Errorf("generation, %d new tokens per sequence: %w", p.Seq, err)
	}
	if !pass.first {
		m.Blocks = m.Blocks[:declared]
	}
	return logits, nil
}

// Spec returns what engine.Compile compiles for the generation: its two
// passes, prefill then decode, over its blocks, fed each pass's ids and
// positions and the constants, the caches stored as Config.KVCache says.
func (g *Generation) Spec() engine.Spec {
	inputs := []*gorgonia.Node{g.Prefill.IDs, g.Prefill.Positions, g.Decode.IDs, g.Decode.Positions}
	for _, c := range g.Constants {
		inputs = append(inputs, c.Node)
	}
	return engine.Spec{Inputs: inputs, Blocks: g.Blocks, Passes: []*gorgonia.Node{g.Prefill.Logits, g.Decode.Logits},
		StatePrecision: g.Config.KVCache}
}

// genShared is what the passes of one generation share: the context, the
// first pass's parameters by name, each layer block's cache by block
// name, and the rotary tables of every position.
type genShared struct {
	context  int
	params   map[string]*gorgonia.Node
	caches   map[string]*gorgonia.Node
	cos, sin *gorgonia.Node
}

// genPass is the generation pass an llmBuilder builds: its hooks replace
// the attention of the whole sequence by the cache's, and positions
// 0 … SeqLen−1 by the new tokens'. Its methods are no-ops on nil where
// the builder calls them for every graph.
type genPass struct {
	*genShared
	p *Pass
	// first is set for the pass that declares the blocks.
	first bool
}

// shared returns a later pass's parameter of the given name, declared by
// the first pass; nil on the first pass and for the llm workload's graph.
func (gp *genPass) shared(name string) *gorgonia.Node {
	if gp == nil || gp.first {
		return nil
	}
	return gp.params[name]
}

// attend is the attention of a pass: the new tokens' keys and values
// written into the layer's cache (a state of the layer's block, declared
// by the first pass), then their queries' attention against it.
func (gp *genPass) attend(b *llmBuilder, attn ops.AttentionConfig, qkv *gorgonia.Node) *gorgonia.Node {
	name := b.current.Name
	kv, ok := gp.caches[name]
	if !ok {
		if !gp.first {
			b.err = fmt.Errorf("%sno key-value cache declared by the first pass", b.where)
			return nil
		}
		cfg := b.cfg
		kv = b.m.tensor(name+".kv_cache", 2, b.Batch, kvHeads(attn), gp.context, cfg.HeadDim)
		b.current.State = append(b.current.State, kv)
		gp.caches[name] = kv
	}
	c := ops.CacheConfig{Heads: attn.Heads, KVHeads: attn.KVHeads, HeadDim: b.cfg.HeadDim, Seq: gp.p.Seq, Context: gp.context}
	written := b.apply("key-value cache write", ops.CacheWrite{CacheConfig: c}, kv, qkv, gp.p.Positions)
	return b.apply("key-value cache attention", ops.CacheAttend{CacheConfig: c}, qkv, written, gp.p.Positions)
}

// kvHeads is the key and value heads of attn: its KVHeads, or its heads.
func kvHeads(attn ops.AttentionConfig) int {
	if attn.KVHeads == 0 {
		return attn.Heads
	}
	return attn.KVHeads
}

// rotaryTables returns the rotary embedding's cos and sin rows of the new
// tokens' positions, [batch·Seq, head dim/2], gathered from tables of
// every position of the context (constants the first pass adds), and
// their rows.
func (gp *genPass) rotaryTables(b *llmBuilder) (cos, sin *gorgonia.Node, rows int) {
	if gp.cos == nil {
		hd := b.cfg.HeadDim
		gp.cos, gp.sin = b.m.tensor("rope.cos", gp.context, hd/2), b.m.tensor("rope.sin", gp.context, hd/2)
		b.m.Constants = append(b.m.Constants, rotaryConstants(b.cfg.RopeInvFreq(), gp.context, gp.cos, gp.sin)...)
	}
	cos = b.apply("rotary cos at the positions", ops.TokenEmbedding{}, gp.p.Positions, gp.cos)
	sin = b.apply("rotary sin at the positions", ops.TokenEmbedding{}, gp.p.Positions, gp.sin)
	return cos, sin, b.Batch * gp.p.Seq
}

// positions adds GPT-2's learned positions of the new tokens to x: the
// rows of wpe at their positions, gathered and added (the same sums as
// AddPositions').
func (gp *genPass) positions(b *llmBuilder, x, wpe *gorgonia.Node) *gorgonia.Node {
	rows := b.apply("wpe at the positions", ops.TokenEmbedding{}, gp.p.Positions, wpe)
	return b.apply("wpe", ops.Add{}, x, rows)
}

// lastRows returns the rows of x of each sequence's last new token,
// [batch, d], which the head reads in a pass: x itself for the llm
// workload's graph and for a pass of one new token; otherwise gathered
// (TokenEmbedding over x as its table) at row indices the pass adds as a
// constant.
func (gp *genPass) lastRows(b *llmBuilder, x *gorgonia.Node) *gorgonia.Node {
	if gp == nil || gp.p.Seq == 1 || b.err != nil {
		return x
	}
	batch, seq := b.Batch, gp.p.Seq
	idx := func() []float32 {
		idx := make([]float32, batch)
		for s := range idx {
			idx[s] = float32(s*seq + seq - 1)
		}
		return idx
	}
	n := b.m.tensor(fmt.Sprintf("last_rows.%d", seq), batch, 1)
	b.m.Constants = append(b.m.Constants, Constant{Node: n, Values: idx})
	return b.apply("last positions", ops.TokenEmbedding{}, n, x)
}

// Runner is what Generate runs a generation on: an engine.Program loaded
// from the generation's Spec, its parameters and constants set.
type Runner interface {
	SetInput(n *gorgonia.Node, data []float32) error
	RunPass(p int) error
	Read(n *gorgonia.Node) ([]float32, error)
}

// Generate runs the generation on prog: the prompt (batch × Prompt token
// ids, sequence after sequence) through the prefill pass, then tokens−1
// decode passes, each feeding every sequence's last token at the next
// position; each token is the argmax of its sequence's logits (the first
// of equal maxima: greedy, no sampling). It returns the generated tokens,
// [batch][tokens], and hands each, when not nil, every pass's logits
// [batch, vocab], those of generated token i.
func (g *Generation) Generate(prog Runner, prompt []float32, tokens int, each func(i int, logits []float32)) ([][]int, error) {
	c := g.Config
	switch {
	case len(prompt) != c.Batch*c.Prompt:
		return nil, fmt.Errorf("generation: a prompt of %d token ids, want %d sequences of %d", len(prompt), c.Batch, c.Prompt)
	case tokens <= 0:
		return nil, fmt.Errorf("generation: %d tokens to generate must be positive", tokens)
	case c.Prompt+tokens-1 > c.Context:
		return nil, fmt.Errorf("generation: a context of %d positions cannot hold a prompt of %d and %d generated tokens", c.Context, c.Prompt, tokens)
	}
	positions := make([]float32, c.Batch*c.Prompt)
	for i := range positions {
		positions[i] = float32(i % c.Prompt)
	}
	out := make([][]int, c.Batch)
	pass, ids := g.Prefill, prompt
	for i := range tokens {
		if i > 0 {
			pass, ids, positions = g.Decode, make([]float32, c.Batch), make([]float32, c.Batch)
			for s := range ids {
				ids[s], positions[s] = float32(out[s][i-1]), float32(c.Prompt+i-1)
			}
		}
		if err := prog.SetInput(pass.IDs, ids); err != nil {
			return nil, err
		}
		if err := prog.SetInput(pass.Positions, positions); err != nil {
			return nil, err
		}
		if err := prog.RunPass(min(i, 1)); err != nil {
			return nil, err
		}
		logits, err := prog.Read(pass.Logits)
		if err != nil {
			return nil, err
		}
		vocab := len(logits) / c.Batch
		for s := range out {
			out[s] = append(out[s], argmax(logits[s*vocab:(s+1)*vocab]))
		}
		if each != nil {
			each(i, logits)
		}
	}
	return out, nil
}

// argmax returns the index of the first maximum of x.
func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
