//go:build !gpuzcuda

package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gpuz/internal/device"
	"gpuz/internal/kernels"
)

// kernelCase is one call of a device.Kernels method on random buffers. The
// call may write any of its buffers; all are compared afterwards.
type kernelCase struct {
	name string
	// bufs makes the buffers' initial contents.
	bufs func(r *rand.Rand) [][]float32
	// call runs the method; value is its float64 result, if any.
	call func(k device.Kernels, b []device.Buffer) (value float64, err error)
	// workspace overrides the shim's workspace bytes (tiling checks).
	workspace int
}

// Tolerances of the comparison with the host: the GPU kernels add in other
// orders (trees, per-thread partial sums, double instead of float32
// accumulators), use expf (within 2 ulp) where the host uses its own exp32,
// and the GEMMs are gonum's instead of OpenBLAS's; each of these moves a
// float32 result by a few ulp of the largest term. An element passes when
// |shim − host| ≤ relTol·|host| + absTol·max|host| over its buffer.
const (
	relTol = 1e-4
	absTol = 1e-5
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

func kernelCases() []kernelCase {
	none := func(err error) (float64, error) { return 0, err }
	var cases []kernelCase
	for _, t := range []struct{ a, b bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
		m, n, k := 7, 5, 9
		cases = append(cases, kernelCase{
			name: fmt.Sprintf("Gemm/transA=%v,transB=%v", t.a, t.b),
			bufs: func(r *rand.Rand) [][]float32 { return bufs(randn(r, m*k), randn(r, k*n), zeros(m*n)) },
			call: func(kk device.Kernels, b []device.Buffer) (float64, error) {
				kk.Gemm(t.a, t.b, m, n, k, b[0], b[1], b[2])
				return none(nil)
			},
		})
	}
	conv := []kernels.ConvShape{
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
				kernelCase{name: "Conv2d" + suffix, workspace: ws,
					bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(y), randn(r, x), randn(r, w), randn(r, s.OutC)) },
					call: func(k device.Kernels, b []device.Buffer) (float64, error) {
						k.Conv2d(b[0], b[1], b[2], b[3], s)
						return none(nil)
					}},
				kernelCase{name: "Conv2dInputGrad" + suffix, workspace: wsFlip,
					bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(x), randn(r, y), randn(r, w)) },
					call: func(k device.Kernels, b []device.Buffer) (float64, error) {
						k.Conv2dInputGrad(b[0], b[1], b[2], s)
						return none(nil)
					}},
				kernelCase{name: "Conv2dWeightGrad" + suffix, workspace: ws,
					bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(w), randn(r, x), randn(r, y)) },
					call: func(k device.Kernels, b []device.Buffer) (float64, error) {
						k.Conv2dWeightGrad(b[0], b[1], b[2], s)
						return none(nil)
					}})
		}
		cases = append(cases, kernelCase{name: fmt.Sprintf("Conv2dBiasGrad/shape%d", i),
			bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(s.OutC), randn(r, y)) },
			call: func(k device.Kernels, b []device.Buffer) (float64, error) {
				k.Conv2dBiasGrad(b[0], b[1], s)
				return none(nil)
			}})
	}
	cases = append(cases,
		kernelCase{name: "AddRowVector", bufs: func(r *rand.Rand) [][]float32 { return bufs(randn(r, 6*13), randn(r, 13)) },
			call: func(k device.Kernels, b []device.Buffer) (float64, error) {
				k.AddRowVector(b[0], b[1])
				return none(nil)
			}},
		kernelCase{name: "SumRows", bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(11), randn(r, 37*11)) },
			call: func(k device.Kernels, b []device.Buffer) (float64, error) { k.SumRows(b[0], b[1]); return none(nil) }},
		kernelCase{name: "LeakyReLU", bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(1000), randn(r, 1000)) },
			call: func(k device.Kernels, b []device.Buffer) (float64, error) {
				k.LeakyReLU(b[0], b[1], 0.01)
				return none(nil)
			}},
		kernelCase{name: "LeakyReLUGrad", bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(1000), randn(r, 1000), randn(r, 1000)) },
			call: func(k device.Kernels, b []device.Buffer) (float64, error) {
				k.LeakyReLUGrad(b[0], b[1], b[2], 0.01)
				return none(nil)
			}},
		kernelCase{name: "Add", bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(777), randn(r, 777), randn(r, 777)) },
			call: func(k device.Kernels, b []device.Buffer) (float64, error) { k.Add(b[0], b[1], b[2]); return none(nil) }},
		kernelCase{name: "MeanSquaredError", bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(1), randn(r, 9000), randn(r, 9000)) },
			call: func(k device.Kernels, b []device.Buffer) (float64, error) {
				k.MeanSquaredError(b[0], b[1], b[2])
				return none(nil)
			}},
		kernelCase{name: "MeanSquaredErrorGrad", bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(500), randn(r, 500), randn(r, 500), []float32{0.75})
		}, call: func(k device.Kernels, b []device.Buffer) (float64, error) {
			k.MeanSquaredErrorGrad(b[0], b[1], b[2], b[3])
			return none(nil)
		}},
		kernelCase{name: "Mean", bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(1), randn(r, 5000)) },
			call: func(k device.Kernels, b []device.Buffer) (float64, error) { k.Mean(b[0], b[1]); return none(nil) }},
		kernelCase{name: "Fill", bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(300), []float32{1.5}) },
			call: func(k device.Kernels, b []device.Buffer) (float64, error) { k.Fill(b[0], b[1], 0.25); return none(nil) }},
		kernelCase{name: "SumSquares", bufs: func(r *rand.Rand) [][]float32 { return bufs(randn(r, 10001)) },
			call: func(k device.Kernels, b []device.Buffer) (float64, error) { return k.SumSquares(b[0]), nil }},
		kernelCase{name: "AdamStep", bufs: func(r *rand.Rand) [][]float32 {
			v := randn(r, 600)
			for i := range v {
				v[i] *= v[i]
			}
			return bufs(randn(r, 600), randn(r, 600), randn(r, 600), v)
		}, call: func(k device.Kernels, b []device.Buffer) (float64, error) {
			k.AdamStep(kernels.DefaultAdam, b[0], b[1], b[2], b[3], 0.5, 3)
			return none(nil)
		}},
		kernelCase{name: "LayerNorm", bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(5*300), randn(r, 5*300), randn(r, 300), randn(r, 300))
		}, call: func(k device.Kernels, b []device.Buffer) (float64, error) {
			k.LayerNorm(b[0], b[1], b[2], b[3], 1e-5)
			return none(nil)
		}},
		kernelCase{name: "LayerNormInputGrad", bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(5*300), randn(r, 5*300), randn(r, 300), randn(r, 5*300))
		}, call: func(k device.Kernels, b []device.Buffer) (float64, error) {
			k.LayerNormInputGrad(b[0], b[1], b[2], b[3], 1e-5)
			return none(nil)
		}},
		kernelCase{name: "LayerNormWeightGrad", bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(30), randn(r, 9*30), randn(r, 9*30))
		}, call: func(k device.Kernels, b []device.Buffer) (float64, error) {
			k.LayerNormWeightGrad(b[0], b[1], b[2], 1e-5)
			return none(nil)
		}},
		kernelCase{name: "Embedding", bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(8*6), ints(r, 8, 11), randn(r, 11*6), randn(r, 4*6))
		}, call: func(k device.Kernels, b []device.Buffer) (float64, error) {
			return none(k.Embedding(b[0], b[1], b[2], b[3]))
		}},
		kernelCase{name: "Embedding/bad-id", bufs: func(r *rand.Rand) [][]float32 {
			ids := ints(r, 8, 11)
			ids[5] = 11
			return bufs(zeros(8*6), ids, randn(r, 11*6), randn(r, 4*6))
		}, call: func(k device.Kernels, b []device.Buffer) (float64, error) {
			return none(k.Embedding(b[0], b[1], b[2], b[3]))
		}},
		kernelCase{name: "EmbeddingGrad", bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(11*6), ints(r, 20, 11), randn(r, 20*6))
		}, call: func(k device.Kernels, b []device.Buffer) (float64, error) {
			return none(k.EmbeddingGrad(b[0], b[1], b[2]))
		}},
		kernelCase{name: "EmbeddingGrad/fractional-id", bufs: func(r *rand.Rand) [][]float32 {
			ids := ints(r, 20, 11)
			ids[3] = 2.5
			return bufs(zeros(11*6), ids, randn(r, 20*6))
		}, call: func(k device.Kernels, b []device.Buffer) (float64, error) {
			return none(k.EmbeddingGrad(b[0], b[1], b[2]))
		}},
		kernelCase{name: "SoftmaxCrossEntropy", bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(1), randn(r, 6*300), ints(r, 6, 300))
		}, call: func(k device.Kernels, b []device.Buffer) (float64, error) {
			return none(k.SoftmaxCrossEntropy(b[0], b[1], b[2]))
		}},
		kernelCase{name: "SoftmaxCrossEntropy/bad-target", bufs: func(r *rand.Rand) [][]float32 {
			t := ints(r, 6, 300)
			t[2] = -1
			return bufs(zeros(1), randn(r, 6*300), t)
		}, call: func(k device.Kernels, b []device.Buffer) (float64, error) {
			return none(k.SoftmaxCrossEntropy(b[0], b[1], b[2]))
		}},
		kernelCase{name: "SoftmaxCrossEntropyGrad", bufs: func(r *rand.Rand) [][]float32 {
			return bufs(zeros(6*300), randn(r, 6*300), ints(r, 6, 300), []float32{1.25})
		}, call: func(k device.Kernels, b []device.Buffer) (float64, error) {
			return none(k.SoftmaxCrossEntropyGrad(b[0], b[1], b[2], b[3]))
		}},
	)
	for _, a := range []kernels.Attention{
		{Batch: 2, Seq: 5, Heads: 2, HeadDim: 3, Causal: true},
		{Batch: 1, Seq: 7, Heads: 3, HeadDim: 4, Causal: false},
	} {
		qkv, pn, o := a.Batch*a.Seq*3*a.DModel(), a.Batch*a.Heads*a.Seq*a.Seq, a.Batch*a.Seq*a.DModel()
		suffix := fmt.Sprintf("/causal=%v", a.Causal)
		cases = append(cases,
			kernelCase{name: "AttentionProbs" + suffix, bufs: func(r *rand.Rand) [][]float32 { return bufs(zeros(pn), randn(r, qkv)) },
				call: func(k device.Kernels, b []device.Buffer) (float64, error) {
					k.AttentionProbs(b[0], b[1], a)
					return none(nil)
				}},
			kernelCase{name: "AttentionProbsGrad" + suffix, bufs: func(r *rand.Rand) [][]float32 {
				return bufs(zeros(qkv), randn(r, qkv), probs(r, a.Batch*a.Heads*a.Seq, a.Seq), randn(r, pn))
			}, call: func(k device.Kernels, b []device.Buffer) (float64, error) {
				k.AttentionProbsGrad(b[0], b[1], b[2], b[3], a)
				return none(nil)
			}},
			kernelCase{name: "AttentionMix" + suffix, bufs: func(r *rand.Rand) [][]float32 {
				return bufs(zeros(o), probs(r, a.Batch*a.Heads*a.Seq, a.Seq), randn(r, qkv))
			}, call: func(k device.Kernels, b []device.Buffer) (float64, error) {
				k.AttentionMix(b[0], b[1], b[2], a)
				return none(nil)
			}},
			kernelCase{name: "AttentionMixProbsGrad" + suffix, bufs: func(r *rand.Rand) [][]float32 {
				return bufs(zeros(pn), randn(r, o), randn(r, qkv))
			}, call: func(k device.Kernels, b []device.Buffer) (float64, error) {
				k.AttentionMixProbsGrad(b[0], b[1], b[2], a)
				return none(nil)
			}},
			kernelCase{name: "AttentionMixValueGrad" + suffix, bufs: func(r *rand.Rand) [][]float32 {
				return bufs(zeros(qkv), probs(r, a.Batch*a.Heads*a.Seq, a.Seq), randn(r, o))
			}, call: func(k device.Kernels, b []device.Buffer) (float64, error) {
				k.AttentionMixValueGrad(b[0], b[1], b[2], a)
				return none(nil)
			}},
		)
	}
	return cases
}

