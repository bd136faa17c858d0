package engine

import (
	"fmt"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"

	"gpuz/internal/levers"
	"gpuz/internal/ops"
)

// halfFlags writes, for each step of sc, its op's name and whether its
// result is stored in 16 bits ("h") or float32 ("f"), space-separated; a
// gradient sum is "+".
func halfFlags(sc *Schedule) string {
	var out []string
	for _, s := range sc.steps {
		name, _, _ := strings.Cut(s.op.String(), "{")
		if isGradientSum(s.op) {
			name = "+"
		}
		flag := "f"
		if sc.values[s.out].store.narrow() {
			flag = "h"
		}
		out = append(out, name+":"+flag)
	}
	return strings.Join(out, " ")
}

// TestPrecisionClassesByHand pins, under bf16 training, which values are
// 16-bit, derived by hand from autocast's rules (levers.Cast): a
// product's result is 16-bit (lower); a LayerNorm's, a loss's and a bias
// gradient's are float32 (fp32), even from 16-bit inputs (the LayerNorm
// weight gradient's are both 16-bit); any other op, gorgonia's gradient
// sum included, promotes: 16-bit when all its inputs are, float32 when
// one is not, whichever it is.
//
// The tied model (tied_test.go): Embedding of float32 inputs: f; the
// layer's Linear: h, its LeakyReLU of h: h; LayerNorm: f; the head's
// Linear reading the tied weight: h; the loss and its gradient: f; the
// head's input and weight gradients: h; LayerNorm's gradients: f; the
// layer's bias gradient: f; LeakyReLUGrad of h and of the float32 output
// gradient: f; the layer's input and weight gradients: h; the bias
// gradient: f; EmbeddingGrad of float32 ids and a 16-bit gradient: f; the
// tied weight's gradient, the sum of a 16-bit and a float32 term: f.
//
// The resnet hand model: the residual's input gradient sums two 16-bit
// terms (a layer's input gradient and the Add's output gradient): h.
func TestPrecisionClassesByHand(t *testing.T) {
	tied := compilePrecision(t, tiedModel, levers.BF16)
	want := "Embedding:f Linear:h LeakyReLU:h LayerNorm:f Linear:h SoftmaxCrossEntropy:f SoftmaxCrossEntropyGrad:f " +
		"LinearInputGrad:h LinearWeightGrad:h LayerNormInputGrad:f LayerNormWeightGrad:f LinearBiasGrad:f LeakyReLUGrad:f " +
		"LinearInputGrad:h LinearWeightGrad:h LinearBiasGrad:f EmbeddingGrad:f +:f"
	if got := halfFlags(tied); got != want {
		t.Errorf("tied model:\n got  %s\n want %s", got, want)
	}
	// The tied weight is read by the lookup as well as by products: it
	// stays float32 (a parameter is 16-bit only when every reader is a
	// product), and the head's product rounds it, as its input, into a
	// 16-bit copy, and rounds the float32 bias it reads through its own
	// launch's float32 path.
	for _, v := range tied.values {
		if v.node.Name() == "embed.w" && v.store.narrow() {
			t.Error("the tied weight, read by the lookup and the head, is 16-bit")
		}
	}
	head := tied.steps[4]
	if got, want := fmt.Sprint(head.convs), fmt.Sprint([]argConversion{narrowed, narrowed, roundedIn}); got != want {
		t.Errorf("the head's product converts its float32 arguments %s, want %s (x and the weight narrowed, the bias rounded)", got, want)
	}
	resnet := compilePrecision(t, handModels[1], levers.BF16)
	sums := 0
	for _, s := range resnet.steps {
		if isGradientSum(s.op) {
			sums++
			if !resnet.values[s.out].store.narrow() {
				t.Errorf("resnet: a gradient sum of 16-bit terms is float32")
			}
		}
	}
	if sums == 0 {
		t.Error("resnet: no gradient sum")
	}
}

// TestCastOf pins the classes the hand models cannot show: the attention
// value gradient (probsᵀ·g, a product) is a 16-bit product as the other
// attention products are, the LayerNorm steps keep float32 (autocast's
// fp32 list), SwiGLU and its gradient promote (SiLU and mul are on none
// of autocast's lists), and an op that declares no class (gorgonia's own,
// such as the gradient sum's addition) promotes.
func TestCastOf(t *testing.T) {
	for _, tc := range []struct {
		op   gorgonia.Op
		want levers.Cast
	}{
		{ops.New(ops.AttentionMixValueGrad{}), levers.CastLower},
		{ops.New(ops.AttentionMixProbsGrad{}), levers.CastLower},
		{ops.New(ops.AttentionMix{}), levers.CastLower},
		{ops.New(ops.LayerNorm{}), levers.CastFP32},
		{ops.New(ops.LayerNormInputGrad{}), levers.CastFP32},
		{ops.New(ops.LayerNormWeightGrad{}), levers.CastFP32},
		{ops.New(ops.Add{}), levers.CastPromote},
		// SiLU and mul are on none of autocast's lists: SwiGLU and its
		// gradient run in the widest type of their inputs (issue 44 item 23).
		{ops.New(ops.SwiGLU{}), levers.CastPromote},
		{ops.New(ops.SwiGLUGrad{}), levers.CastPromote},
		{gradientSumOp(t), levers.CastPromote},
	} {
		if got := castOf(tc.op); got != tc.want {
			t.Errorf("%v: class %v, want %v", tc.op, got, tc.want)
		}
	}
}

// gradientSumOp returns the op of the resnet hand model's gradient sum.
func gradientSumOp(t *testing.T) gorgonia.Op {
	sc := compilePrecision(t, handModels[1], levers.BF16)
	for _, s := range sc.steps {
		if isGradientSum(s.op) {
			return s.op
		}
	}
	t.Fatal("resnet: no gradient sum")
	return nil
}
