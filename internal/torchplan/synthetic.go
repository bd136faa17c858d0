package torchplan

import "fmt"

// This file plans a training step of gpuz's three synthetic workloads as
// scripts/torch_reference.py writes them in PyTorch (the same rules
// table, its forward passes below), with Adam per block as gpuz runs
// them.

// The synthetic workloads.
const (
	Linear    = "linear"
	Resnet    = "resnet"
	Attention = "attention"
)

// Synthetic is one training step of a synthetic workload, its sizes as
// gpuz's (internal/models' LinearConfig, ResnetConfig, AttentionConfig)
// and torch_reference.py's SIZES name them.
type Synthetic struct {
	Workload string // Linear, Resnet or Attention
	Batch    int
	// Autocast is torch.autocast(dtype=torch.bfloat16) over float32
	// weights (torch_reference.py --precision bf16).
	Autocast bool
	// linear: Blocks blocks of Layers [Linear(Dims, Dims), LeakyReLU].
	Blocks, Layers, Dims int
	// resnet: Levels levels of two ConvModels of Channels and Mid
	// channels, Kernel×Kernel, on Image×Image images.
	Levels, Channels, Mid, Image, Kernel int
	// attention: Vocab, DModel, Heads, Layers (above) and SeqLen.
	Vocab, DModel, Heads, SeqLen int
}

// Python is s as torch_reference.py runs it.
func (s Synthetic) Python() string {
	amp := ""
	if s.Autocast {
		amp = "torch.autocast(dtype=torch.bfloat16), "
	}
	return fmt.Sprintf("%sscripts/torch_reference.py's %s, batch %d, Adam per block", amp, s.Workload, s.Batch)
}

// traceSynthetic runs s's forward pass and loss through a tracer.
func traceSynthetic(s Synthetic, fw Framework) (*tracer, error) {
	v, err := fw.versions()
	if err != nil {
		return nil, err
	}
	if s.Batch <= 0 {
		return nil, fmt.Errorf("batch %d must be positive", s.Batch)
	}
	t := newTracer(v, s.Autocast)
	switch s.Workload {
	case Linear:
		syntheticLinear(t, s)
	case Resnet:
		syntheticResnet(t, s)
	case Attention:
		syntheticAttention(t, s)
	default:
		return nil, fmt.Errorf("no PyTorch form of workload %q", s.Workload)
	}
	if t.err != nil {
		return nil, fmt.Errorf("%s: %w", fw, t.err)
	}
	return t, nil
}

// SyntheticSaved is the tensors autograd keeps for the backward pass of
// s under fw, in the order the ops save them.
func SyntheticSaved(s Synthetic, fw Framework) ([]Saved, error) {
	t, err := traceSynthetic(s, fw)
	if err != nil {
		return nil, err
	}
	return t.saved, nil
}

// PlanSynthetic plans s's training step under fw: parameters, autocast's
// weight copies, gradients, Adam's moments, the saved tensors by op, and
// the peak as PlanStep counts it (the transient: the loss's gradient of
// the output, float32).
func PlanSynthetic(s Synthetic, fw Framework) (Plan, error) {
	t, err := traceSynthetic(s, fw)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Framework: fw, Python: s.Python()}
	p.tally(t)
	p.Transient = 4 * t.outNumel
	p.Peak = p.Parameters + p.Moments + max(p.WeightCopies+p.Saved+p.Transient, p.Gradients)
	return p, nil
}

// tally fills p's parameters, gradients, moments and saved tensors from
// a trace.
func (p *Plan) tally(t *tracer) {
	for _, x := range t.params {
		p.ParameterCount += x.numel
		if x.grad {
			p.TrainedCount += x.numel
		}
	}
	p.Parameters = 4 * p.ParameterCount
	p.Gradients = 4 * p.TrainedCount
	p.Moments = 2 * 4 * p.TrainedCount
	for _, sv := range t.saved {
		if sv.Weight {
			p.WeightCopies += sv.Bytes
			continue
		}
		p.Saved += sv.Bytes
		if sv.Op == "log_softmax" {
			p.LogSoftmax += sv.Bytes
		}
		i := len(p.SavedByOp) - 1
		for i >= 0 && p.SavedByOp[i].Op != sv.Op {
			i--
		}
		if i < 0 {
			p.SavedByOp = append(p.SavedByOp, OpBytes{Op: sv.Op})
			i = len(p.SavedByOp) - 1
		}
		p.SavedByOp[i].Bytes += sv.Bytes
	}
}

// fp32Loss is x as an op on CPU autocast's float32 list (mse_loss,
// cross_entropy) reads it: a 16-bit x copied to float32.
func (t *tracer) fp32Loss(x *tensor) *tensor {
	if t.autocast && x.dt != f32 {
		return t.copyOf(x, x.numel, f32)
	}
	return x
}

