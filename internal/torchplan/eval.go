package torchplan

import (
	"cmp"
	"fmt"
	"slices"

	"gpuz/internal/hfconfig"
)

// This file plans an evaluation pass: the forward pass and the loss under
// torch.no_grad(), which saves nothing, so that what PyTorch holds at its
// peak is the parameters and the largest set of tensors alive at once.
// The walk follows transformers' modeling functions statement by
// statement: each op makes its results (evalOps says what), and a tensor
// goes when the last Python name or expression holding it does, as
// CPython frees it: a temporary once the op reading it returns, a local
// on reassignment or at its function's return.

// evalOp is one row of the evaluation pass's table: an op and what it
// allocates under no_grad, with where that is written.
type evalOp struct {
	op, source string
}

// evalOps is the table. Every allocation the walk makes names its row.
var evalOps = []evalOp{
	{"constant", "the forward pass's tables, held to its return: the causal mask [S, S] float32 (torch.full, then triu: a second copy, the first dropped), and for rotary positions inv_freq [hd/2], the positions as float32 [S], freqs = outer [S, hd/2], emb = cat((freqs, freqs)) and its cos and sin [S, hd] (LlamaRotaryEmbedding.forward; scripts/torch_llm.py computes them as transformers does, for one sequence)"},
	{"embedding", "aten embedding: index_select of the rows, [N, d] float32 (autocast leaves it in float32); GPT-2 adds wpe's rows, a second [N, d], the first dropped"},
	{"autocast copy", "autocast_mode.cpp cached_cast: a float32 operand of a lower-precision op (linear, addmm, matmul) is copied to bfloat16 keeping its strides; a leaf that requires a gradient (a trained weight, even under no_grad) is cached until the autocast region ends, anything else is made for the call and dropped when it returns"},
	{"linear", "ATen Linear.cpp linear: addmm on the folded input when there is a bias and the input is contiguous, else matmul then add_ in place: one result [N, out] in the operands' type"},
	{"addmm", "derivatives.yaml's addmm, run forward: one result [N, out] (GPT-2's Conv1D)"},
	{"fold", "ATen LinearAlgebra.cpp matmul of 4-d operands: expand and reshape to [B·H, …]; a reshape that cannot be a view (q rotated or split off c_attn, kᵀ of a tensor whose heads are not its outer dimension, v of c_attn) copies, the copy dropped when matmul returns"},
	{"bmm", "matmul's bmm: one result [B·H, S, S] or [B·H, S, hd] in the operands' type"},
	{"elementwise", "TensorIterator ops (mul, div, add, pow, neg, rsqrt, silu, tanh): one result of the broadcast size in the promoted type (a Python number does not promote; bfloat16 with float32 is float32); a view's result keeps its operand's strides"},
	{"mean", "mean(-1, keepdim=True): [N] in its input's type"},
	{"layer_norm", "native_layer_norm: the output [N, d] and the mean and rstd [N] float32; layer_norm keeps the output and drops the others when it returns"},
	{"copy", "a copy: rotate_half's cat [N·heads·hd] (its neg of the second half, [N·heads·hd/2], dropped after), repeat_kv's expand and reshape, the attention output's transpose and reshape, logits.float() under autocast"},
	{"sdpa", "transformers' sdpa_attention_forward (PyTorch 2.x): F.scaled_dot_product_attention of q, k and v (repeat_kv's copies, autocast's of q and k), causal, no mask: the output [B, H, S, hd] and, for the call, the flash kernel's log-sum-exps [B, H, S] float32 (aten _scaled_dot_product_flash_attention; not measured here: CI's PyTorch 1.13 has no SDPA)"},
	{"softmax", "_softmax(dtype=float32): the probabilities [B, H, S, S] float32, which eager_attention_forward returns as attn_weights and the decoder layer holds until it returns"},
	{"log_softmax", "cross_entropy: _log_softmax of the float32 logits, [N, vocab] float32"},
	{"nll_loss", "nll_loss_forward: the loss and the total weight, 0-d float32 each"},
}

// hasEvalOp says whether the table has op.
func hasEvalOp(op string) bool {
	return slices.ContainsFunc(evalOps, func(r evalOp) bool { return r.op == op })
}

// buf is one storage of the evaluation pass.
type buf struct {
	id    int
	op    string
	numel int64
	dt    dtype
	param bool // a parameter: held for the whole pass, counted apart
	grad  bool // requires a gradient (a trained parameter)
	// weight marks autocast's cached 16-bit copy of a trained weight.
	weight bool
}

