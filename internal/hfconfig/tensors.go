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
	prefix      string // the layers' prefix (Modules.Layers)
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

// Projection is one linear module of a decoder layer as a Config sizes
// it: the module gpuz builds, its widths and bias, and transformers'
// modules among its output columns.
type Projection struct {
	Name    string // the module gpuz builds, e.g. "self_attn.qkv_proj"
	In, Out int    // its input width and its (packed) output width
	Bias    bool
	// Parts are transformers' modules among the output columns, in
	// order; one part, the module itself, when transformers has it so.
	Parts []Part
}

// Part is one of transformers' modules among a Projection's columns
// [Off, Off+Width).
type Part struct {
	Name       string
	Off, Width int
}

// WeightShape is the shape transformers stores a linear weight in, for a
// module of in inputs and out outputs.
func (a *Arch) WeightShape(in, out int) []int {
	if a.Weights == Conv1DWeights {
		return []int{in, out}
	}
	return []int{out, in}
}

// LinearModules returns transformers' linear modules of a decoder layer
// of a, in the order the layer computes them (the parts of a packed
// module in its order): the modules LoRA may adapt.
func (a *Arch) LinearModules() []string {
	var names []string
	for _, m := range []Module{a.Modules.QKV, {Name: a.Modules.Out}, a.Modules.Up, {Name: a.Modules.Down}} {
		if m.Parts == nil {
			names = append(names, m.Name)
		}
		names = append(names, m.Parts...)
	}
	return names
}

// GroupedKV reports whether a's config gives key-value heads of their own
// (grouped-query attention); GPT-2's are its heads.
func (a *Arch) GroupedKV() bool { return a.keys.kvHeads != "" }

// Projection returns c's module of role r (QKV, Out, Up or Down) for a
// Config that Validate accepts.
func (c Config) Projection(r Role) Projection {
	p, _ := c.projection(r)
	return p
}

// projection returns c's module of role r, or an error when a width
// overflows. It assumes the sizes are positive.
func (c Config) projection(r Role) (Projection, error) {
	a, m := c.Arch, c.Arch.Modules
	q, err := mul(int64(c.Heads), int64(c.HeadDim), a.keys.heads+"·head width")
	if err != nil {
		return Projection{}, err
	}
	kv, err := mul(int64(c.KVHeads), int64(c.HeadDim), "key-value heads·head width")
	if err != nil {
		return Projection{}, err
	}
	d, inter := int64(c.Hidden), int64(c.Intermediate)
	var mod Module
	var in int64
	var widths []int64 // the output's segments, one per part when parted
	var bias bool
	switch r {
	case QKV:
		mod, in, widths, bias = m.QKV, d, []int64{q, kv, kv}, c.QKVBias
	case Out:
		mod, in, widths, bias = Module{Name: m.Out}, q, []int64{d}, c.OutBias
	case Up:
		mod, in, widths, bias = m.Up, d, []int64{inter}, c.MLPBias
		if a.MLP == GatedSiLU {
			widths = []int64{inter, inter}
		}
	case Down:
		mod, in, widths, bias = Module{Name: m.Down}, inter, []int64{d}, c.MLPBias
	default:
		return Projection{}, fmt.Errorf("role %d is not a linear module", r)
	}
	p := Projection{Name: mod.Name, Bias: bias || a.Biases == AllBiases}
	var out int64
	for i, w := range widths {
		if mod.Parts != nil {
			p.Parts = append(p.Parts, Part{Name: mod.Parts[i], Off: int(out), Width: int(w)})
		}
		if out, err = add(out, w, mod.Name+"'s width"); err != nil {
			return Projection{}, err
		}
	}
	if in > math.MaxInt || out > math.MaxInt {
		return Projection{}, errOverflow(mod.Name + "'s size")
	}
	p.In, p.Out = int(in), int(out)
	if mod.Parts == nil {
		p.Parts = []Part{{Name: mod.Name, Width: p.Out}}
	}
	return p, nil
}

// norm returns the tensors of a norm named name of width d: its weight,
// and LayerNorm's bias.
func (a *Arch) norm(name string, d int) []Tensor {
	ts := []Tensor{{name + ".weight", []int{d}}}
	if a.Norm == LayerNorm {
		ts = append(ts, Tensor{name + ".bias", []int{d}})
	}
	return ts
}

// tensors returns the tensors of transformers' modules of p.
func (a *Arch) tensors(p Projection) []Tensor {
	var ts []Tensor
	for _, part := range p.Parts {
		ts = append(ts, Tensor{part.Name + ".weight", a.WeightShape(p.In, part.Width)})
		if p.Bias {
			ts = append(ts, Tensor{part.Name + ".bias", []int{part.Width}})
		}
	}
	return ts
}

// layout returns c's parameters in transformers' state_dict order, or an
// error when a size or the total overflows int64. It assumes the sizes are
// positive (Validate checks them before calling it).
func (c Config) layout() (layout, error) {
	if c.Arch == nil {
		return layout{}, fmt.Errorf("the config has no architecture")
	}
	a, m := c.Arch, c.Arch.Modules
	d, v := c.Hidden, c.Vocab
	l := layout{prefix: m.Layers}
	l.before = []Tensor{{m.Embed + ".weight", []int{v, d}}}
	if a.Positions == Learned {
		l.before = append(l.before, Tensor{m.Positions + ".weight", []int{c.MaxPositions, d}})
	}
	for _, r := range a.stateOrder {
		switch r {
		case AttnNorm:
			l.layer = append(l.layer, a.norm(m.AttnNorm, d)...)
		case MLPNorm:
			l.layer = append(l.layer, a.norm(m.MLPNorm, d)...)
		default:
			p, err := c.projection(r)
			if err != nil {
				return layout{}, err
			}
			l.layer = append(l.layer, a.tensors(p)...)
		}
	}
	l.after = a.norm(m.FinalNorm, d)
	if !c.TieEmbeddings {
		l.after = append(l.after, Tensor{m.Head + ".weight", []int{v, d}})
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
// the head's weight is left out when the embeddings are tied. GPT-2's
// weights are Conv1D's, [in, out]. The names and the order are the
// Arch's (family.go). It returns nil for a Config that Validate refuses
// for its sizes.
func (c Config) Tensors() []Tensor {
	if c.Arch == nil || c.Layers < 0 || c.Layers > MaxLayers {
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
// kept, and the band between interpolated smoothly; with a GGUF file's
// RopeFreqs each divided by its divisor). It returns nil for
// learned positions (GPT-2).
func (c Config) RopeInvFreq() []float32 {
	if c.Arch == nil || c.Arch.Positions != Rotary || c.HeadDim <= 0 {
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
	switch s := c.RopeScaling; {
	case s == nil:
	case s.Type == "llama3":
		llama3(inv, s)
	case s.Type == RopeFreqs && len(s.Divisors) == len(inv):
		for i, d := range s.Divisors {
			inv[i] /= d // as llama.cpp's rope divides θ by its freq_factors
		}
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
