package hostmath

import (
	"fmt"
	"testing"
)

// fusedCCases are fusedCases and shapes whose heads are wider than the C
// kernel's 64 columns (80: a second, partial panel) or fill them exactly
// (64, at several blocks of queries and keys, grouped).
var fusedCCases = append([]fusedCase{
	{Attention{Batch: 1, Seq: 200, Heads: 9, HeadDim: 64, KVHeads: 3, Causal: true}, 1},
	{Attention{Batch: 2, Seq: 130, Heads: 2, HeadDim: 80}, 3},
	{Attention{Batch: 1, Seq: 129, Heads: 4, HeadDim: 17, KVHeads: 2, Causal: true}, 1e3},
}, fusedCases...)

// TestFusedAttentionFloat32C compares the float32 C kernels of
// fusedattention.h with the Go kernels, which take the scores in another
// order (not transposed, the scale applied to each dot product rather than
// to the queries) and math.Exp: within TestFusedAttention's float32
// tolerances, relative to the largest magnitude, output 2e-5, gradients
// 1e-4 (1e-3 with logits of hundreds), log-sum-exps 1e-5 absolutely
// against their magnitude; and checks that the C kernels give the same
// bits at 1, 2 and 5 threads.
func TestFusedAttentionFloat32C(t *testing.T) {
	if !fusedAttentionC {
		t.Skip("the C kernels do not run on this CPU or in this build")
	}
	defer SetThreads(Threads())
	run := func(c fusedCase, useC bool) [3][]float32 {
		defer func() { fusedAttentionC = true }()
		fusedAttentionC = useC
		a := c.Attention
		qkv64, g64 := fusedInputs(c)
		qkv, g := toFloat32(qkv64), toFloat32(g64)
		out, lse, dqkv := make([]float32, a.Batch*a.Seq*a.DModel()), make([]float32, a.Batch*a.Heads*a.Seq), make([]float32, len(qkv))
		FusedAttention(out, lse, qkv, a)
		FusedAttentionGrad(dqkv, qkv, out, lse, g, a)
		return [3][]float32{out, lse, dqkv}
	}
	for _, c := range fusedCCases {
		t.Run(fmt.Sprintf("%+v/x%g", c.Attention, c.qScale), func(t *testing.T) {
			SetThreads(1)
			want := run(c, false)
			got := run(c, true)
			tol, gradTol := 2e-5, 1e-4
			if c.qScale > 100 {
				tol, gradTol = 1e-3, 1e-3
			}
			near(t, "output", got[0], want[0], tol)
			near(t, "lse", got[1], want[1], 1e-5)
			near(t, "gradient", got[2], want[2], gradTol)
			for _, threads := range []int{2, 5} {
				SetThreads(threads)
				again := run(c, true)
				for k, name := range []string{"output", "lse", "gradient"} {
					same(t, fmt.Sprintf("%s at %d threads", name, threads), again[k], got[k])
				}
			}
		})
	}
}
