package selftest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"unsafe"

	"gpuz/internal/device"
	"gpuz/internal/half"
	"gpuz/internal/hostmath"
)

// Case is one call of a device.Kernels method on random buffers. The
// call may write any of its buffers; all are compared afterwards.
type Case struct {
	Name string
	// Bufs makes the buffers' initial contents.
	Bufs func(r *rand.Rand) [][]float32
	// Call runs the method; value is its float64 result, if any.
	Call func(k device.Kernels, b []device.Buffer) (value float64, err error)
	// Workspace, when not 0, is the device workspace in bytes that makes
	// the case tile (the CPU shim honours it; real devices have more).
	Workspace int
}

// Tolerances of a kernel against the host: the GPU kernels add in other
// orders (trees, per-thread partial sums, double instead of float32
// accumulators), use expf (within 2 ulp) where the host uses its own exp32,
// and the GEMMs are cuBLAS's (gonum's on the CPU shim) instead of OpenBLAS's; each of these moves a
// float32 result by a few ulp of the largest term. An element passes when
// |device − host| ≤ RelTol·|host| + AbsTol·max|host| over its buffer.
const (
	RelTol = 1e-4
	AbsTol = 1e-5
)

func randn(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

func ints(r *rand.Rand, n, classes int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.IntN(classes))
	}
	return x
}

func zeros(n int) []float32 { return make([]float32, n) }

// halves returns x rounded to format f and packed two to a word, as a
// 16-bit buffer holds it.
func halves(f half.Format, x []float32) []float32 {
	words := make([]float32, half.Words(len(x)))
	h := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(words))), 2*len(words))
	for i, v := range x {
		if f == half.FP16 {
			h[i] = half.FP16FromFloat32(v)
		} else {
			h[i] = half.BF16FromFloat32(v)
		}
	}
	return words
}

// spread returns n values of every magnitude from 2^-30 to 2^20, of
// either sign, with zeros: fp16's subnormals, its overflow and the ties of
// both 16-bit formats' rounding among them.
func spread(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		if i%17 == 0 {
			continue
		}
		x[i] = float32(math.Ldexp(r.NormFloat64(), r.IntN(51)-30))
		switch i % 5 { // ties: the bits below the kept mantissa exactly half
		case 0: // of bf16's 7 bits
			x[i] = math.Float32frombits(math.Float32bits(x[i])&^0xffff | 0x8000)
		case 1: // of fp16's 10
			x[i] = math.Float32frombits(math.Float32bits(x[i])&^0x1fff | 0x1000)
		}
	}
	return x
}

func bufs(parts ...[]float32) [][]float32 { return parts }

// probs returns rows rows of n probabilities.
func probs(r *rand.Rand, rows, n int) []float32 {
	p := make([]float32, rows*n)
	for i := range rows {
		s := float32(0)
		for j := range n {
			p[i*n+j] = r.Float32() + 0.01
			s += p[i*n+j]
		}
		for j := range n {
			p[i*n+j] /= s
		}
	}
	return p
}

// noValue is the Call of a method that returns nothing.
func noValue(call func(k device.Kernels, b []device.Buffer)) func(device.Kernels, []device.Buffer) (float64, error) {
	return func(k device.Kernels, b []device.Buffer) (float64, error) {
		call(k, b)
		return 0, nil
	}
}

// errOnly is the Call of a method that returns only an error.
func errOnly(call func(k device.Kernels, b []device.Buffer) error) func(device.Kernels, []device.Buffer) (float64, error) {
	return func(k device.Kernels, b []device.Buffer) (float64, error) { return 0, call(k, b) }
}

