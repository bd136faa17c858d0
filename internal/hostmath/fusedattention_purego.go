//go:build purego

package hostmath

// fusedAttentionC is false without cgo: the float32 fused attention runs
// the Go kernels.
var fusedAttentionC = false

// fusedAttentionISA and fusedAttentionISAs: no C kernels.
var (
	fusedAttentionISA, fusedAttentionBest = 0, 0
	fusedAttentionISAs                    []struct {
		name string
		isa  int
	}
)

func fusedAttentionFloat32(out, lse, qkv []float32, a Attention) {
	panic("hostmath: no C fused attention in a purego build")
}

func fusedAttentionGradFloat32(dqkv, qkv, out, lse, g, glse []float32, a Attention) {
	panic("hostmath: no C fused attention in a purego build")
}