// runHost runs a case on the host device.
func runHost(t *testing.T, c kernelCase, data [][]float32) ([][]float32, float64, error) {
	h := device.NewHost()
	b := make([]device.Buffer, len(data))
	for i, d := range data {
		var err error
		if b[i], err = h.Alloc(len(d)); err != nil {
			t.Fatal(err)
		}
		if err := h.Upload(b[i], d); err != nil {
			t.Fatal(err)
		}
	}
	v, err := c.call(h.Kernels(), b)
	out := make([][]float32, len(b))
	for i := range b {
		out[i] = append([]float32(nil), device.Floats(b[i])...)
	}
	return out, v, err
}

// runShim runs a case on the shim in an order, checking the guard zones.
func runShim(t *testing.T, c kernelCase, data [][]float32, order Order) ([][]float32, float64, error) {
	ws := c.workspace
	if ws == 0 {
		ws = 1 << 16
	}
	s := NewShim(order, 42, ws)
	defer s.Free()
	b := make([]device.Buffer, len(data))
	for i, d := range data {
		sb := s.Alloc(len(d))
		copy(sb.Floats(), d)
		b[i] = sb
	}
	v, err := c.call(Kernels{L: s}, b)
	if err == nil {
		err = s.Err()
	}
	if gerr := s.CheckGuards(); gerr != nil {
		t.Fatalf("%s: %v", order, gerr)
	}
	out := make([][]float32, len(b))
	for i := range b {
		out[i] = append([]float32(nil), b[i].(*ShimBuffer).Floats()...)
	}
	return out, v, err
}

