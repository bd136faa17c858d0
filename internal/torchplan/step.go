package torchplan

import (
	"fmt"
	"slices"

	"gpuz/internal/hfconfig"
)

// Step is one training step of a decoder as a PyTorch user runs it with
// transformers' modules, or with Eval one evaluation pass: the model, its
// sizes and the levers they set in Python.
type Step struct {
	Model         hfconfig.Config
	Layers        int // decoder layers (0: the model's)
	Batch, SeqLen int
	// Eval is an evaluation pass (Trainer.evaluate: the forward pass and
	// the loss under torch.no_grad()) in place of a training step;
	// Checkpoint does not apply to it.
	Eval bool
	// Autocast is torch.autocast(dtype=torch.bfloat16) over float32
	// weights: the HF Trainer's TrainingArguments(bf16=True).
	Autocast bool
	// Checkpoint runs each decoder layer under torch.utils.checkpoint:
	// model.gradient_checkpointing_enable().
	Checkpoint bool
	// LoRARank, when positive, is PEFT's LoraConfig(r=LoRARank) on
	// LoRATargets (nil: the family's default), every other weight frozen.
	LoRARank    int
	LoRATargets []string
	// SDPA is transformers' attn_implementation="sdpa" (PyTorch 2.x):
	// the fused kernel keeps q, k, v, the output and the log-sum-exps in
	// place of the probabilities. False is "eager".
	SDPA bool
}

// targeted says whether LoRA adapts the module whose last name is name.
func (s Step) targeted(name string) bool {
	if s.LoRARank <= 0 {
		return false
	}
	targets := s.LoRATargets
	if targets == nil {
		targets = s.Model.Arch.LoRADefault
	}
	return slices.Contains(targets, name)
}

// SavedTensors traces the forward pass of s under fw's rules and returns
// the tensors autograd keeps for the backward pass, in the order the ops
// save them; with Checkpoint, each decoder layer's input, which the
// checkpoint holds, in place of the layer's own.
func SavedTensors(s Step, fw Framework) ([]Saved, error) {
	t, err := trace(s, fw)
	if err != nil {
		return nil, err
	}
	return t.saved, nil
}

// trace checks s and runs its forward pass through a tracer under fw's
// rules.
func trace(s Step, fw Framework) (*tracer, error) {
	v, err := fw.versions()
	if err != nil {
		return nil, err
	}
	switch {
	case s.Model.Arch == nil:
		return nil, fmt.Errorf("no model")
	case s.SDPA && v&v2 == 0:
		return nil, fmt.Errorf("%s has no scaled_dot_product_attention: its attention is eager", fw)
	case s.Batch <= 0 || s.SeqLen <= 0:
		return nil, fmt.Errorf("batch %d and sequence length %d must be positive", s.Batch, s.SeqLen)
	}
	t := newTracer(v, s.Autocast)
	m := newModel(t, s)
	m.forward()
	if t.err != nil {
		return nil, fmt.Errorf("%s: %w", fw, t.err)
	}
	return t, nil
}

// SavedBytes is the sum of the tensors' bytes.
func SavedBytes(saved []Saved) int64 {
	var n int64
	for _, s := range saved {
		n += s.Bytes
	}
	return n
}

// model is the forward pass of s, written as transformers' modeling
// files compute it (modeling_llama.py for the Llama family, whose
// Qwen2 and Mistral differ only in their biases; modeling_gpt2.py).
type model struct {
	t *tracer
	s Step
	c hfconfig.Config
	// sizes: tokens N = batch·seq, hidden, head dim, heads, key/value
	// heads, the MLP's width, the vocabulary.
	n, d, hd, h, kv, inter, vocab int64
	seq                           int64
	cos, sin, mask                *tensor
}

func newModel(t *tracer, s Step) *model {
	c := s.Model
	if s.Layers <= 0 {
		s.Layers = c.Layers
	}
	seq := int64(s.SeqLen)
	return &model{t: t, s: s, c: c, n: int64(s.Batch) * seq, seq: seq, d: int64(c.Hidden), hd: int64(c.HeadDim),
		h: int64(c.Heads), kv: int64(c.KVHeads), inter: int64(c.Intermediate), vocab: int64(c.Vocab)}
}

// trained is whether a base weight is trained: all of them without LoRA.
func (m *model) trained() bool { return m.s.LoRARank <= 0 }