func (b *buf) bytes() int64 { return b.numel * b.dt.size() }

// walk is an evaluation pass's tensors: those alive now, and the largest
// set alive at once.
type walk struct {
	autocast bool
	nextID   int
	live     map[int]*buf
	cur      int64
	peak     int64
	atPeak   []*buf
	casts    map[int]*buf
	params   []*buf
	err      error
}

func newWalk(autocast bool) *walk {
	return &walk{autocast: autocast, live: map[int]*buf{}, casts: map[int]*buf{}}
}

// make allocates the result of op, n elements of dt.
func (w *walk) make(op string, n int64, dt dtype) *buf {
	if !hasEvalOp(op) && w.err == nil {
		w.err = fmt.Errorf("no evaluation rule for %s", op)
	}
	w.nextID++
	b := &buf{id: w.nextID, op: op, numel: n, dt: dt}
	w.live[b.id] = b
	w.cur += b.bytes()
	if w.cur > w.peak {
		w.peak = w.cur
		w.atPeak = w.atPeak[:0]
		for _, x := range w.live {
			w.atPeak = append(w.atPeak, x)
		}
	}
	return b
}

// free drops the storages of bs (nil, parameters and cached copies
// ignored; a view drops its base).
func (w *walk) free(bs ...*buf) {
	for _, b := range bs {
		if b == nil || b.param || b.weight || w.live[b.id] == nil {
			continue
		}
		w.cur -= w.live[b.id].bytes()
		delete(w.live, b.id)
	}
}

// view is n elements of b's storage (q, k or v split off c_attn's
// result): a copy or cast of it has n elements; freeing it frees b.
func view(b *buf, n int64) *buf {
	v := *b
	v.numel = n
	return &v
}

// param makes a float32 parameter of n elements.
func (w *walk) param(n int64, trained bool) *buf {
	w.nextID++
	p := &buf{id: w.nextID, numel: n, dt: f32, param: true, grad: trained}
	w.params = append(w.params, p)
	return p
}

// lower is x as a lower-precision op under autocast reads it, and
// whether that is a copy for this call alone.
func (w *walk) lower(x *buf) (*buf, bool) {
	if x == nil || !w.autocast || x.dt != f32 {
		return x, false
	}
	if x.param && x.grad {
		c, ok := w.casts[x.id]
		if !ok {
			c = w.make("autocast copy", x.numel, bf16)
			c.weight = true
			w.casts[x.id] = c
		}
		return c, false
	}
	return w.make("autocast copy", x.numel, bf16), true
}

// product runs a lower-precision op (linear, addmm) of n results on ins,
// cast in order; the call's copies go when it returns.
func (w *walk) product(op string, n int64, ins ...*buf) *buf {
	var temps []*buf
	for _, x := range ins {
		if c, temp := w.lower(x); temp {
			temps = append(temps, c)
		}
	}
	dt := f32
	if w.autocast {
		dt = bf16
	}
	y := w.make(op, n, dt)
	w.free(temps...)
	return y
}

// matmul is a 4-d matmul of n results: each operand cast, then folded
// (copied unless viewable[i]), then bmm.
func (w *walk) matmul(n int64, a, b *buf, viewable [2]bool) *buf {
	var temps []*buf
	ops := []*buf{a, b}
	for i, x := range ops {
		c, temp := w.lower(x)
		if temp {
			temps = append(temps, c)
		}
		ops[i] = c
	}
	for i, x := range ops {
		if !viewable[i] {
			temps = append(temps, w.make("fold", x.numel, x.dt))
		}
	}
	y := w.make("bmm", n, ops[0].dt)
	w.free(temps...)
	return y
}

// ew is an element-wise op on a and b (nil: a Python number) of n
// results.
func (w *walk) ew(a, b *buf, n int64) *buf {
	dt := a.dt
	if b != nil && b.dt != a.dt && (a.dt == f32 || b.dt == f32) {
		dt = f32
	}
	return w.make("elementwise", n, dt)
}

// evalModel is the evaluation pass of a step's model.
type evalModel struct {
	w                             *walk
	s                             Step
	c                             hfconfig.Config
	n, d, hd, h, kv, inter, vocab int64
	seq, batch                    int64
	cos, sin, mask                *buf
}

