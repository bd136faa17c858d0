package models

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"gorgonia.org/gorgonia"

	"gpuz/internal/engine"
	"gpuz/internal/levers"
	"gpuz/internal/ops"
)

// loraConfig is what LoRA reads of a config: its setting and the layers
// it may target.
type loraConfig interface {
	// loraLayers returns the names of the model's linear layers that
	// LoRA may target (AllLinear's set) and the workload's default
	// targets.
	loraLayers() (all, def []string)
	// lora returns the LoRA setting of the config.
	lora() levers.LoRA
}

func (c LinearConfig) lora() levers.LoRA    { return c.LoRA }
func (c AttentionConfig) lora() levers.LoRA { return c.LoRA }
func (c LLMConfig) lora() levers.LoRA       { return c.LoRA }

// The linear workload's layers are all alike: "layer" names every one,
// and is the default.
func (LinearConfig) loraLayers() (all, def []string) { return []string{"layer"}, []string{"layer"} }

// The attention workload's linear layers are each decoder layer's
// in_proj (the queries', keys' and values' packed projection), out_proj
// and ff; the default is in_proj, the attention's input projection, as
// PEFT's default for GPT-2 is its packed c_attn. The head is no target,
// as PEFT's all-linear leaves the output layer out.
func (AttentionConfig) loraLayers() (all, def []string) {
	return []string{"in_proj", "out_proj", "ff"}, []string{"in_proj"}
}

// The llm workload's linear layers are named as transformers names the
// modules, by their last component as PEFT's suffix match takes them
// (GPT-2's c_proj names both the attention's and the MLP's output
// projections), and the defaults are PEFT's for the family
// (hfconfig.Arch.LoRADefault).
func (c LLMConfig) loraLayers() (all, def []string) {
	if c.Model.Arch == nil {
		return nil, nil
	}
	for _, m := range c.Model.Arch.LinearModules() {
		if k := kind(m); !slices.Contains(all, k) {
			all = append(all, k)
		}
	}
	return all, slices.Clone(c.Model.Arch.LoRADefault)
}

// LoRATargets is the layers c's LoRA adapts, as transformers names the
// modules (the family's default when --lora-targets is not given).
func (c LLMConfig) LoRATargets() ([]string, error) { return loraTargets(c) }

// loraTargets resolves c's targets: the default for nil, every layer
// for all-linear, else each name checked against the model's layers.
func loraTargets(c loraConfig) ([]string, error) {
	all, def := c.loraLayers()
	list, err := c.lora().TargetList()
	switch {
	case err != nil:
		return nil, err
	case list == nil:
		return def, nil
	case len(list) == 1 && list[0] == levers.AllLinear:
		return all, nil
	}
	for _, t := range list {
		if !slices.Contains(all, t) {
			return nil, fmt.Errorf("--lora-targets: the model has no linear layer %q (its layers: %s, or %s)", t, strings.Join(all, ", "), levers.AllLinear)
		}
	}
	return list, nil
}

// checkLoRA is the part of a config's Validate that checks its LoRA.
func checkLoRA(c loraConfig) error {
	l := c.lora()
	if err := l.Validate(); err != nil {
		return err
	}
	if !l.On() {
		return nil
	}
	_, err := loraTargets(c)
	return err
}

// adapters adds LoRA's adapters to a model as it is built: each target
// layer's A and B, trained, in the block of the layer, while withOutput
// freezes every other parameter (Model.freezeBase).
type adapters struct {
	levers.LoRA
	targets []string
	m       *Model
	// consts holds the constants the adapters share: the scale, each
	// placement of a part of a packed layer, the zero bias.
	consts map[string]*gorgonia.Node
}

// newAdapters returns the adapters of c's LoRA for m, nil when it is off.
func newAdapters(c loraConfig, m *Model) (*adapters, error) {
	if !c.lora().On() {
		return nil, nil
	}
	targets, err := loraTargets(c)
	if err != nil {
		return nil, err
	}
	return &adapters{LoRA: c.lora(), targets: targets, m: m, consts: map[string]*gorgonia.Node{}}, nil
}

