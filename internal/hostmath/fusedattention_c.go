//go:build !purego

package hostmath

// #cgo CFLAGS: -O3
// #cgo LDFLAGS: -lm
// #include "fusedattention.h"
import "C"

// fusedAttentionISA is the instruction set of the C kernels of
// fusedattention.h: the best the CPU has, AVX-512 or AVX2 with FMA
// (SetFusedAttentionVector and tests force AVX2 on a CPU with AVX-512).
var fusedAttentionISA = fusedAttentionBest

// fusedAttentionBest is the best instruction set of the C kernels that
// the CPU runs: C.GPUZ_ISA_SCALAR (0) where it runs neither.
var fusedAttentionBest = int(C.gpuz_fattn_isa())

// fusedAttentionISAs lists the instruction sets of the C kernels, worst
// first, by the names CPUVector gives them.
var fusedAttentionISAs = []struct {
	name string
	isa  int
}{{"AVX2", C.GPUZ_ISA_AVX2}, {"AVX-512", C.GPUZ_ISA_AVX512}}

// fusedAttentionC reports whether the float32 fused attention runs the C
// kernels (the CPU has AVX2 and FMA, or AVX-512); elsewhere, and when
// tests turn it off, it runs the Go kernels of fusedattention.go.
var fusedAttentionC = fusedAttentionISA != C.GPUZ_ISA_SCALAR

// fusedAttentionFloat32 is FusedAttention in the C kernel: the same tasks,
// a block of fusedBlock queries of one pair each.
func fusedAttentionFloat32(out, lse, qkv []float32, a Attention) {
	ld, d, s, dh := a.QKVWidth(), a.DModel(), a.Seq, a.HeadDim
	scale := float32(a.Scale())
	nb := (s + fusedBlock - 1) / fusedBlock
	scratchLen := int(C.gpuz_fattn_fwd_scratch(C.int(dh)))
	forEachPair[float32](a.Batch*a.Heads*nb, scratchLen, func(task int, scratch []float32) {
		i, r0 := task/nb, task%nb*fusedBlock
		r1 := min(r0+fusedBlock, s)
		at := a.pair(i)
		var o, l *C.float
		if out != nil {
			o = floatPtr(out[at.o:])
		}
		if lse != nil {
			l = floatPtr(lse[i*s:])
		}
		C.gpuz_fattn_fwd(C.int(fusedAttentionISA), floatPtr(qkv[at.q:]), floatPtr(qkv[at.k:]), floatPtr(qkv[at.v:]), C.ptrdiff_t(ld),
			C.int(r0), C.int(r1), C.int(a.blockEnd(r1)), cBool(a.Causal), C.int(dh), C.float(scale),
			o, C.ptrdiff_t(d), l, floatPtr(scratch))
	})
}

// fusedAttentionGradFloat32 is FusedAttentionGrad in the C kernel: a pair
// a task, the grouped key and value gradients summed as the Go kernel sums
// them.
func fusedAttentionGradFloat32(dqkv, qkv, out, lse, g, glse []float32, a Attention) {
	ld, d, s, dh := a.QKVWidth(), a.DModel(), a.Seq, a.HeadDim
	scale := float32(a.Scale())
	partsK := getScratch[float32](&groupPool, groupPartsLen(a))
	defer putScratch(&groupPool, partsK)
	partsV := getScratch[float32](&groupPool, groupPartsLen(a))
	defer putScratch(&groupPool, partsV)
	scratchLen := int(C.gpuz_fattn_bwd_scratch(C.int(s), C.int(dh)))
	forEachPair[float32](a.Batch*a.Heads, scratchLen, func(i int, scratch []float32) {
		at := a.pair(i)
		dk, ldk := groupPart(dqkv, *partsK, at, at.k, a)
		dv, ldv := groupPart(dqkv, *partsV, at, at.v, a)
		var gl *C.float
		if glse != nil {
			gl = floatPtr(glse[i*s:])
		}
		C.gpuz_fattn_bwd(C.int(fusedAttentionISA), floatPtr(dqkv[at.q:]), floatPtr(dk), C.ptrdiff_t(ldk), floatPtr(dv), C.ptrdiff_t(ldv),
			floatPtr(qkv[at.q:]), floatPtr(qkv[at.k:]), floatPtr(qkv[at.v:]), C.ptrdiff_t(ld),
			floatPtr(out[at.o:]), floatPtr(g[at.o:]), C.ptrdiff_t(d), floatPtr(lse[i*s:]), gl,
			C.int(s), C.int(dh), cBool(a.Causal), C.float(scale), floatPtr(scratch))
	})
	addGroups(dqkv, *partsK, d, a)
	addGroups(dqkv, *partsV, d+a.KVWidth(), a)
}
