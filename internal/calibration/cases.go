package calibration

import (
	"fmt"
	"strings"

	"gorgonia.org/tensor"

	"gpuz/internal/ops"
)

// Case is one op at one set of argument shapes, as Samples times it.
type Case struct {
	Spec   ops.Spec
	Shapes []tensor.Shape
}

// String names the case: the op and its arguments' shapes, e.g.
// "Linear [8 96] [96 96] [96]".
func (c Case) String() string {
	parts := []string{opName(ops.New(c.Spec))}
	for _, s := range c.Shapes {
		parts = append(parts, fmt.Sprint([]int(s)))
	}
	return strings.Join(parts, " ")
}

// launcher returns the case's op as the engine runs it.
func (c Case) launcher() (launcher, error) {
	l, ok := ops.New(c.Spec).(launcher)
	if !ok {
		return nil, fmt.Errorf("calibrating %v: the op has no Launch or no Cost", c.Spec)
	}
	return l, nil
}

// The shapes of Cases, each class's from a launch that its fixed cost
// decides to ones its rate decides, about the workloads' sizes at --scale
// small (which the held-out runs are) and --scale demo, but none of theirs.
var (
	// productShapes are Linear's rows, inputs and outputs: one row of 16,
	// the tiny linear workload's 150 rows of 16, and batches through
	// layers from attention's widths to the linear workload's.
	productShapes = [][3]int{{1, 16, 16}, {150, 16, 16}, {96, 24, 72}, {8, 96, 96}, {16, 256, 256}, {30, 1000, 1000}}
	// convShapes are a convolution's batch, input and output channels,
	// image size and kernel (padded to keep the size, as resnet's).
	convShapes = [][5]int{{1, 1, 1, 4, 3}, {1, 4, 8, 16, 3}, {2, 8, 4, 24, 3}, {1, 6, 12, 40, 3}, {1, 3, 8, 32, 5}}
	// attentionShapes are attention's batch, sequence length, heads and
	// width.
	attentionShapes = [][4]int{{1, 4, 1, 4}, {2, 16, 2, 16}, {3, 24, 4, 24}, {1, 64, 2, 32}, {2, 48, 4, 48}}
	// llmProductShapes are the llm workload's products' rows, inputs and
	// outputs (Projection, nn.Linear without a bias, and GPT-2's Conv1D,
	// x·W + b, with their gradients): one row of 16, then tokens through
	// widths from a small model's attention to its MLP's.
	llmProductShapes = [][3]int{{1, 16, 16}, {32, 64, 192}, {64, 256, 1536}, {96, 576, 576}}
	// layerNormShapes are LayerNorm's rows and width.
	layerNormShapes = [][2]int{{1, 8}, {64, 24}, {96, 48}, {512, 128}}
	// rmsNormShapes are RMSNorm's rows and width, the llm workload's
	// tokens and hidden sizes.
	rmsNormShapes = [][2]int{{1, 8}, {32, 96}, {96, 576}, {256, 768}}
	// elementwiseSizes are the element-wise kernels' element counts.
	elementwiseSizes = []int{16, 1 << 10, 1 << 13, 1 << 16, 1 << 19}
)