// syntheticLinear is torch_reference.py's linear: blocks of [F.linear,
// nn.LeakyReLU(0.01)], mse_loss against the input.
func syntheticLinear(t *tracer, s Synthetic) {
	n, d := int64(s.Batch), int64(s.Dims)
	data := t.tensor(n*d, f32, false)
	x := data
	for range s.Blocks * s.Layers {
		w, b := t.param(d*d, true), t.param(d, true)
		x = t.product("linear", n*d, x, w, b)
		x = t.apply("leaky_relu", []*tensor{t.tensor(x.numel, x.dt, false)}, x)
	}
	t.outNumel = x.numel
	t.apply("mse_loss", []*tensor{t.tensor(1, f32, false)}, t.fp32Loss(x), data)
}

// syntheticResnet is torch_reference.py's resnet: level i = x +
// b_i(level i-1(a_i(x))), each ConvModel 2 × [Conv2d(C→M), Conv2d(M→C),
// LeakyReLU], mse_loss against the input.
func syntheticResnet(t *tracer, s Synthetic) {
	n := int64(s.Batch) * int64(s.Image) * int64(s.Image)
	c, mid, k2 := int64(s.Channels), int64(s.Mid), int64(s.Kernel)*int64(s.Kernel)
	conv := func(x *tensor, in, out int64) *tensor {
		w, b := t.param(out*in*k2, true), t.param(out, true)
		return t.product("convolution", n*out, x, w, b)
	}
	convModel := func(x *tensor) *tensor {
		for range 2 {
			x = conv(conv(x, c, mid), mid, c)
			x = t.apply("leaky_relu", []*tensor{t.tensor(x.numel, x.dt, false)}, x)
		}
		return x
	}
	// The pairs' parameters are made in order a_1, b_1, a_2, b_2, …;
	// the trace needs only their sizes, which are all alike.
	var level func(i int, x *tensor) *tensor
	level = func(i int, x *tensor) *tensor {
		h := convModel(x)
		if i > 0 {
			h = level(i-1, h)
		}
		return t.elementwise("add", x, convModel(h))
	}
	data := t.tensor(n*c, f32, false)
	out := level(s.Levels-1, data)
	t.outNumel = out.numel
	t.apply("mse_loss", []*tensor{t.tensor(1, f32, false)}, t.fp32Loss(out), data)
}

// syntheticAttention is torch_reference.py's attention: embeddings plus
// fixed positions, decoder layers x = LayerNorm(x + out_proj(MHA)), x =
// LayerNorm(x + ff(x)), a head, cross-entropy against the ids.
func syntheticAttention(t *tracer, s Synthetic) {
	b, seq, d, h := int64(s.Batch), int64(s.SeqLen), int64(s.DModel), int64(s.Heads)
	n, vocab := b*seq, int64(s.Vocab)
	ids := t.tensor(n, i64, false)
	mask := t.tensor(seq*seq, boolean, false)
	x := t.apply("embedding", []*tensor{t.tensor(n*d, f32, false)}, t.param(vocab*d, true), ids)
	x = t.elementwise("add", x, t.tensor(seq*d, f32, false))
	norm := func(x *tensor) *tensor {
		outs := []*tensor{t.tensor(x.numel, x.dt, false), t.tensor(n, f32, false), t.tensor(n, f32, false)}
		return t.apply("layer_norm", outs, x, t.param(d, true), t.param(d, true))
	}
	for range s.Layers {
		// in_proj's weight and bias, out_proj, norm1, ff, norm2: the
		// order of DecoderLayer's parameters.
		qkv := t.product("linear", n*3*d, x, t.param(3*d*d, true), t.param(3*d, true))
		// q, k, v are permuted views of qkv; matmul copies each as it
		// folds them to [B·H, …] (none is contiguous there).
		fold := func(x *tensor) *tensor {
			c := t.lower(x)
			return t.copyOf(c, n*d, c.dt)
		}
		part := &tensor{id: qkv.id, numel: n * d, dt: qkv.dt, grad: qkv.grad}
		scores := t.product("bmm", b*h*seq*seq, fold(part), fold(part))
		scores = t.elementwise("mul", scores, t.number())
		scores = t.apply("masked_fill", []*tensor{t.tensor(scores.numel, scores.dt, false)}, scores, mask)
		probs := t.apply("softmax", []*tensor{t.tensor(scores.numel, scores.dt, false)}, scores)
		mixed := t.product("bmm", n*d, probs, fold(part))
		mixed = t.copyOf(mixed, mixed.numel, mixed.dt) // transpose(1, 2) and reshape
		a := t.product("linear", n*d, mixed, t.param(d*d, true), t.param(d, true))
		x = norm(t.elementwise("add", x, a))
		f := t.product("linear", n*d, x, t.param(d*d, true), t.param(d, true))
		x = norm(t.elementwise("add", x, f))
	}
	logits := t.product("linear", n*vocab, x, t.param(vocab*d, true), t.param(vocab, true))
	t.outNumel = logits.numel
	// cross_entropy is on CPU autocast's float32 list too: bf16 logits
	// are copied to float32 first.
	lsm := t.apply("log_softmax", []*tensor{t.tensor(logits.numel, f32, false)}, t.fp32Loss(logits))
	t.apply("nll_loss", []*tensor{t.tensor(1, f32, false), t.tensor(1, f32, false)}, lsm, ids)
}
