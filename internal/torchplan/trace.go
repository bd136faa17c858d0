package torchplan

import "fmt"

// dtype is a tensor's element type.
type dtype int

// The element types a training step's tensors have.
const (
	f32     dtype = iota
	bf16          // autocast's copies and the products' results under it
	f64           // a Python number wrapped as a 0-d tensor
	i64           // token ids and targets
	boolean       // a mask
)

// size is an element's bytes.
func (d dtype) size() int64 {
	switch d {
	case bf16:
		return 2
	case f64, i64:
		return 8
	case boolean:
		return 1
	}
	return 4
}

// tensor is one storage of the trace. Views share their base's tensor;
// an op's result, a copy and a cast are new ones.
type tensor struct {
	id    int
	numel int64
	dt    dtype
	grad  bool // requires a gradient
	param bool // a parameter (a leaf): never counted as saved
	// scalar marks a wrapped Python number, which does not take part in
	// type promotion.
	scalar bool
	// weight marks autocast's 16-bit copy of a parameter.
	weight bool
}

// Saved is one tensor autograd keeps for the backward pass.
type Saved struct {
	Block string // "embed", "layerN" or "head", as gpuz names its blocks
	Op    string // the rule's op that saved it
	Bytes int64
	// Weight marks autocast's 16-bit copy of a weight, which a product
	// saves for its input's gradient.
	Weight bool
}

// tracer walks a forward pass op by op, keeping what each op's rule
// saves.
type tracer struct {
	v        versions
	autocast bool // torch.autocast(dtype=bfloat16)
	// quiet is set inside a checkpointed layer: its ops save nothing
	// that outlives the forward pass (the checkpoint re-runs them).
	quiet  bool
	block  string
	nextID int
	seen   map[int]bool
	casts  map[int]*tensor // autocast's cache: a trained parameter's 16-bit copy
	saved  []Saved
	// params are the parameters made, each once.
	params []*tensor
	// outNumel is the model's output's elements, whose float32 gradient
	// the loss's backward makes first (the synthetic workloads).
	outNumel int64
	err      error
}

func newTracer(v versions, autocast bool) *tracer {
	return &tracer{v: v, autocast: autocast, block: "embed", seen: map[int]bool{}, casts: map[int]*tensor{}}
}

// tensor makes a new storage of n elements.
func (t *tracer) tensor(n int64, dt dtype, grad bool) *tensor {
	t.nextID++
	return &tensor{id: t.nextID, numel: n, dt: dt, grad: grad}
}

// param makes a parameter of n elements, trained or frozen.
func (t *tracer) param(n int64, trained bool) *tensor {
	p := t.tensor(n, f32, trained)
	p.param = true
	t.params = append(t.params, p)
	return p
}

// number is a Python float as an op's operand: a wrapped 0-d float64.
func (t *tracer) number() *tensor {
	s := t.tensor(1, f64, false)
	s.scalar = true
	return s
}

// keep counts x as saved by op (a tensor counted once).
func (t *tracer) keep(x *tensor, op string) {
	if x == nil || x.param || t.seen[x.id] {
		return
	}
	t.seen[x.id] = true
	t.saved = append(t.saved, Saved{Block: t.block, Op: op, Bytes: x.numel * x.dt.size(), Weight: x.weight})
}

// apply runs op on ins with results outs (made by the caller, outs[0]
// the differentiable one): it saves what op's rule names for each input
// that requires a gradient and marks outs[0] as requiring one if any
// input does.
func (t *tracer) apply(op string, outs []*tensor, ins ...*tensor) *tensor {
	r, ok := ruleFor(op, t.v)
	if !ok {
		if t.err == nil {
			t.err = fmt.Errorf("no rule for %s", op)
		}
		return outs[0]
	}
	grad := false
	for i, x := range ins {
		if x == nil || !x.grad {
			continue
		}
		grad = true
		if t.quiet || i >= len(r.needs) {
			continue
		}
		for _, n := range r.needs[i] {
			if n.out {
				t.keep(outs[n.i], op)
			} else if n.i < len(ins) {
				t.keep(ins[n.i], op)
			}
		}
	}
	outs[0].grad = grad
	return outs[0]
}

// promote is the result type of an element-wise op on a and b: a
// wrapped number does not promote, float32 beats bfloat16.
func promote(a, b *tensor) dtype {
	switch {
	case b == nil || b.scalar || a.dt == b.dt:
		return a.dt
	case a.scalar:
		return b.dt
	case a.dt == f32 || b.dt == f32:
		return f32
	}
	return a.dt
}

// elementwise applies op to a and b (b may be a wrapped number or nil),
// a result of a's size.
func (t *tracer) elementwise(op string, a, b *tensor) *tensor {
	n := a.numel
	if b != nil && b.numel > n {
		n = b.numel
	}
	o := t.tensor(n, promote(a, b), false)
	if b == nil {
		return t.apply(op, []*tensor{o}, a)
	}
	return t.apply(op, []*tensor{o}, a, b)
}

// copyOf is a copy of x in n elements of dt (a cast, repeat_kv's expand
// and reshape, matmul's fold of a non-contiguous operand, rotate_half's
// cat): a new storage, nothing saved.
func (t *tracer) copyOf(x *tensor, n int64, dt dtype) *tensor {
	return t.apply("copy", []*tensor{t.tensor(n, dt, false)}, x)
}

// lower is x as a product under autocast reads it: x itself without
// autocast or when already 16-bit; a trained parameter's copy made once
// per step (autocast's cache holds leaves that require a gradient);
// else a new copy at every call.
func (t *tracer) lower(x *tensor) *tensor {
	if !t.autocast || x.dt != f32 {
		return x
	}
	if x.param && x.grad {
		if c, ok := t.casts[x.id]; ok {
			return c
		}
		c := t.copyOf(x, x.numel, bf16)
		c.weight = true
		t.casts[x.id] = c
		return c
	}
	c := t.copyOf(x, x.numel, bf16)
	c.weight = x.param
	return c
}

// product applies a matrix product rule (linear, addmm, bmm) to operands
// cast as autocast casts them; the result has n elements.
func (t *tracer) product(op string, n int64, ins ...*tensor) *tensor {
	dt := f32
	cast := make([]*tensor, len(ins))
	for i, x := range ins {
		if x != nil {
			cast[i] = t.lower(x)
			dt = cast[i].dt
		}
	}
	return t.apply(op, []*tensor{t.tensor(n, dt, false)}, cast...)
}