// Cases returns one Case per device.Kernels method and shape family: small
// random inputs with odd sizes, several blocks, rows wider than a block,
// both attention masks, convolution paddings that grow, keep and crop, and
// ids out of range, which must fail as on the host.
func Cases() []Case {
	var cases []Case
	for _, t := range []struct{ a, b bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
		m, n, k := 7, 5, 9
		cases = append(cases, Case{
			Name: fmt.Sprintf("Gemm/transA=%v,transB=%v", t.a, t.b),
			Bufs: func(r *rand.Rand) [][]float32 { return bufs(randn(r, m*k), randn(r, k*n), zeros(m*n)) },
			Call: noValue(func(kk device.Kernels, b []device.Buffer) { kk.Gemm(t.a, t.b, m, n, k, b[0], b[1], b[2]) }),
		})
	}
	conv := []hostmath.ConvShape{
		{Batch: 2, InC: 3, InH: 7, InW: 6, OutC: 4, OutH: 7, OutW: 6, Kernel: 3, Pad: 1},
		{Batch: 1, InC: 2, InH: 5, InW: 5, OutC: 3, OutH: 4, OutW: 4, Kernel: 2, Pad: 0},
		{Batch: 2, InC: 1, InH: 4, InW: 3, OutC: 2, OutH: 6, OutW: 5, Kernel: 3, Pad: 2},
	}
	for i, s := range conv {
		x, w, y := s.Batch*s.InC*s.InH*s.InW, s.OutC*s.InC*s.Kernel*s.Kernel, s.Batch*s.OutC*s.OutH*s.OutW
		// The default workspace holds whole images; the tiled one two
		// output rows' column matrices (of the larger patch, the input
		// gradient's) besides the flipped weights.
		for _, tiled := range []bool{false, true} {
			suffix, ws, wsFlip := fmt.Sprintf("/shape%d", i), 0, 0
			if tiled {
				patch := max(s.InC, s.OutC) * s.Kernel * s.Kernel
				suffix += "/tiled"
				ws = 2 * 4 * patch * max(s.OutW, s.InW)
				wsFlip = ws + 4*w + 256
			}
			cases = append(cases,
				Case{Name: "Conv2d" + suffix, Workspace: ws,
					Bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(y), randn(r, x), randn(r, w), randn(r, s.OutC)) },
					Call: noValue(func(k device.Kernels, b []device.Buffer) { k.Conv2d(b[0], b[1], b[2], b[3], s) })},
				Case{Name: "Conv2dInputGrad" + suffix, Workspace: wsFlip,
					Bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(x), randn(r, y), randn(r, w)) },
					Call: noValue(func(k device.Kernels, b []device.Buffer) { k.Conv2dInputGrad(b[0], b[1], b[2], s) })},
				Case{Name: "Conv2dWeightGrad" + suffix, Workspace: ws,
					Bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(w), randn(r, x), randn(r, y)) },
					Call: noValue(func(k device.Kernels, b []device.Buffer) { k.Conv2dWeightGrad(b[0], b[1], b[2], s) })})
		}
		cases = append(cases, Case{Name: fmt.Sprintf("Conv2dBiasGrad/shape%d", i),
			Bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(s.OutC), randn(r, y)) },
			Call: noValue(func(k device.Kernels, b []device.Buffer) { k.Conv2dBiasGrad(b[0], b[1], s) })})
	}
	for _, f := range []half.Format{half.BF16, half.FP16} {
		for _, t := range []struct{ a, b bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
			m, n, k := 7, 5, 9
			cases = append(cases, Case{
				Name: fmt.Sprintf("GemmHalf/%s/transA=%v,transB=%v", f, t.a, t.b),
				Bufs: func(r *rand.Rand) [][]float32 {
					return bufs(halves(f, randn(r, m*k)), halves(f, randn(r, k*n)), zeros(m*n))
				},
				Call: noValue(func(kk device.Kernels, b []device.Buffer) { kk.GemmHalf(f, t.a, t.b, m, n, k, b[0], b[1], b[2]) }),
			})
		}
	}
	for _, f := range []half.Format{half.BF16, half.FP16} {
		const n = 1001 // odd: the last word holds one value
		cases = append(cases, Case{Name: "ToHalf+FromHalf/" + f.String(),
			Bufs: func(r *rand.Rand) [][]float32 { return bufs(spread(r, n), zeros(half.Words(n)), zeros(n)) },
			Call: noValue(func(k device.Kernels, b []device.Buffer) {
				k.ToHalf(b[1], b[0], n, f)
				k.FromHalf(b[2], b[1], n, f)
			})})
	}
	cases = append(cases,
		Case{Name: "AddRowVector", Bufs: func(r *rand.Rand) [][]float32 { return bufs(randn(r, 6*13), randn(r, 13)) },
			Call: noValue(func(k device.Kernels, b []device.Buffer) { k.AddRowVector(b[0], b[1]) })},
		Case{Name: "SumRows", Bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(11), randn(r, 37*11)) },
			Call: noValue(func(k device.Kernels, b []device.Buffer) { k.SumRows(b[0], b[1]) })},
		Case{Name: "LeakyReLU", Bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(1000), randn(r, 1000)) },
			Call: noValue(func(k device.Kernels, b []device.Buffer) { k.LeakyReLU(b[0], b[1], 0.01) })},
		Case{Name: "LeakyReLUGrad", Bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(1000), randn(r, 1000), randn(r, 1000)) },
			Call: noValue(func(k device.Kernels, b []device.Buffer) { k.LeakyReLUGrad(b[0], b[1], b[2], 0.01) })},
		Case{Name: "Add", Bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(777), randn(r, 777), randn(r, 777)) },
			Call: noValue(func(k device.Kernels, b []device.Buffer) { k.Add(b[0], b[1], b[2]) })},
		Case{Name: "MeanSquaredError", Bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(1), randn(r, 9000), randn(r, 9000)) },
			Call: noValue(func(k device.Kernels, b []device.Buffer) { k.MeanSquaredError(b[0], b[1], b[2]) })},
		Case{Name: "MeanSquaredErrorGrad", Bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(500), randn(r, 500), randn(r, 500), []float32{0.75})
		}, Call: noValue(func(k device.Kernels, b []device.Buffer) { k.MeanSquaredErrorGrad(b[0], b[1], b[2], b[3]) })},
		Case{Name: "Mean", Bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(1), randn(r, 5000)) },
			Call: noValue(func(k device.Kernels, b []device.Buffer) { k.Mean(b[0], b[1]) })},
		Case{Name: "Fill", Bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(300), []float32{1.5}) },
			Call: noValue(func(k device.Kernels, b []device.Buffer) { k.Fill(b[0], b[1], 0.25) })},
		Case{Name: "SumSquares", Bufs: func(r *rand.Rand) [][]float32 { return bufs(randn(r, 10001)) },
			Call: func(k device.Kernels, b []device.Buffer) (float64, error) { return k.SumSquares(b[0]), nil }},
		Case{Name: "AdamStep", Bufs: func(r *rand.Rand) [][]float32 {
			v := randn(r, 600)
			for i := range v {
				v[i] *= v[i]
			}
			return bufs(randn(r, 600), randn(r, 600), randn(r, 600), v)
		}, Call: noValue(func(k device.Kernels, b []device.Buffer) {
			k.AdamStep(hostmath.DefaultAdam(), b[0], b[1], b[2], b[3], 0.5, 3)
		})},
		Case{Name: "LayerNorm", Bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(5*300), randn(r, 5*300), randn(r, 300), randn(r, 300))
		}, Call: noValue(func(k device.Kernels, b []device.Buffer) { k.LayerNorm(b[0], b[1], b[2], b[3], 1e-5) })},
		Case{Name: "LayerNormInputGrad", Bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(5*300), randn(r, 5*300), randn(r, 300), randn(r, 5*300))
		}, Call: noValue(func(k device.Kernels, b []device.Buffer) { k.LayerNormInputGrad(b[0], b[1], b[2], b[3], 1e-5) })},
		Case{Name: "LayerNormWeightGrad", Bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(30), randn(r, 9*30), randn(r, 9*30))
		}, Call: noValue(func(k device.Kernels, b []device.Buffer) { k.LayerNormWeightGrad(b[0], b[1], b[2], 1e-5) })},
		Case{Name: "Embedding", Bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(8*6), ints(r, 8, 11), randn(r, 11*6), randn(r, 4*6))
		}, Call: errOnly(func(k device.Kernels, b []device.Buffer) error { return k.Embedding(b[0], b[1], b[2], b[3]) })},
		Case{Name: "Embedding/bad-id", Bufs: func(r *rand.Rand) [][]float32 {
			ids := ints(r, 8, 11)
			ids[5] = 11
			return bufs(zeros(8*6), ids, randn(r, 11*6), randn(r, 4*6))
		}, Call: errOnly(func(k device.Kernels, b []device.Buffer) error { return k.Embedding(b[0], b[1], b[2], b[3]) })},
		Case{Name: "EmbeddingGrad", Bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(11*6), ints(r, 20, 11), randn(r, 20*6))
		}, Call: errOnly(func(k device.Kernels, b []device.Buffer) error { return k.EmbeddingGrad(b[0], b[1], b[2]) })},
		Case{Name: "EmbeddingGrad/fractional-id", Bufs: func(r *rand.Rand) [][]float32 {
			ids := ints(r, 20, 11)
			ids[3] = 2.5
			return bufs(zeros(11*6), ids, randn(r, 20*6))
		}, Call: errOnly(func(k device.Kernels, b []device.Buffer) error { return k.EmbeddingGrad(b[0], b[1], b[2]) })},
		Case{Name: "SoftmaxCrossEntropy", Bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(1), randn(r, 6*300), ints(r, 6, 300))
		}, Call: errOnly(func(k device.Kernels, b []device.Buffer) error { return k.SoftmaxCrossEntropy(b[0], b[1], b[2]) })},
		Case{Name: "SoftmaxCrossEntropy/bad-target", Bufs: func(r *rand.Rand) [][]float32 {
			t := ints(r, 6, 300)
			t[2] = -1
			return bufs(zeros(1), randn(r, 6*300), t)
		}, Call: errOnly(func(k device.Kernels, b []device.Buffer) error { return k.SoftmaxCrossEntropy(b[0], b[1], b[2]) })},
		Case{Name: "SoftmaxCrossEntropyGrad", Bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(6*300), randn(r, 6*300), ints(r, 6, 300), []float32{1.25})
		}, Call: errOnly(func(k device.Kernels, b []device.Buffer) error {
			return k.SoftmaxCrossEntropyGrad(b[0], b[1], b[2], b[3])
		})},
	)
	// Attention without grouping, then grouped-query attention (6 query
	// heads sharing 2 key and value heads, and 6 sharing 6 given as such).
	for _, a := range []hostmath.Attention{
		{Batch: 2, Seq: 5, Heads: 2, HeadDim: 3, Causal: true},
		{Batch: 1, Seq: 7, Heads: 3, HeadDim: 4, Causal: false},
		{Batch: 2, Seq: 7, Heads: 6, HeadDim: 5, KVHeads: 2, Causal: true},
		{Batch: 2, Seq: 7, Heads: 6, HeadDim: 5, KVHeads: 2, Causal: false},
		{Batch: 1, Seq: 7, Heads: 6, HeadDim: 5, KVHeads: 6, Causal: true},
	} {
		qkv, pn, o := a.Batch*a.Seq*a.QKVWidth(), a.Batch*a.Heads*a.Seq*a.Seq, a.Batch*a.Seq*a.DModel()
		suffix := fmt.Sprintf("/causal=%v", a.Causal)
		if a.KVHeads != 0 {
			suffix = fmt.Sprintf("/kvheads=%d/%d%s", a.KVHeads, a.Heads, suffix)
		}
		cases = append(cases,
			Case{Name: "AttentionProbs" + suffix, Bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(pn), randn(r, qkv)) },
				Call: noValue(func(k device.Kernels, b []device.Buffer) { k.AttentionProbs(b[0], b[1], a) })},
			Case{Name: "AttentionProbsGrad" + suffix, Bufs: func(r *rand.Rand) [][]float32 {
				return bufs(zeros(qkv), randn(r, qkv), probs(r, a.Batch*a.Heads*a.Seq, a.Seq), randn(r, pn))
			}, Call: noValue(func(k device.Kernels, b []device.Buffer) { k.AttentionProbsGrad(b[0], b[1], b[2], b[3], a) })},
			Case{Name: "AttentionMix" + suffix, Bufs: func(r *rand.Rand) [][]float32 {
				return bufs(zeros(o), probs(r, a.Batch*a.Heads*a.Seq, a.Seq), randn(r, qkv))
			}, Call: noValue(func(k device.Kernels, b []device.Buffer) { k.AttentionMix(b[0], b[1], b[2], a) })},
			Case{Name: "AttentionMixProbsGrad" + suffix, Bufs: func(r *rand.Rand) [][]float32 {
				return bufs(zeros(pn), randn(r, o), randn(r, qkv))
			}, Call: noValue(func(k device.Kernels, b []device.Buffer) { k.AttentionMixProbsGrad(b[0], b[1], b[2], a) })},
			Case{Name: "AttentionMixValueGrad" + suffix, Bufs: func(r *rand.Rand) [][]float32 {
				return bufs(zeros(qkv), probs(r, a.Batch*a.Heads*a.Seq, a.Seq), randn(r, o))
			}, Call: noValue(func(k device.Kernels, b []device.Buffer) { k.AttentionMixValueGrad(b[0], b[1], b[2], a) })},
		)
		cases = append(cases, fusedAttentionCases(a, suffix)...)
	}
	// Fused attention over sizes that cross its 64-key blocks: a partial
	// diagonal block, and grouped-query heads.
	for _, a := range []hostmath.Attention{
		{Batch: 1, Seq: 130, Heads: 2, HeadDim: 5, Causal: true},
		{Batch: 2, Seq: 67, Heads: 4, HeadDim: 3, KVHeads: 2, Causal: false},
	} {
		cases = append(cases, fusedAttentionCases(a, fmt.Sprintf("/seq=%d/kvheads=%d/%d/causal=%v", a.Seq, a.NumKVHeads(), a.Heads, a.Causal))...)
	}
	cases = append(cases, llamaCases()...)
	cases = append(cases, gpt2Cases()...)
	cases = append(cases, quantCases()...)
	cases = append(cases, cacheCases()...)
	return cases
}

