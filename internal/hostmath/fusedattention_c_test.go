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
// fusedattention.h, in every instruction set this CPU runs (AVX2 and
// AVX-512), with the Go kernels, which take the scores in another order
// (not transposed, the scale applied to each dot product rather than to
// the queries) and math.Exp: within TestFusedAttention's float32
// tolerances, relative to the largest magnitude, output 2e-5, gradients
// (the log-sum-exps' included) 1e-4 (1e-3 with logits of hundreds),
// log-sum-exps 1e-5 absolutely against their magnitude; compares the AVX2
// kernels with the AVX-512 ones within the same tolerances (the same sums
// in the same order, but softmax.h's exponentials in two widths); and
// checks that each gives the same bits at 1, 2 and 5 threads.
func TestFusedAttentionFloat32C(t *testing.T) {
	if !fusedAttentionC {
		t.Skip("the C kernels do not run on this CPU or in this build")
	}
	defer SetThreads(Threads())
	defer func(isa int) { fusedAttentionISA, fusedAttentionC = isa, true }(fusedAttentionISA)
	run := func(c fusedCase, isa int) [3][]float32 {
		fusedAttentionISA, fusedAttentionC = isa, isa != 0
		a := c.Attention
		qkv64, g64, glse64 := fusedInputsLSE(c)
		qkv, g := toFloat32(qkv64), toFloat32(g64)
		out, lse, dqkv := make([]float32, a.Batch*a.Seq*a.DModel()), make([]float32, a.Batch*a.Heads*a.Seq), make([]float32, len(qkv))
		FusedAttention(out, lse, qkv, a)
		FusedAttentionGrad(dqkv, qkv, out, lse, g, toFloat32(glse64), a)
		return [3][]float32{out, lse, dqkv}
	}
	for _, c := range fusedCCases {
		t.Run(fmt.Sprintf("%+v/x%g", c.Attention, c.qScale), func(t *testing.T) {
			SetThreads(1)
			want := run(c, 0)
			tol, gradTol := 2e-5, 1e-4
			if c.qScale > 100 {
				tol, gradTol = 1e-3, 1e-3
			}
			byISA := map[string][3][]float32{}
			for _, impl := range fusedAttentionISAs {
				if impl.isa > fusedAttentionBest {
					continue
				}
				SetThreads(1)
				got := run(c, impl.isa)
				byISA[impl.name] = got
				near(t, impl.name+" output", got[0], want[0], tol)
				near(t, impl.name+" lse", got[1], want[1], 1e-5)
				near(t, impl.name+" gradient", got[2], want[2], gradTol)
				for _, threads := range []int{2, 5} {
					SetThreads(threads)
					again := run(c, impl.isa)
					for k, name := range []string{"output", "lse", "gradient"} {
						same(t, fmt.Sprintf("%s %s at %d threads", impl.name, name, threads), again[k], got[k])
					}
				}
			}
			if avx2, ok := byISA["AVX2"]; ok {
				if avx512, ok := byISA["AVX-512"]; ok {
					near(t, "AVX2 output against AVX-512", avx2[0], avx512[0], tol)
					near(t, "AVX2 lse against AVX-512", avx2[1], avx512[1], 1e-5)
					near(t, "AVX2 gradient against AVX-512", avx2[2], avx512[2], gradTol)
				}
			}
		})
	}
}

// TestSetFusedAttentionVector checks that the vector extension of the
// fused attention kernels can be forced to each that the CPU runs, and to
// Go, and is refused beyond.
func TestSetFusedAttentionVector(t *testing.T) {
	start := FusedAttentionVector()
	defer SetFusedAttentionVector(start)
	for _, impl := range fusedAttentionISAs {
		_, err := SetFusedAttentionVector(impl.name)
		switch {
		case impl.isa <= fusedAttentionBest && err != nil:
			t.Errorf("%s: %v", impl.name, err)
		case impl.isa <= fusedAttentionBest && FusedAttentionVector() != impl.name:
			t.Errorf("set %s, runs %s", impl.name, FusedAttentionVector())
		case impl.isa > fusedAttentionBest && err == nil:
			t.Errorf("%s accepted on a CPU whose best is %d", impl.name, fusedAttentionBest)
		}
	}
	if _, err := SetFusedAttentionVector("Go"); err != nil || FusedAttentionVector() != "Go" {
		t.Errorf("Go: %v, runs %s", err, FusedAttentionVector())
	}
	if _, err := SetFusedAttentionVector("NEON"); err == nil {
		t.Errorf("NEON accepted")
	}
}