// trained is whether a base weight requires a gradient: all of them
// without LoRA.
func (m *evalModel) trained() bool { return m.s.LoRARank <= 0 }

// forward walks the pass: transformers' forward under no_grad, then
// cross_entropy of the float32 logits.
func (m *evalModel) forward() {
	w := m.w
	var consts []*buf
	if !m.s.SDPA {
		// sdpa is causal without a mask (transformers drops it).
		full := w.make("constant", m.seq*m.seq, f32)
		m.mask = w.make("constant", m.seq*m.seq, f32)
		w.free(full)
		consts = append(consts, m.mask)
	}
	rotary := m.c.Arch.Positions == hfconfig.Rotary
	if rotary {
		half := m.hd / 2
		inv := w.make("constant", half, f32)
		pos := w.make("constant", m.seq, f32)
		freqs := w.make("constant", m.seq*half, f32)
		emb := w.make("constant", m.seq*m.hd, f32)
		m.cos = w.make("constant", m.seq*m.hd, f32)
		m.sin = w.make("constant", m.seq*m.hd, f32)
		consts = append(consts, inv, pos, freqs, emb, m.cos, m.sin)
	}
	embed := w.param(m.vocab*m.d, m.trained())
	x := w.make("embedding", m.n*m.d, f32)
	if !rotary {
		w.param(int64(m.c.MaxPositions)*m.d, m.trained())
		y := w.make("embedding", m.n*m.d, f32)
		w.free(x)
		x = y
	}
	for range m.s.Layers {
		y := m.layer(x)
		w.free(x)
		x = y
	}
	h := m.norm(x)
	w.free(x)
	head := embed
	if !m.c.TieEmbeddings {
		head = w.param(m.vocab*m.d, m.trained())
	}
	logits := w.product("linear", m.n*m.vocab, h, head)
	// forward returns the logits: its norm's result and tables go.
	w.free(h)
	w.free(consts...)
	f := logits
	if logits.dt != f32 {
		f = w.make("copy", logits.numel, f32)
	}
	lsm := w.make("log_softmax", logits.numel, f32)
	loss := w.make("nll_loss", 1, f32)
	total := w.make("nll_loss", 1, f32)
	w.free(loss, total, lsm, f, logits)
}

// norm is the family's norm of x (LlamaRMSNorm, or nn.LayerNorm).
func (m *evalModel) norm(x *buf) *buf {
	w := m.w
	w.param(m.d, m.trained())
	if m.c.Arch.Norm == hfconfig.LayerNorm {
		w.param(m.d, m.trained())
		y := w.make("layer_norm", m.n*m.d, x.dt)
		mean, rstd := w.make("layer_norm", m.n, f32), w.make("layer_norm", m.n, f32)
		w.free(mean, rstd)
		return y
	}
	sq := w.ew(x, nil, x.numel)
	variance := w.make("mean", m.n, sq.dt)
	w.free(sq)
	eps := w.ew(variance, nil, m.n)
	r := w.ew(eps, nil, m.n)
	w.free(eps)
	n := w.ew(x, r, x.numel)
	w.free(r)
	y := w.ew(n, nil, x.numel) // weight · n: a float32 weight, a float32 n
	w.free(variance, n)
	return y
}

// linear is a linear layer of out features on x with its bias, if any,
// and PEFT's adapter when name is a target: y + scaling·B(A(x)).
func (m *evalModel) linear(x *buf, out int64, name string, bias bool) *buf {
	w := m.w
	in := x.numel / m.n
	wt := w.param(in*out, m.trained())
	var b *buf
	if bias {
		b = w.param(out, m.trained())
	}
	op := "linear"
	if m.c.Arch.Weights == hfconfig.Conv1DWeights {
		op = "addmm"
	}
	var y *buf
	if op == "addmm" {
		y = w.product(op, m.n*out, b, x, wt)
	} else {
		y = w.product(op, m.n*out, x, wt, b)
	}
	if !m.s.targeted(name) {
		return y
	}
	r := int64(m.s.LoRARank)
	down := w.product("linear", m.n*r, x, w.param(r*in, true))
	up := w.product("linear", m.n*out, down, w.param(out*r, true))
	w.free(down)
	scaled := w.ew(up, nil, up.numel)
	w.free(up)
	sum := w.ew(y, scaled, y.numel)
	w.free(scaled, y)
	return sum
}

