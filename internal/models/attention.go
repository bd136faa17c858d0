package models

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gorgonia.org/gorgonia"

	"gpuz/internal/engine"
	"gpuz/internal/levers"
	"gpuz/internal/ops"
)

// AttentionConfig sizes the attention workload: a causal self-attention
// decoder over sequences of SeqLen token ids below Vocab, trained with
// cross-entropy to predict each token's own id. The model is an Embedding
// of Vocab × DModel plus fixed sinusoidal positions, Layers decoder layers,
// each x = LayerNorm(x + MHA(x)); x = LayerNorm(x + Linear(x)) with Heads
// causal heads, and a final Linear(DModel → Vocab), as the PyTorch peer
// builds it.
type AttentionConfig struct {
	Vocab, DModel, Heads, Layers, SeqLen int
	// Attention is eager (the default: the probabilities kept, as the
	// reference) or fused (levers.Attention).
	Attention levers.Attention
	// LoRA adapts the decoder layers' linear layers (levers.LoRA); the
	// zero value is off.
	LoRA levers.LoRA
	// Feed sizes the data set and the run, as in every workload.
	Feed
}

// DataLen is the number of values Data makes, computed without making
// them.
func (c AttentionConfig) DataLen() int { return c.Samples * c.SeqLen }

// Data returns the workload's data: Samples sequences of SeqLen token ids
// drawn uniformly from [0, Vocab), stored as float32; the target is the
// ids themselves.
func (c AttentionConfig) Data(seed uint64) Data {
	rng := rand.New(rand.NewPCG(seed, math.MaxUint64))
	d := Data{Samples: c.Samples, RowLen: c.SeqLen, Values: make([]float32, c.Samples*c.SeqLen)}
	for i := range d.Values {
		d.Values[i] = float32(rng.IntN(c.Vocab))
	}
	return d
}

// Validate reports the first size that cannot make a model.
func (c AttentionConfig) Validate() error { return validate(&c, c.check) }

// check is Validate's checks particular to the workload.
func (c AttentionConfig) check() error {
	if err := checkLoRA(c); err != nil {
		return err
	}
	switch {
	case c.DModel%c.Heads != 0:
		return fmt.Errorf("--d-model (%d) must be divisible by --heads (%d)", c.DModel, c.Heads)
	case c.DModel%2 != 0:
		return fmt.Errorf("--d-model (%d) must be even: the sinusoidal positions pair a sine and a cosine", c.DModel)
	case c.Samples%c.Batch != 0:
		return divides(c.Samples, c.Batch)
	case c.Vocab > 1<<24:
		return fmt.Errorf("--vocab (%d) must be at most 2²⁴ so that every id is exact in float32", c.Vocab)
	}
	// The largest tensors: the parameters, and one layer's attention
	// probabilities, batch × heads × seq².
	// The products are checked, never wrapped (product); vocab is at most
	// 2²⁴ here.
	if err := tooLong("layers", c.Layers, maxAttentionLayer); err != nil {
		return err
	}
	layers, okLayers := product(1<<40, c.Layers, 5, c.DModel, c.DModel)
	embed, okEmbed := product(1<<40, 2, c.Vocab, c.DModel)
	if err := c.Attention.Validate(); err != nil {
		return err
	}
	_, okProbs := product(1<<40, c.Batch, c.Heads, c.SeqLen, c.SeqLen)
	okProbs = okProbs || c.attention().Fused() // fused attention keeps no probabilities
	if !okLayers || !okEmbed || layers+embed > 1<<40 || !okProbs {
		return errors.New("the model is too large: over 2⁴⁰ parameters or attention probabilities")
	}
	// Every other tensor: the positions table (built with the graph), a
	// batch's activations and logits, one layer's saved activations and
	// the data set.
	return tooLarge(
		extent{"the positions, seq-len × d-model", []int{c.SeqLen, c.DModel}},
		extent{"the logits, batch × seq-len × vocab", []int{c.Batch, c.SeqLen, c.Vocab}},
		extent{"the saved activations, layers × 16 × batch × seq-len × d-model", []int{c.Layers, 16, c.Batch, c.SeqLen, c.DModel}},
		extent{"the data set, samples × seq-len", []int{c.Samples, c.SeqLen}},
	)
}

// Build returns the workload's graph for one batch. Its blocks are, in the
// peer's order, the head Linear, the Embedding and the decoder layers
// layer1 … layerN.
func (c AttentionConfig) Build() (*Model, error) {
	m, err := newModel(c, "ids", c.Batch, c.SeqLen)
	if err != nil {
		return nil, err
	}
	positions := m.tensor("positions", c.SeqLen, c.DModel)
	m.Constants = []Constant{{Node: positions, Values: func() []float32 { return SinusoidalPositions(c.SeqLen, c.DModel) }}}

	head := engine.Block{Name: "head"}
	headW := m.param(&head, "head.weight", uniform(fanInBound(c.DModel)), c.Vocab, c.DModel)
	headB := m.param(&head, "head.bias", uniform(fanInBound(c.DModel)), c.Vocab)
	embed := engine.Block{Name: "embed"}
	embedW := m.param(&embed, "embed.weight", normal(1), c.Vocab, c.DModel)
	m.Blocks = append(m.Blocks, head, embed)

	x, err := ops.Apply(ops.Embedding{}, m.Input, embedW, positions)
	if err != nil {
		return nil, fmt.Errorf("embedding: %w", err)
	}
	ad, err := newAdapters(c, m)
	if err != nil {
		return nil, err
	}
	for l := 1; l <= c.Layers; l++ {
		block := engine.Block{Name: fmt.Sprintf("layer%d", l)}
		if x, err = c.decoderLayer(m, ad, &block, x); err != nil {
			return nil, fmt.Errorf("%s: %w", block.Name, err)
		}
		m.Blocks = append(m.Blocks, block)
	}
	logits, err := ops.Apply(ops.Linear{}, x, headW, headB)
	if err != nil {
		return nil, fmt.Errorf("head: %w", err)
	}
	return m.withOutput(logits, ops.SoftmaxCrossEntropy{})
}