// cacheCases are the key-value cache's kernels' cases: grouped-query
// heads, a prefill of 3 new tokens from position 2 and a decode of one at
// the cache's last position, over a cache of random keys and values, in
// float32 and in each 16-bit format (the new keys and values rounded into
// it, bit for bit the host's rounding; 2·Elements() values packed two to
// a word).
func cacheCases() []Case {
	var cases []Case
	for _, tc := range []struct {
		seq, start int
	}{{3, 2}, {1, 7}} {
		c := hostmath.KVCache{Attention: hostmath.Attention{Batch: 2, Seq: tc.seq, Heads: 4, KVHeads: 2, HeadDim: 5, Causal: true}, Context: 8}
		pos := make([]float32, c.Batch*c.Seq)
		for i := range pos {
			pos[i] = float32(tc.start + i%c.Seq)
		}
		qkv, kv := c.Batch*c.Seq*c.QKVWidth(), 2*c.Elements()
		suffix := fmt.Sprintf("/seq=%d/start=%d", tc.seq, tc.start)
		cases = append(cases,
			Case{Name: "CacheWrite" + suffix, Bufs: func(r *rand.Rand) [][]float32 { return bufs(randn(r, kv), randn(r, qkv), pos) },
				Call: errOnly(func(k device.Kernels, b []device.Buffer) error { return k.CacheWrite(b[0], b[1], b[2], c) })},
			Case{Name: "CacheAttend" + suffix, Bufs: func(r *rand.Rand) [][]float32 {
				return bufs(zeros(c.Batch*c.Seq*c.DModel()), randn(r, qkv), randn(r, kv), pos)
			}, Call: errOnly(func(k device.Kernels, b []device.Buffer) error { return k.CacheAttend(b[0], b[1], b[2], b[3], c) })},
		)
		for _, f := range []half.Format{half.BF16, half.FP16} {
			c16 := c
			c16.Format = f
			cases = append(cases,
				Case{Name: "CacheWrite/" + f.String() + suffix, Bufs: func(r *rand.Rand) [][]float32 {
					return bufs(halves(f, randn(r, kv)), randn(r, qkv), pos)
				}, Call: errOnly(func(k device.Kernels, b []device.Buffer) error { return k.CacheWrite(b[0], b[1], b[2], c16) })},
				Case{Name: "CacheAttend/" + f.String() + suffix, Bufs: func(r *rand.Rand) [][]float32 {
					return bufs(zeros(c.Batch*c.Seq*c.DModel()), randn(r, qkv), halves(f, randn(r, kv)), pos)
				}, Call: errOnly(func(k device.Kernels, b []device.Buffer) error { return k.CacheAttend(b[0], b[1], b[2], b[3], c16) })},
			)
		}
	}
	return cases
}