// Cases are the op cases Samples times: for each class of
// perfmodel.KernelClasses the ops of that class that the workloads run,
// forward and backward, and the element-wise ops (Add, LeakyReLU and its
// gradient, a bias gradient), each at several shapes. The llm workload's
// element-wise kernels (GELUTanh, SwiGLU, Rotary, their gradients, the
// position table's add and gradient, TokenEmbedding's gather) are not
// timed: the fit decides their class from the others. Timing GELUTanh,
// SwiGLU and Rotary with them fitted that class's compute fraction at
// 0.06 of the host's FP32 rate (their exponentials and tanh cost more
// than their counted FLOPs), which made every element-wise kernel bound
// by compute: the held-out runs' median error after fitting was 57%
// against 44% without them (3 rounds each, one after the other, on the
// development machine).
func Cases() []Case {
	var cases []Case
	add := func(spec ops.Spec, shapes ...tensor.Shape) { cases = append(cases, Case{spec, shapes}) }
	for _, s := range productShapes {
		rows, in, out := s[0], s[1], s[2]
		x, w, g := tensor.Shape{rows, in}, tensor.Shape{out, in}, tensor.Shape{rows, out}
		add(ops.Linear{}, x, w, tensor.Shape{out})
		add(ops.LinearInputGrad{}, g, w)
		add(ops.LinearWeightGrad{}, g, x)
	}
	for _, s := range llmProductShapes {
		rows, in, out := s[0], s[1], s[2]
		x, g := tensor.Shape{rows, in}, tensor.Shape{rows, out}
		add(ops.Projection{}, x, tensor.Shape{out, in})
		add(ops.Conv1D{}, x, tensor.Shape{in, out}, tensor.Shape{out})
		add(ops.Conv1DInputGrad{}, g, tensor.Shape{in, out})
		add(ops.Conv1DWeightGrad{}, x, g)
	}
	for _, s := range convShapes {
		batch, in, out, size, k := s[0], s[1], s[2], s[3], s[4]
		x, w, g := tensor.Shape{batch, in, size, size}, tensor.Shape{out, in, k, k}, tensor.Shape{batch, out, size, size}
		add(ops.Conv2d{Pad: k / 2}, x, w, tensor.Shape{out})
		add(ops.Conv2dInputGrad{Pad: k / 2}, g, w)
		add(ops.Conv2dWeightGrad{Pad: k / 2}, x, g)
	}
	for _, s := range attentionShapes {
		batch, seq, heads, d := s[0], s[1], s[2], s[3]
		cfg := ops.AttentionConfig{Heads: heads, SeqLen: seq, Causal: true}
		qkv, probs, out := tensor.Shape{batch * seq, 3 * d}, tensor.Shape{batch, heads, seq, seq}, tensor.Shape{batch * seq, d}
		add(ops.AttentionProbs{AttentionConfig: cfg}, qkv)
		add(ops.AttentionProbsGrad{AttentionConfig: cfg}, qkv, probs, probs)
		add(ops.AttentionMix{AttentionConfig: cfg}, probs, qkv)
		add(ops.AttentionMixProbsGrad{AttentionConfig: cfg}, out, qkv)
		add(ops.AttentionMixValueGrad{AttentionConfig: cfg}, probs, out)
		lse, packed := tensor.Shape{batch, heads, seq}, tensor.Shape{batch * seq, d + heads}
		add(ops.FusedAttention{AttentionConfig: cfg}, qkv)
		add(ops.FusedAttentionGrad{AttentionConfig: cfg}, qkv, out, lse, packed)
	}
	for _, s := range layerNormShapes {
		x, v := tensor.Shape{s[0], s[1]}, tensor.Shape{s[1]}
		add(ops.LayerNorm{Eps: ops.DefaultLayerNormEps}, x, v, v)
		add(ops.LayerNormInputGrad{Eps: ops.DefaultLayerNormEps}, x, v, x)
		add(ops.LayerNormWeightGrad{Eps: ops.DefaultLayerNormEps}, x, x)
	}
	for _, s := range rmsNormShapes {
		x, v := tensor.Shape{s[0], s[1]}, tensor.Shape{s[1]}
		add(ops.RMSNorm{Eps: ops.DefaultRMSNormEps}, x, v)
		add(ops.RMSNormInputGrad{Eps: ops.DefaultRMSNormEps}, x, v, x)
		add(ops.RMSNormWeightGrad{Eps: ops.DefaultRMSNormEps}, x, x)
	}
	for _, n := range elementwiseSizes {
		v := tensor.Shape{n}
		add(ops.Add{}, v, v)
		add(ops.LeakyReLU{Slope: ops.DefaultLeakySlope}, v)
		add(ops.LeakyReLUGrad{Slope: ops.DefaultLeakySlope}, v, v)
		add(ops.LinearBiasGrad{}, tensor.Shape{max(n/16, 1), 16})
	}
	return cases
}