// TestKernelsMatchHost runs every kernel on the shim in three orders
// against the host kernels: the results must be within the tolerance of
// the host's, bit-identical across orders (the kernels are deterministic
// whatever the scheduling), no output may keep the allocation marker, no
// guard zone may be written, and errors must be the host's.
func TestKernelsMatchHost(t *testing.T) {
	for _, c := range kernelCases() {
		t.Run(c.name, func(t *testing.T) {
			data := c.bufs(rand.New(rand.NewPCG(1, uint64(len(c.name)))))
			want, wantV, wantErr := runHost(t, c, data)
			var first [][]float32
			for _, order := range []Order{Forward, Reverse, Shuffled} {
				got, gotV, err := runShim(t, c, data, order)
				if fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Fatalf("%s: error %v, host %v", order, err, wantErr)
				}
				if wantErr != nil {
					continue
				}
				if d := math.Abs(gotV - wantV); d > relTol*math.Abs(wantV) {
					t.Errorf("%s: value %v, host %v", order, gotV, wantV)
				}
				for i := range got {
					compareBuffer(t, fmt.Sprintf("%s: buffer %d", order, i), got[i], want[i])
				}
				if first == nil {
					first = got
					continue
				}
				for i := range got {
					for j := range got[i] {
						if math.Float32bits(got[i][j]) != math.Float32bits(first[i][j]) {
							t.Fatalf("%s: buffer %d element %d = %v, forward order gave %v: the result depends on the schedule", order, i, j, got[i][j], first[i][j])
						}
					}
				}
			}
		})
	}
}

func compareBuffer(t *testing.T, what string, got, want []float32) {
	t.Helper()
	scale := 0.0
	for _, w := range want {
		scale = max(scale, math.Abs(float64(w)))
	}
	for j := range got {
		if isMarker(got[j]) {
			t.Fatalf("%s: element %d was never written", what, j)
		}
		g, w := float64(got[j]), float64(want[j])
		if math.IsNaN(g) || math.Abs(g-w) > relTol*math.Abs(w)+absTol*scale {
			t.Fatalf("%s: element %d = %v, host %v (tolerance %.1e relative + %.1e of %.3g)", what, j, g, w, relTol, absTol, scale)
		}
	}
}

// TestSignaturesMatchShim checks that the shim's thunks and Signatures
// name the same kernels with the same parameter kinds.
func TestSignaturesMatchShim(t *testing.T) {
	shim := ShimKernels()
	for _, name := range sortedNames(Signatures) {
		if shim[name] != Signatures[name] {
			t.Errorf("kernel %s: Signatures %q, shim %q", name, Signatures[name], shim[name])
		}
	}
	for _, name := range sortedNames(shim) {
		if _, ok := Signatures[name]; !ok {
			t.Errorf("shim kernel %s missing from Signatures", name)
		}
	}
}
