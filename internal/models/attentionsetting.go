package models

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"gpuz/internal/levers"
	"gpuz/internal/ops"
)

// attentive is a config whose model has attention layers: the attention
// and llm workloads', whose attention may be eager or fused
// (levers.Attention).
type attentive interface {
	Config
	// attention returns the setting in force, the workload's default for
	// "".
	attention() levers.Attention
	// WithAttention returns a copy of the config with its attention set
	// to a ("" the workload's default).
	WithAttention(a levers.Attention) Config
}

// The workloads' default attention: the attention workload's is eager, as
// the reference's nn.MultiheadAttention keeps the probabilities when it
// trains; the llm workload's is fused, as PyTorch's
// scaled_dot_product_attention, transformers' default, computes it.
func (c AttentionConfig) attention() levers.Attention { return c.Attention.Or(levers.AttentionEager) }
func (c LLMConfig) attention() levers.Attention       { return c.Attention.Or(levers.AttentionFused) }

// WithAttention returns a copy of c with its attention set to a.
func (c AttentionConfig) WithAttention(a levers.Attention) Config { c.Attention = a; return &c }

// WithAttention returns a copy of c with its attention set to a.
func (c LLMConfig) WithAttention(a levers.Attention) Config { c.Attention = a; return &c }

// AttentionOf returns the attention setting the model of c, a Config,
// runs with, and
// whether its workload has attention layers at all.
func AttentionOf(c any) (levers.Attention, bool) {
	a, ok := c.(attentive)
	if !ok {
		return "", false
	}
	return a.attention(), true
}

// WithAttention returns the workload whose configs compute attention as a
// says ("" keeps the workload's default); a workload without attention
// layers takes only "".
func (w Workload) WithAttention(a levers.Attention) (Workload, error) {
	if a == "" {
		return w, nil
	}
	if err := a.Validate(); err != nil {
		return w, err
	}
	if _, ok := w.config().(attentive); !ok {
		return w, fmt.Errorf("--attention applies to the attention and llm workloads, not %s", w.Name)
	}
	newConfig := w.config
	w.config = func() Config { return newConfig().(attentive).WithAttention(a) }
	return w, nil
}

// attentionOps adds the attention of the packed queries, keys and values
// qkv as setting says, heads merged: fused (one pass that gives the
// output and the rows' log-sum-exps, of which training keeps only those),
// or eager (the heads' probabilities, kept, then their mix of the values).
func attentionOps(setting levers.Attention, attn ops.AttentionConfig, qkv *gorgonia.Node) (*gorgonia.Node, error) {
	if setting.Fused() {
		return ops.FusedAttentionOutput(attn, qkv)
	}
	probs, err := ops.Apply(ops.AttentionProbs{AttentionConfig: attn}, qkv)
	if err != nil {
		return nil, err
	}
	return ops.Apply(ops.AttentionMix{AttentionConfig: attn}, probs, qkv)
}