// forward is the step: embeddings, the decoder layers, the final norm,
// the head and the loss.
func (m *model) forward() {
	t := m.t
	ids := t.tensor(m.n, i64, false)
	embed := t.param(int64(m.c.Vocab)*m.d, m.trained())
	x := t.apply("embedding", []*tensor{t.tensor(m.n*m.d, f32, false)}, embed, ids)
	if m.c.Arch.Positions == hfconfig.Learned {
		// wpe's rows [0, seq): a view of a parameter, added.
		wpe := t.param(int64(m.c.MaxPositions)*m.d, m.trained())
		x = t.elementwise("add", x, &tensor{id: wpe.id, numel: m.seq * m.d, dt: f32, grad: wpe.grad, param: true})
	} else {
		// The rotary tables, [seq, head_dim] each, computed once per
		// forward pass (LlamaRotaryEmbedding) and shared by the layers.
		m.cos, m.sin = t.tensor(m.seq*m.hd, f32, false), t.tensor(m.seq*m.hd, f32, false)
	}
	m.mask = t.tensor(m.seq*m.seq, f32, false)
	for i := range m.s.Layers {
		t.block = fmt.Sprintf("layer%d", i+1)
		if m.s.Checkpoint {
			// torch.utils.checkpoint keeps the layer's input for the
			// re-run; what the layer saves is re-made in the backward pass.
			t.keep(x, "checkpoint")
			t.quiet = true
		}
		x = m.layer(x)
		t.quiet = false
	}
	t.block = "head"
	h := m.norm(x)
	var head *tensor // tied: the embedding's weight
	if m.c.TieEmbeddings {
		head = embed
	}
	logits := m.linear(h, m.vocab, "lm_head", false, head)
	// The loss upcasts the logits (logits.float()), then cross_entropy:
	// log_softmax and nll_loss.
	if logits.dt != f32 {
		logits = t.copyOf(logits, logits.numel, f32)
	}
	lsm := t.apply("log_softmax", []*tensor{t.tensor(logits.numel, f32, false)}, logits)
	targets := t.tensor(m.n, i64, false)
	t.apply("nll_loss", []*tensor{t.tensor(1, f32, false), t.tensor(1, f32, false)}, lsm, targets)
}

// layer is one decoder layer: x + attention(norm(x)), then + mlp(norm(x)).
func (m *model) layer(x *tensor) *tensor {
	t := m.t
	a := m.attention(m.norm(x))
	x = t.elementwise("add", x, a)
	return t.elementwise("add", x, m.mlp(m.norm(x)))
}

// norm is the family's norm of x: LlamaRMSNorm as transformers writes it
// (pow, mean, rsqrt of the variance plus eps, two products), or
// nn.LayerNorm (native_layer_norm).
func (m *model) norm(x *tensor) *tensor {
	t := m.t
	w := t.param(m.d, m.trained())
	if m.c.Arch.Norm == hfconfig.LayerNorm {
		b := t.param(m.d, m.trained())
		outs := []*tensor{t.tensor(x.numel, x.dt, false), t.tensor(m.n, f32, false), t.tensor(m.n, f32, false)}
		return t.apply("layer_norm", outs, x, w, b)
	}
	sq := t.elementwise("pow", x, nil)
	mean := t.apply("mean", []*tensor{t.tensor(m.n, sq.dt, false)}, sq)
	eps := t.elementwise("add", mean, t.number())
	r := t.apply("rsqrt", []*tensor{t.tensor(m.n, eps.dt, false)}, eps)
	return t.elementwise("mul", w, t.elementwise("mul", x, r))
}

// linear is a linear layer of out features on x (nn.Linear, or GPT-2's
// Conv1D, an addmm), with its bias if the family has one, and PEFT's
// adapter when name is a target: y + scaling·B(A(x)).
func (m *model) linear(x *tensor, outFeatures int64, name string, bias bool, tied ...*tensor) *tensor {
	t := m.t
	in := x.numel / m.n
	var w *tensor
	if len(tied) > 0 && tied[0] != nil {
		w = tied[0]
	} else {
		w = t.param(in*outFeatures, m.trained())
	}
	var b *tensor
	if bias {
		b = t.param(outFeatures, m.trained())
	}
	n := m.n * outFeatures
	var y *tensor
	if m.c.Arch.Weights == hfconfig.Conv1DWeights {
		y = t.product("addmm", n, b, x, w)
	} else {
		y = t.product("linear", n, x, w, b)
	}
	if !m.s.targeted(name) {
		return y
	}
	r := int64(m.s.LoRARank)
	down := t.product("linear", m.n*r, x, t.param(r*in, true))
	up := t.product("linear", n, down, t.param(outFeatures*r, true))
	return t.elementwise("add", y, t.elementwise("mul", up, t.number()))
}