// layer is one decoder layer on x (which its caller holds to its end):
// the attention's result, the residual sum, the MLP's, the sum again.
func (m *evalModel) layer(x *buf) *buf {
	w := m.w
	h := m.norm(x)
	a, probs := m.attention(h)
	w.free(h)
	x2 := w.ew(x, a, x.numel)
	w.free(a)
	h = m.norm(x2)
	f := m.mlp(h)
	y := w.ew(x2, f, x2.numel)
	w.free(f, h, x2, probs)
	return y
}

// attention is the self-attention of h through o_proj (c_proj), and the
// probabilities, which the layer holds.
func (m *evalModel) attention(h *buf) (*buf, *buf) {
	w := m.w
	a := m.c.Arch
	qdim, kvdim := m.h*m.hd, m.kv*m.hd
	var q, k, v, qkv *buf
	var drop []*buf // LlamaAttention's locals (GPT2Attention's c_attn result)
	if a.Modules.QKV.Parts == nil {
		qkv = m.linear(h, qdim+2*kvdim, lastName(a.Modules.QKV.Name), true)
		q, k, v = view(qkv, m.n*qdim), view(qkv, m.n*kvdim), view(qkv, m.n*kvdim)
		drop = []*buf{qkv}
	} else {
		parts := a.Modules.QKV.Parts
		q = m.linear(h, qdim, lastName(parts[0]), m.c.QKVBias)
		k = m.linear(h, kvdim, lastName(parts[1]), m.c.QKVBias)
		v = m.linear(h, kvdim, lastName(parts[2]), m.c.QKVBias)
		q2, k2 := m.rope(q, m.h), m.rope(k, m.kv)
		w.free(q, k)
		q, k = q2, k2
		drop = []*buf{q, k, v}
	}
	// repeat_kv: copies at every head, attention's locals.
	kr, vr := k, v
	repeated := m.kv != m.h
	if repeated {
		kr = w.make("copy", m.n*qdim, k.dt)
		vr = w.make("copy", m.n*qdim, v.dt)
	}
	var o, probs *buf
	if m.s.SDPA {
		var temps []*buf
		for _, x := range []*buf{q, kr, vr} {
			if c, temp := w.lower(x); temp {
				temps = append(temps, c)
			}
		}
		dt := f32
		if w.autocast {
			dt = bf16
		}
		o = w.make("sdpa", m.n*qdim, dt)
		lse := w.make("sdpa", m.batch*m.h*m.seq, f32)
		w.free(append(temps, lse)...)
	} else {
		o, probs = m.eager(q, kr, vr, repeated)
	}
	// transpose(1, 2) and reshape: a copy.
	oc := w.make("copy", o.numel, o.dt)
	w.free(o)
	if repeated {
		w.free(kr, vr)
	}
	out := m.linear(oc, m.d, lastName(a.Modules.Out), m.c.OutBias || a.Biases == hfconfig.AllBiases)
	w.free(oc)
	w.free(drop...)
	return out, probs
}

// eager is eager_attention_forward of q and k and v at every head (kr
// and vr: repeat_kv's contiguous copies when repeated): its output and
// the probabilities.
func (m *evalModel) eager(q, kr, vr *buf, repeated bool) (*buf, *buf) {
	w := m.w
	qk := m.batch * m.h * m.seq * m.seq
	// q is never viewable as [B·H, S, hd] (rotated, or split off
	// c_attn); kᵀ is when k is repeat_kv's contiguous copy.
	scores := w.matmul(qk, q, kr, [2]bool{false, repeated})
	div := w.ew(scores, nil, qk)
	w.free(scores)
	masked := w.ew(div, m.mask, qk)
	w.free(div)
	probs := w.make("softmax", qk, f32)
	w.free(masked)
	return w.matmul(m.n*m.h*m.hd, probs, vr, [2]bool{true, repeated}), probs
}

// rope is apply_rotary_pos_emb on x of heads heads: x·cos +
// rotate_half(x)·sin, the tables float32.
func (m *evalModel) rope(x *buf, heads int64) *buf {
	w := m.w
	n := m.n * heads * m.hd
	c := w.ew(x, m.cos, n)
	neg := w.make("elementwise", n/2, x.dt)
	r := w.make("copy", n, x.dt)
	w.free(neg)
	rs := w.ew(r, m.sin, n)
	w.free(r)
	y := w.ew(c, rs, n)
	w.free(c, rs)
	return y
}