// adapt returns y, the output of the linear layer name of kind kind on
// input x [tokens, in], with the adapter's term added when the kind is a
// target:
//
//	y + (α/R)·(x·Aᵀ)·Bᵀ,  A [R, in] ~ U(±1/√in) (PEFT's Kaiming-uniform), B [n, R] = 0
//
// The term covers y's columns [off, off+n), all of them when n is y's
// width; a part of a packed layer (q_proj of the Llama family's qkv_proj)
// has its B placed among the layer's rows by a constant 0/1 matrix P
// [width, n] (B's rows at off…off+n−1, zeros elsewhere: P·B, the
// product Conv1D computes, with a zero bias), so that only B's n rows
// are trained. The scale, when not 1, multiplies x·Aᵀ by the constant
// (α/R)·I. A nil receiver (LoRA off) returns y.
func (a *adapters) adapt(block *engine.Block, name, kind string, x, y *gorgonia.Node, off, n int) (*gorgonia.Node, error) {
	if a == nil || !slices.Contains(a.targets, kind) || y == nil || x == nil {
		return y, nil
	}
	in, width, r := x.Shape()[1], y.Shape()[1], a.Rank
	aW := a.m.adapter(block, name+".lora_A.weight", uniform(fanInBound(in)), r, in)
	bW := a.m.adapter(block, name+".lora_B.weight", constant(0), n, r)
	u, err := ops.Apply(ops.Projection{}, x, aW)
	if err != nil {
		return nil, fmt.Errorf("%s.lora_A: %w", name, err)
	}
	if s := a.Scale(); s != 1 {
		scale := a.constant(fmt.Sprintf("lora.scale.%d", r), func() []float32 { return scaledIdentity(r, float32(s)) }, r, r)
		if u, err = ops.Apply(ops.Projection{}, u, scale); err != nil {
			return nil, fmt.Errorf("%s scale: %w", name, err)
		}
	}
	if n != width {
		place := a.constant(fmt.Sprintf("lora.place.%d.%d.%d", width, off, n), func() []float32 { return placement(width, off, n) }, width, n)
		zeros := a.constant(fmt.Sprintf("lora.zeros.%d", r), func() []float32 { return make([]float32, r) }, r)
		if bW, err = ops.Apply(ops.Conv1D{}, place, bW, zeros); err != nil {
			return nil, fmt.Errorf("%s.lora_B placed: %w", name, err)
		}
	}
	d, err := ops.Apply(ops.Projection{}, u, bW)
	if err != nil {
		return nil, fmt.Errorf("%s.lora_B: %w", name, err)
	}
	if y, err = ops.Apply(ops.Add{}, y, d); err != nil {
		return nil, fmt.Errorf("%s + lora: %w", name, err)
	}
	return y, nil
}

// constant returns the shared constant named name, added the first
// time; values makes its values when they are set.
func (a *adapters) constant(name string, values func() []float32, shape ...int) *gorgonia.Node {
	if n, ok := a.consts[name]; ok {
		return n
	}
	n := a.m.tensor(name, shape...)
	a.m.Constants = append(a.m.Constants, Constant{Node: n, Values: values})
	a.consts[name] = n
	return n
}

// scaledIdentity returns s·I, r × r.
func scaledIdentity(r int, s float32) []float32 {
	out := make([]float32, r*r)
	for i := range r {
		out[i*r+i] = s
	}
	return out
}

// placement returns the 0/1 matrix [width, n] whose rows off…off+n−1 are
// the identity's and the others zero.
func placement(width, off, n int) []float32 {
	out := make([]float32, width*n)
	for i := range n {
		out[(off+i)*n+i] = 1
	}
	return out
}

// adapter adds a trained adapter matrix to block: a parameter drawn after
// every parameter of the model itself (InitParams), so that the model's
// own weights are those of the same model without LoRA.
func (m *Model) adapter(block *engine.Block, name string, init func(*rand.Rand, []float32), shape ...int) *gorgonia.Node {
	n := m.tensor(name, shape...)
	m.init[n] = init
	m.adapters = append(m.adapters, n)
	block.Params = append(block.Params, n)
	return n
}

// freezeBase makes, in every block, the model's own parameters frozen and
// the adapters the only trained ones; nothing without adapters.
func (m *Model) freezeBase() {
	if len(m.adapters) == 0 {
		return
	}
	for i := range m.Blocks {
		b := &m.Blocks[i]
		var trained, frozen []*gorgonia.Node
		for _, p := range b.Params {
			if slices.Contains(m.adapters, p) {
				trained = append(trained, p)
			} else {
				frozen = append(frozen, p)
			}
		}
		b.Params, b.Frozen = trained, frozen
	}
}
