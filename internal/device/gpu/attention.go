package gpu

import (
	"unsafe"

	"gpuz/internal/device"
	"gpuz/internal/half"
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

// FusedAttention sets dst to the attention output followed by the rows'
// log-sum-exps: one thread per query row, its online softmax over blocks
// of keys (fusedattention.cu).
func (k Dispatcher) FusedAttention(dst, qkv device.Buffer, a hostmath.Attention) {
	out, lse := packedParts(dst, a)
	k.each("fused_attn", a.Batch*a.Heads*a.Seq, Pointer(out), Pointer(lse), Pointer(ptr(qkv)),
		Int(a.Batch), Int(a.Seq), Int(a.Heads), Int(a.NumKVHeads()), Int(a.HeadDim), causal(a), Float(float32(a.Scale())))
}

// FusedAttentionGrad sets dst to the fused attention's gradient with
// respect to qkv given the packed gradient gp: one thread per query row
// for the query columns, one per element of the key and value columns,
// which adds its group's query heads in order.
func (k Dispatcher) FusedAttentionGrad(dst, qkv, out, lse, gp device.Buffer, a hostmath.Attention) {
	g, gl := packedParts(gp, a)
	k.each("fused_attn_grad_q", a.Batch*a.Heads*a.Seq, Pointer(ptr(dst)), Pointer(ptr(qkv)), Pointer(ptr(out)), Pointer(ptr(lse)),
		Pointer(g), Pointer(gl), Int(a.Batch), Int(a.Seq), Int(a.Heads), Int(a.NumKVHeads()), Int(a.HeadDim), causal(a),
		Float(float32(a.Scale())))
	k.each("fused_attn_grad_kv", a.Batch*a.Seq*a.KVWidth(), Pointer(ptr(dst)), Pointer(ptr(qkv)), Pointer(ptr(out)), Pointer(ptr(lse)),
		Pointer(g), Pointer(gl), Int(a.Batch), Int(a.Seq), Int(a.Heads), Int(a.NumKVHeads()), Int(a.HeadDim), causal(a),
		Float(float32(a.Scale())))
}

// FusedAttentionUnpack copies the output or the log-sum-exps out of the
// packed value.
func (k Dispatcher) FusedAttentionUnpack(dst, packed device.Buffer, lse bool, a hostmath.Attention) {
	src, n := ptr(packed), a.OutLen()
	if lse {
		src, n = src+uintptr(4*a.OutLen()), a.LSELen()
	}
	k.each("copy_floats", n, Pointer(ptr(dst)), Pointer(src), Long(n))
}

// FusedAttentionPack sets dst to g followed by zeros.
func (k Dispatcher) FusedAttentionPack(dst, g device.Buffer, a hostmath.Attention) {
	out, lse := packedParts(dst, a)
	k.each("copy_floats", a.OutLen(), Pointer(out), Pointer(ptr(g)), Long(a.OutLen()))
	k.each("fill_value", a.LSELen(), Pointer(lse), Long(a.LSELen()), Float(0))
}

// packedParts is the device pointers of a packed fused attention value's
// output and log-sum-exps.
func packedParts(b device.Buffer, a hostmath.Attention) (out, lse uintptr) {
	return ptr(b), ptr(b) + uintptr(4*a.OutLen())
}

// CacheWrite writes the new tokens' keys and values into the cache kv: one
// thread per key element (kvcache.cu). It reads the position back to
// check it, which waits for the device.
func (k Dispatcher) CacheWrite(kv, qkv, pos device.Buffer, c hostmath.KVCache) error {
	if err := k.checkCacheStart(pos, c); err != nil {
		return err
	}
	if c.Format != 0 {
		k.each("cache_write16", c.Batch*c.Seq*c.KVWidth(), Pointer(ptr(kv)), Pointer(ptr(qkv)), Pointer(ptr(pos)),
			Int(c.Batch), Int(c.Seq), Int(c.Heads), Int(c.NumKVHeads()), Int(c.HeadDim), Int(c.Context), Int(fp16(c.Format)))
		return nil
	}
	k.each("cache_write", c.Batch*c.Seq*c.KVWidth(), Pointer(ptr(kv)), Pointer(ptr(qkv)), Pointer(ptr(pos)),
		Int(c.Batch), Int(c.Seq), Int(c.Heads), Int(c.NumKVHeads()), Int(c.HeadDim), Int(c.Context))
	return nil
}

// fp16 is the kernels' int argument that says whether a 16-bit buffer
// holds fp16 (1) or bf16 (0) values.
func fp16(f half.Format) int {
	if f == half.FP16 {
		return 1
	}
	return 0
}

// CacheAttend sets dst to the new tokens' attention against the cache kv:
// one thread per query row (kvcache.cu). It reads the position back to
// check it, which waits for the device.
func (k Dispatcher) CacheAttend(dst, qkv, kv, pos device.Buffer, c hostmath.KVCache) error {
	if err := k.checkCacheStart(pos, c); err != nil {
		return err
	}
	if c.Format != 0 {
		k.each("cache_attend16", c.Batch*c.Heads*c.Seq, Pointer(ptr(dst)), Pointer(ptr(qkv)), Pointer(ptr(kv)), Pointer(ptr(pos)),
			Int(c.Batch), Int(c.Seq), Int(c.Heads), Int(c.NumKVHeads()), Int(c.HeadDim), Int(c.Context), Float(float32(c.Scale())),
			Int(fp16(c.Format)))
		return nil
	}
	k.each("cache_attend", c.Batch*c.Heads*c.Seq, Pointer(ptr(dst)), Pointer(ptr(qkv)), Pointer(ptr(kv)), Pointer(ptr(pos)),
		Int(c.Batch), Int(c.Seq), Int(c.Heads), Int(c.NumKVHeads()), Int(c.HeadDim), Int(c.Context), Float(float32(c.Scale())))
	return nil
}

// checkCacheStart reads the first new token's position, pos[0], and
// reports one that does not fit the cache (device.CacheStart).
func (k Dispatcher) checkCacheStart(pos device.Buffer, c hostmath.KVCache) error {
	var p float32
	if err := k.L.Read(unsafe.Pointer(&p), ptr(pos), 4); err != nil {
		return err
	}
	_, err := device.CacheStart(p, c)
	return err
}