// attention is the self-attention of h, through o_proj (c_proj).
func (m *model) attention(h *tensor) *tensor {
	t := m.t
	a := m.c.Arch
	var q, k, v *tensor
	qdim, kvdim := m.h*m.hd, m.kv*m.hd
	if a.Modules.QKV.Parts == nil {
		// GPT-2's c_attn: one product, split into q, k and v (views).
		qkv := m.linear(h, qdim+2*kvdim, lastName(a.Modules.QKV.Name), true)
		q, k, v = m.part(qkv, qdim), m.part(qkv, kvdim), m.part(qkv, kvdim)
	} else {
		parts := a.Modules.QKV.Parts
		q = m.linear(h, qdim, lastName(parts[0]), m.c.QKVBias)
		k = m.linear(h, kvdim, lastName(parts[1]), m.c.QKVBias)
		v = m.linear(h, kvdim, lastName(parts[2]), m.c.QKVBias)
	}
	if a.Positions == hfconfig.Rotary {
		q, k = m.rope(q), m.rope(k)
	}
	// vs tells whether v is contiguous in [B, H, S, hd]: a transposed
	// view of the projection is not, repeat_kv's copy is.
	vs := false
	if m.kv != m.h {
		// repeat_kv: expand and reshape, a copy of each at every head.
		k, v = t.copyOf(k, k.numel*m.h/m.kv, k.dt), t.copyOf(v, v.numel*m.h/m.kv, v.dt)
		vs = true
	}
	var o *tensor
	if m.s.SDPA {
		// F.scaled_dot_product_attention on [B, H, S, hd]: its fused
		// kernel keeps its inputs, output and log-sum-exps.
		outs := []*tensor{t.tensor(m.n*qdim, v.dt, false), t.tensor(int64(m.s.Batch)*m.h*m.seq, f32, false)}
		o = t.apply("sdpa_flash", outs, t.lower(q), t.lower(k), t.lower(v))
	} else {
		// eager: matmul(q, kᵀ) folds its operands to [B·H, S, hd] and
		// [B·H, hd, S], copying one that is not contiguous (kᵀ always, q
		// always: a transposed view, or the rotation's result, which
		// keeps its operand's strides); autocast's copies keep their
		// operand's strides too.
		scores := t.product("bmm", int64(m.s.Batch)*m.h*m.seq*m.seq, m.fold(q, false), m.fold(k, false))
		scores = t.elementwise("div", scores, t.number())
		scores = t.elementwise("add", scores, m.mask)
		probs := t.apply("softmax", []*tensor{t.tensor(scores.numel, f32, false)}, scores)
		o = t.product("bmm", m.n*qdim, m.fold(probs, true), m.fold(v, vs))
	}
	// transpose(1, 2) and reshape to [B, S, H·hd]: a copy.
	o = t.copyOf(o, o.numel, o.dt)
	return m.linear(o, m.d, lastName(a.Modules.Out), m.c.OutBias || a.Biases == hfconfig.AllBiases)
}

// part is one of q, k, v split off GPT-2's c_attn output: a view, not
// contiguous once its heads are transposed.
func (m *model) part(qkv *tensor, width int64) *tensor {
	return &tensor{id: qkv.id, numel: m.n * width, dt: qkv.dt, grad: qkv.grad}
}

// fold is x as matmul hands it to bmm: x itself when contiguous, else a
// copy; under autocast x's 16-bit copy first.
func (m *model) fold(x *tensor, contiguous bool) *tensor {
	x = m.t.lower(x)
	if contiguous {
		return x
	}
	return m.t.copyOf(x, x.numel, x.dt)
}

// rope is apply_rotary_pos_emb on x: x·cos + rotate_half(x)·sin, the
// tables float32 (so a 16-bit x is promoted).
func (m *model) rope(x *tensor) *tensor {
	t := m.t
	c := t.elementwise("mul", x, m.cos)
	r := t.copyOf(x, x.numel, x.dt) // rotate_half: slices, neg, cat
	return t.elementwise("add", c, t.elementwise("mul", r, m.sin))
}

// mlp is the feed-forward block of h.
func (m *model) mlp(h *tensor) *tensor {
	t := m.t
	a := m.c.Arch
	bias := m.c.MLPBias || a.Biases == hfconfig.AllBiases
	var act *tensor
	if a.MLP == hfconfig.GatedSiLU {
		parts := a.Modules.Up.Parts
		g := m.linear(h, m.inter, lastName(parts[0]), bias)
		g = t.apply("silu", []*tensor{t.tensor(g.numel, g.dt, false)}, g)
		u := m.linear(h, m.inter, lastName(parts[1]), bias)
		act = t.elementwise("mul", g, u)
	} else {
		// NewGELUActivation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))),
		// each operation eager.
		f := m.linear(h, m.inter, lastName(a.Modules.Up.Name), bias)
		half := t.elementwise("mul", f, t.number())
		cube := t.elementwise("mul", t.elementwise("pow", f, nil), t.number())
		inner := t.elementwise("mul", t.elementwise("add", f, cube), t.number())
		th := t.apply("tanh", []*tensor{t.tensor(inner.numel, inner.dt, false)}, inner)
		act = t.elementwise("mul", half, t.elementwise("add", th, t.number()))
	}
	return m.linear(act, m.d, lastName(a.Modules.Down), bias)
}

// lastName is a module name's last component ("self_attn.q_proj":
// "q_proj"), as PEFT's target_modules match it.
func lastName(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '.' {
			return name[i+1:]
		}
	}
	return name
}
