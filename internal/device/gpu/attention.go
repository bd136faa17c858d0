package gpu

import (
	"gpuz/internal/device"
	"gpuz/internal/hostmath"
)

// The kernels take the number of key and value heads as a.NumKVHeads()
// (never 0) and read the rows a.QKVWidth() wide; query head h reads key
// and value head h / a.KVGroup().

// causal is a's mask flag as the kernels take it.
func causal(a hostmath.Attention) Arg {
	if a.Causal {
		return Int(1)
	}
	return Int(0)
}

// AttentionProbs sets dst to the attention probabilities: one block per
// probability row.
func (k Dispatcher) AttentionProbs(dst, qkv device.Buffer, a hostmath.Attention) {
	if rows := a.Batch * a.Heads * a.Seq; rows > 0 {
		k.L.Launch("attn_probs", rows, BlockSize, sharedReduce, []Arg{Pointer(ptr(dst)), Pointer(ptr(qkv)), Int(a.Seq), Int(a.Heads), Int(a.NumKVHeads()), Int(a.HeadDim), causal(a), Float(float32(a.Scale()))})
	}
}

// AttentionProbsGrad sets dst to AttentionProbs' gradient with respect to
// qkv: each probability row's Σ p·dp into the workspace, then one thread
// per element of dst, a key's adding its group's query heads in order.
func (k Dispatcher) AttentionProbsGrad(dst, qkv, p, dp device.Buffer, a hostmath.Attention) {
	rows := a.Batch * a.Heads * a.Seq
	rowdot := k.take(k.workspace(), 4*rows, "the attention row sums")
	if rowdot == 0 {
		return
	}
	k.each("attn_row_dot", rows, Pointer(rowdot), Pointer(ptr(p)), Pointer(ptr(dp)), Long(rows), Int(a.Seq), causal(a))
	k.each("attn_probs_grad", dst.Len(), Pointer(ptr(dst)), Pointer(ptr(qkv)), Pointer(ptr(p)), Pointer(ptr(dp)), Pointer(rowdot),
		Int(a.Batch), Int(a.Seq), Int(a.Heads), Int(a.NumKVHeads()), Int(a.HeadDim), causal(a), Float(float32(a.Scale())))
}

// AttentionMix sets dst to the probabilities times the values, heads
// merged.
func (k Dispatcher) AttentionMix(dst, p, qkv device.Buffer, a hostmath.Attention) {
	k.each("attn_mix", dst.Len(), Pointer(ptr(dst)), Pointer(ptr(p)), Pointer(ptr(qkv)), Int(a.Batch), Int(a.Seq), Int(a.Heads), Int(a.NumKVHeads()), Int(a.HeadDim), causal(a))
}

// AttentionMixProbsGrad sets dst to AttentionMix's gradient with respect to
// the probabilities.
func (k Dispatcher) AttentionMixProbsGrad(dst, g, qkv device.Buffer, a hostmath.Attention) {
	k.each("attn_mix_probs_grad", dst.Len(), Pointer(ptr(dst)), Pointer(ptr(g)), Pointer(ptr(qkv)), Int(a.Batch), Int(a.Seq), Int(a.Heads), Int(a.NumKVHeads()), Int(a.HeadDim), causal(a))
}

// AttentionMixValueGrad sets dst to AttentionMix's gradient with respect to
// qkv: one thread per element of dst, a value's adding its group's query
// heads in order.
func (k Dispatcher) AttentionMixValueGrad(dst, p, g device.Buffer, a hostmath.Attention) {
	k.each("attn_mix_value_grad", dst.Len(), Pointer(ptr(dst)), Pointer(ptr(p)), Pointer(ptr(g)), Int(a.Batch), Int(a.Seq), Int(a.Heads), Int(a.NumKVHeads()), Int(a.HeadDim), causal(a))
}

// ptrOrNull is b's device pointer, or 0 (the kernels' null) for a nil b.
func ptrOrNull(b device.Buffer) uintptr {
	if b == nil {
		return 0
	}
	return ptr(b)
}

// FusedAttention sets out (unless nil) to the attention output and lse
// (unless nil) to the rows' log-sum-exps: one thread per query row, its
// online softmax over blocks of keys (fusedattention.cu).
func (k Dispatcher) FusedAttention(out, lse, qkv device.Buffer, a hostmath.Attention) {
	k.each("fused_attn", a.Batch*a.Heads*a.Seq, Pointer(ptrOrNull(out)), Pointer(ptrOrNull(lse)), Pointer(ptr(qkv)),
		Int(a.Batch), Int(a.Seq), Int(a.Heads), Int(a.NumKVHeads()), Int(a.HeadDim), causal(a), Float(float32(a.Scale())))
}

// FusedAttentionGrad sets dst to the fused attention's gradient with
// respect to qkv: one thread per query row for the query columns, one per
// element of the key and value columns, which adds its group's query
// heads in order.
func (k Dispatcher) FusedAttentionGrad(dst, qkv, out, lse, g device.Buffer, a hostmath.Attention) {
	k.each("fused_attn_grad_q", a.Batch*a.Heads*a.Seq, Pointer(ptr(dst)), Pointer(ptr(qkv)), Pointer(ptr(out)), Pointer(ptr(lse)),
		Pointer(ptr(g)), Int(a.Batch), Int(a.Seq), Int(a.Heads), Int(a.NumKVHeads()), Int(a.HeadDim), causal(a), Float(float32(a.Scale())))
	k.each("fused_attn_grad_kv", a.Batch*a.Seq*a.KVWidth(), Pointer(ptr(dst)), Pointer(ptr(qkv)), Pointer(ptr(out)), Pointer(ptr(lse)),
		Pointer(ptr(g)), Int(a.Batch), Int(a.Seq), Int(a.Heads), Int(a.NumKVHeads()), Int(a.HeadDim), causal(a), Float(float32(a.Scale())))
}
