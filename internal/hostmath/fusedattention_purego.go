//go:build purego

package hostmath

// fusedAttentionC is false without cgo: the float32 fused attention runs
// the Go kernels.
var fusedAttentionC = false

func fusedAttentionFloat32(out, lse, qkv []float32, a Attention) {
	panic("hostmath: no C fused attention in a purego build")
}

func fusedAttentionGradFloat32(dqkv, qkv, out, lse, g []float32, a Attention) {
	panic("hostmath: no C fused attention in a purego build")
}