// mlp is the feed-forward block of h: LlamaMLP's one expression, or
// GPT-2's c_fc, gelu_new and c_proj.
func (m *evalModel) mlp(h *buf) *buf {
	w := m.w
	a := m.c.Arch
	bias := m.c.MLPBias || a.Biases == hfconfig.AllBiases
	if a.MLP == hfconfig.GatedSiLU {
		parts := a.Modules.Up.Parts
		g := m.linear(h, m.inter, lastName(parts[0]), bias)
		sg := w.ew(g, nil, g.numel)
		w.free(g)
		u := m.linear(h, m.inter, lastName(parts[1]), bias)
		prod := w.ew(sg, u, g.numel)
		w.free(sg, u)
		y := m.linear(prod, m.d, lastName(a.Modules.Down), bias)
		w.free(prod)
		return y
	}
	f := m.linear(h, m.inter, lastName(a.Modules.Up.Name), bias)
	// 0.5·f·(1 + tanh(√(2/π)·(f + 0.044715·f³))), evaluated left to right.
	half := w.ew(f, nil, f.numel)
	cube := w.ew(f, nil, f.numel)
	scaled := w.ew(cube, nil, f.numel)
	w.free(cube)
	sum := w.ew(f, scaled, f.numel)
	w.free(scaled)
	inner := w.ew(sum, nil, f.numel)
	w.free(sum)
	th := w.ew(inner, nil, f.numel)
	w.free(inner)
	one := w.ew(th, nil, f.numel)
	w.free(th)
	g := w.ew(half, one, f.numel)
	w.free(half, one, f)
	y := m.linear(g, m.d, lastName(a.Modules.Down), bias)
	w.free(g)
	return y
}

// PlanEval plans an evaluation pass of s (its Checkpoint ignored: no
// graph is kept to checkpoint) under fw: the parameters and the largest
// set of tensors alive at once, autocast's cached weight copies among
// them. The walk is PyTorch 1.13's and 2.x's alike (no row differs), sdpa
// 2.x's alone.
func PlanEval(s Step, fw Framework) (Plan, error) {
	if _, err := fw.versions(); err != nil {
		return Plan{}, err
	}
	switch {
	case s.Model.Arch == nil:
		return Plan{}, fmt.Errorf("no model")
	case s.SDPA && fw != Torch:
		return Plan{}, fmt.Errorf("%s has no scaled_dot_product_attention: its attention is eager", fw)
	case s.Batch <= 0 || s.SeqLen <= 0:
		return Plan{}, fmt.Errorf("batch %d and sequence length %d must be positive", s.Batch, s.SeqLen)
	}
	s.Checkpoint = false
	if s.Layers <= 0 {
		s.Layers = s.Model.Layers
	}
	c := s.Model
	w := newWalk(s.Autocast)
	m := &evalModel{w: w, s: s, c: c, n: int64(s.Batch) * int64(s.SeqLen), seq: int64(s.SeqLen), batch: int64(s.Batch),
		d: int64(c.Hidden), hd: int64(c.HeadDim), h: int64(c.Heads), kv: int64(c.KVHeads), inter: int64(c.Intermediate), vocab: int64(c.Vocab)}
	m.forward()
	if w.err != nil {
		return Plan{}, fmt.Errorf("%s: %w", fw, w.err)
	}
	p := Plan{Framework: fw, Python: s.EvalPython(), Eval: true}
	for _, x := range w.params {
		p.ParameterCount += x.numel
		if x.grad {
			p.TrainedCount += x.numel
		}
	}
	p.Parameters = 4 * p.ParameterCount
	slices.SortFunc(w.atPeak, func(a, b *buf) int { return cmp.Compare(a.id, b.id) })
	for _, b := range w.atPeak {
		if b.weight {
			p.WeightCopies += b.bytes()
			continue
		}
		p.Live += b.bytes()
		if b.op == "log_softmax" {
			p.LogSoftmax += b.bytes()
		}
		i := slices.IndexFunc(p.LiveByOp, func(o OpBytes) bool { return o.Op == b.op })
		if i < 0 {
			p.LiveByOp = append(p.LiveByOp, OpBytes{Op: b.op})
			i = len(p.LiveByOp) - 1
		}
		p.LiveByOp[i].Bytes += b.bytes()
	}
	p.Peak = p.Parameters + w.peak
	return p, nil
}
