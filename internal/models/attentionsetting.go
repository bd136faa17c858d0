package models

import (
	"gorgonia.org/gorgonia"

	"gpuz/internal/levers"
	"gpuz/internal/ops"
)

// The workloads' default attention: the attention workload's is eager, as
// the reference's nn.MultiheadAttention keeps the probabilities when it
// trains; the llm workload's is fused, as PyTorch's
// scaled_dot_product_attention, transformers' default, computes it.
func (c AttentionConfig) attention() levers.Attention { return c.Attention.Or(levers.AttentionEager) }
func (c LLMConfig) attention() levers.Attention       { return c.Attention.Or(levers.AttentionFused) }

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
