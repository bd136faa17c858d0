package hfconfig

import (
	"fmt"
	"math"
	"strconv"
)

// Tensor is one parameter tensor as Hugging Face names and shapes it.
type Tensor struct {
	Name  string
	Shape []int
}

// layout is a Config's parameters: the tensors before the layers, one
// layer's (names with the layer's prefix left out) and the tensors after.
type layout struct {
	prefix      string // the layers' prefix: "model.layers." or "h."
	before      []Tensor
	layer       []Tensor
	after       []Tensor
	layerParams int64 // one layer's parameters
}

// errOverflow is the error of sizes whose products do not fit int64.
func errOverflow(what string) error {
	return fmt.Errorf("the sizes are too large: %s overflows int64", what)
}

// mul returns a·b, or an error naming what when it overflows (a, b ≥ 0).
func mul(a, b int64, what string) (int64, error) {
	if a != 0 && b > math.MaxInt64/a {
		return 0, errOverflow(what)
	}
	return a * b, nil
}

// add returns a+b, or an error naming what when it overflows (a, b ≥ 0).
func add(a, b int64, what string) (int64, error) {
	if a > math.MaxInt64-b {
		return 0, errOverflow(what)
	}
	return a + b, nil
}

// numel returns the number of elements of t.
func numel(t Tensor) (int64, error) {
	n := int64(1)
	for _, d := range t.Shape {
		var err error
		if n, err = mul(n, int64(d), t.Name); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// linear returns a Linear's tensors (transformers' nn.Linear: weight [out,
// in], then its bias when it has one).
func linear(name string, out, in int, bias bool) []Tensor {
	ts := []Tensor{{name + ".weight", []int{out, in}}}
	if bias {
		ts = append(ts, Tensor{name + ".bias", []int{out}})
	}
	return ts
}

// layout returns c's parameters in transformers' state_dict order, or an
// error when a size or the total overflows int64. It assumes the sizes are
// positive (Validate checks them before calling it).
func (c Config) layout() (layout, error) {
	d, v, inter := c.Hidden, c.Vocab, c.Intermediate
	q, err := mul(int64(c.Heads), int64(c.HeadDim), "num_attention_heads·head_dim")
	if err != nil {
		return layout{}, err
	}
	kv, err := mul(int64(c.KVHeads), int64(c.HeadDim), "num_key_value_heads·head_dim")
	if err != nil {
		return layout{}, err
	}
	three, err := mul(3, int64(d), "3·n_embd")
	if err != nil {
		return layout{}, err
	}
	if q > math.MaxInt || kv > math.MaxInt || three > math.MaxInt {
		return layout{}, errOverflow("a projection's size")
	}
	var l layout
	switch c.Arch {
	case ArchGPT2:
		l.prefix = "h."
		l.before = []Tensor{{"wte.weight", []int{v, d}}, {"wpe.weight", []int{c.MaxPositions, d}}}
		l.layer = []Tensor{
			{"ln_1.weight", []int{d}}, {"ln_1.bias", []int{d}},
			{"attn.c_attn.weight", []int{d, int(three)}}, {"attn.c_attn.bias", []int{int(three)}},
			{"attn.c_proj.weight", []int{d, d}}, {"attn.c_proj.bias", []int{d}},
			{"ln_2.weight", []int{d}}, {"ln_2.bias", []int{d}},
			{"mlp.c_fc.weight", []int{d, inter}}, {"mlp.c_fc.bias", []int{inter}},
			{"mlp.c_proj.weight", []int{inter, d}}, {"mlp.c_proj.bias", []int{d}},
		}
		l.after = []Tensor{{"ln_f.weight", []int{d}}, {"ln_f.bias", []int{d}}}
	default:
		l.prefix = "model.layers."
		l.before = []Tensor{{"model.embed_tokens.weight", []int{v, d}}}
		for _, ts := range [][]Tensor{
			linear("self_attn.q_proj", int(q), d, c.QKVBias),
			linear("self_attn.k_proj", int(kv), d, c.QKVBias),
			linear("self_attn.v_proj", int(kv), d, c.QKVBias),
			linear("self_attn.o_proj", d, int(q), c.OutBias),
			linear("mlp.gate_proj", inter, d, c.MLPBias),
			linear("mlp.up_proj", inter, d, c.MLPBias),
			linear("mlp.down_proj", d, inter, c.MLPBias),
			{{"input_layernorm.weight", []int{d}}, {"post_attention_layernorm.weight", []int{d}}},
		} {
			l.layer = append(l.layer, ts...)
		}
		l.after = []Tensor{{"model.norm.weight", []int{d}}}
	}
	if !c.TieEmbeddings {
		l.after = append(l.after, Tensor{"lm_head.weight", []int{v, d}})
	}
	for _, t := range l.layer {
		n, err := numel(t)
		if err != nil {
			return layout{}, err
		}
		if l.layerParams, err = add(l.layerParams, n, "one layer's parameter count"); err != nil {
			return layout{}, err
		}
	}
	return l, nil
}

// paramCount returns the number of parameters, or an error when the count
// or a tensor's size overflows int64.
func (c Config) paramCount() (int64, error) {
	l, err := c.layout()
	if err != nil {
		return 0, err
	}
	total, err := mul(l.layerParams, int64(c.Layers), "the layers' parameter count")
	if err != nil {
		return 0, err
	}
	for _, t := range append(l.before, l.after...) {
		n, err := numel(t)
		if err != nil {
			return 0, err
		}
		if total, err = add(total, n, "the parameter count"); err != nil {
			return 0, err
		}
	}
	return total, nil
}

// Tensors returns every parameter of c with its Hugging Face name and
// shape, in the order of transformers' state_dict (for the Llama family,
// each layer's attention projections, then its MLP, then its two norms);
// lm_head.weight is left out when the embeddings are tied. GPT-2's weights
// are Conv1D's, [in, out]. It returns nil for a Config that Validate
// refuses for its sizes.
func (c Config) Tensors() []Tensor {
	if c.Layers < 0 || c.Layers > MaxLayers {
		return nil
	}
	l, err := c.layout()
	if err != nil {
		return nil
	}
	ts := make([]Tensor, 0, len(l.before)+c.Layers*len(l.layer)+len(l.after))
	ts = append(ts, l.before...)
	for i := range c.Layers {
		p := l.prefix + strconv.Itoa(i) + "."
		for _, t := range l.layer {
			ts = append(ts, Tensor{p + t.Name, t.Shape})
		}
	}
	return append(ts, l.after...)
}

// ParamCount returns the number of parameters of c, the sum over Tensors()
// (tied embeddings counted once); 0 for sizes whose count overflows int64,
// which Validate refuses.
func (c Config) ParamCount() int64 {
	n, err := c.paramCount()
	if err != nil {
		return 0
	}
	return n
}

// RopeInvFreq returns the HeadDim/2 inverse frequencies of the rotary
// embedding exactly as transformers computes them in float32 on the CPU
// (_compute_default_rope_parameters: 1 / θ^(float32(2i)/dim), and with
// llama3 scaling _compute_llama3_parameters: frequencies whose wavelength
// exceeds original_max_position_embeddings/low_freq_factor divided by
// factor, those under original_max_position_embeddings/high_freq_factor
// kept, and the band between interpolated smoothly). It returns nil for
// GPT-2, which has learned positions.
func (c Config) RopeInvFreq() []float32 {
	if c.Arch != ArchLlama || c.HeadDim <= 0 {
		return nil
	}
	dim := c.HeadDim
	base := float64(float32(c.RopeTheta))
	inv := make([]float32, dim/2)
	for i := range inv {
		// torch.arange(0, dim, 2).float() / dim, then base ** that: the
		// power in float32, which math.Pow then one rounding reproduces.
		e := float32(2*i) / float32(dim)
		p := float32(math.Pow(base, float64(e)))
		inv[i] = float32(1) / p
	}
	if s := c.RopeScaling; s != nil && s.Type == "llama3" {
		llama3(inv, s)
	}
	return inv
}

// llama3 applies llama3 scaling to inv in place, in float32, operation by
// operation as transformers' tensors compute it (a Python float meeting a
// float32 tensor is rounded to float32; scalar / tensor is the tensor's
// reciprocal times the scalar). Each product is rounded explicitly so that
// no compiler fuses it into a multiply-add.
func llama3(inv []float32, s *RopeScaling) {
	factor := float32(s.Factor)
	low := float32(s.LowFreqFactor)
	old := float32(s.OriginalMaxPositions)
	lowWavelen := float32(float64(s.OriginalMaxPositions) / s.LowFreqFactor)
	highWavelen := float32(float64(s.OriginalMaxPositions) / s.HighFreqFactor)
	twoPi := float32(2 * math.Pi)
	band := float32(s.HighFreqFactor - s.LowFreqFactor)
	for i, f := range inv {
		wavelen := float32(float32(1)/f) * twoPi
		g := f
		if wavelen > lowWavelen {
			g = f / factor
		}
		if !(wavelen < highWavelen) && !(wavelen > lowWavelen) {
			smooth := float32(float32(float32(1)/wavelen)*old) - low
			smooth /= band
			a := float32(float32(float32(1)-smooth)*g) / factor
			b := float32(smooth * g)
			g = a + b
		}
		inv[i] = g
	}
}