// fusedAttentionCases are the fused attention kernels' cases for a: the
// packed output and log-sum-exps, the gradient from the host's output and
// log-sum-exps of the same qkv (so that the recomputed probabilities are
// those of a softmax) and a random packed gradient (the log-sum-exps'
// included), and the copies in and out of the packed value.
func fusedAttentionCases(a hostmath.Attention, suffix string) []Case {
	qkv, o, rows := a.Batch*a.Seq*a.QKVWidth(), a.OutLen(), a.LSELen()
	return []Case{
		{Name: "FusedAttention" + suffix, Bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(o+rows), randn(r, qkv)) },
			Call: noValue(func(k device.Kernels, b []device.Buffer) { k.FusedAttention(b[0], b[1], a) })},
		{Name: "FusedAttentionGrad" + suffix, Bufs: func(r *rand.Rand) [][]float32 {
			x, out, lse := randn(r, qkv), make([]float32, o), make([]float32, rows)
			hostmath.FusedAttention(out, lse, x, a)
			return bufs(zeros(qkv), x, out, lse, randn(r, o+rows))
		}, Call: noValue(func(k device.Kernels, b []device.Buffer) { k.FusedAttentionGrad(b[0], b[1], b[2], b[3], b[4], a) })},
		{Name: "FusedAttentionUnpack/out" + suffix, Bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(o), randn(r, o+rows)) },
			Call: noValue(func(k device.Kernels, b []device.Buffer) { k.FusedAttentionUnpack(b[0], b[1], false, a) })},
		{Name: "FusedAttentionUnpack/lse" + suffix, Bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(rows), randn(r, o+rows)) },
			Call: noValue(func(k device.Kernels, b []device.Buffer) { k.FusedAttentionUnpack(b[0], b[1], true, a) })},
		{Name: "FusedAttentionPack" + suffix, Bufs: func(r *rand.Rand) [][]float32 { return bufs(randn(r, o+rows), randn(r, o)) },
			Call: noValue(func(k device.Kernels, b []device.Buffer) { k.FusedAttentionPack(b[0], b[1], a) })},
	}
}