// decoderLayer adds one decoder layer on x [tokens, d] to the graph, its
// parameters to block, named as PyTorch names them, and returns the
// layer's output:
//
//	x = LayerNorm(x + out_proj(Attention(in_proj(x))))
//	x = LayerNorm(x + Linear(x))
//
// LoRA's adapters (ad, nil when off) add to in_proj, out_proj and ff as
// its targets say.
func (c AttentionConfig) decoderLayer(m *Model, ad *adapters, block *engine.Block, x *gorgonia.Node) (*gorgonia.Node, error) {
	d := c.DModel
	p := func(name string, init func(*rand.Rand, []float32), shape ...int) *gorgonia.Node {
		return m.param(block, block.Name+"."+name, init, shape...)
	}
	// nn.MultiheadAttention: xavier-uniform in_proj_weight, zero biases;
	// out_proj keeps nn.Linear's weight initialisation.
	inW := p("attn.in_proj_weight", uniform(math.Sqrt(6/float64(d+3*d))), 3*d, d)
	inB := p("attn.in_proj_bias", constant(0), 3*d)
	outW := p("attn.out_proj.weight", uniform(fanInBound(d)), d, d)
	outB := p("attn.out_proj.bias", constant(0), d)
	norm1W := p("norm1.weight", constant(1), d)
	norm1B := p("norm1.bias", constant(0), d)
	ffW := p("ff.weight", uniform(fanInBound(d)), d, d)
	ffB := p("ff.bias", uniform(fanInBound(d)), d)
	norm2W := p("norm2.weight", constant(1), d)
	norm2B := p("norm2.bias", constant(0), d)

	attn := ops.AttentionConfig{Heads: c.Heads, SeqLen: c.SeqLen, Causal: true}
	ln := ops.LayerNorm{Eps: ops.DefaultLayerNormEps}
	qkv, err := ops.Apply(ops.Linear{}, x, inW, inB)
	if err != nil {
		return nil, fmt.Errorf("in_proj: %w", err)
	}
	if qkv, err = ad.adapt(block, block.Name+".attn.in_proj", "in_proj", x, qkv, 0, 3*d); err != nil {
		return nil, err
	}
	mixed, err := attentionOps(c.attention(), attn, qkv)
	if err != nil {
		return nil, fmt.Errorf("attention: %w", err)
	}
	a, err := ops.Apply(ops.Linear{}, mixed, outW, outB)
	if err != nil {
		return nil, fmt.Errorf("out_proj: %w", err)
	}
	if a, err = ad.adapt(block, block.Name+".attn.out_proj", "out_proj", mixed, a, 0, d); err != nil {
		return nil, err
	}
	if x, err = residualNorm(ln, x, a, norm1W, norm1B); err != nil {
		return nil, fmt.Errorf("norm1: %w", err)
	}
	f, err := ops.Apply(ops.Linear{}, x, ffW, ffB)
	if err != nil {
		return nil, fmt.Errorf("ff: %w", err)
	}
	if f, err = ad.adapt(block, block.Name+".ff", "ff", x, f, 0, d); err != nil {
		return nil, err
	}
	if x, err = residualNorm(ln, x, f, norm2W, norm2B); err != nil {
		return nil, fmt.Errorf("norm2: %w", err)
	}
	return x, nil
}

// residualNorm returns LayerNorm(x + f).
func residualNorm(ln ops.LayerNorm, x, f, gamma, beta *gorgonia.Node) (*gorgonia.Node, error) {
	sum, err := ops.Apply(ops.Add{}, x, f)
	if err != nil {
		return nil, err
	}
	return ops.Apply(ln, sum, gamma, beta)
}

// normal returns an initialiser drawing from N(0, std²), as PyTorch's
// nn.Embedding does with std 1.
func normal(std float64) func(*rand.Rand, []float32) {
	return func(rng *rand.Rand, dst []float32) {
		for i := range dst {
			dst[i] = float32(rng.NormFloat64() * std)
		}
	}
}

// constant returns an initialiser filling with v, as PyTorch's LayerNorm
// (ones and zeros) and MultiheadAttention's biases (zeros) start.
func constant(v float32) func(*rand.Rand, []float32) {
	return func(_ *rand.Rand, dst []float32) {
		for i := range dst {
			dst[i] = v
		}
	}
}

// SinusoidalPositions returns the fixed positional table [length, d] of
// the PyTorch peer's sinusoidal_encoding, d even: for position p and
// i = 0, 2, 4, …, with freq = exp(−ln(10000)·i/d), entry (p, i) is
// sin(p·freq) and entry (p, i+1) is cos(p·freq). Every intermediate is
// rounded to float32 where torch computes in float32.
func SinusoidalPositions(length, d int) []float32 {
	pe := make([]float32, length*d)
	negLog := float32(-math.Log(10000.0))
	for i := 0; i+1 < d; i += 2 {
		freq := float32(math.Exp(float64(negLog * float32(i) / float32(d))))
		for p := range length {
			arg := float64(float32(p) * freq)
			pe[p*d+i] = float32(math.Sin(arg))
			pe[p*d+i+1] = float32(math.Cos(arg))
		}
	}
	return pe
}
