package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/ops"
)

// TestFusedAttentionSavesOutputAndLSE compiles the training of one block
// of fused attention (qkv = Linear(x), a = FusedAttentionOutput(qkv), y =
// Linear(a), an MSE loss) and checks what it saves for the backward pass:
// qkv, the attention output (once: the gradient's is the model's node) and
// the log-sum-exps, which FusedAttention's gradient wiring copies out of
// the packed value and the engine hoists into the forward pass, the loss's
// input, and no probabilities nor the packed value, which dies with the
// forward pass.
func TestFusedAttentionSavesOutputAndLSE(t *testing.T) {
	const tokens, d = 6, 4
	cfg := ops.AttentionConfig{Heads: 2, SeqLen: 3, Causal: true}
	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(tokens, d), gorgonia.WithName("x"))
	target := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(tokens, d), gorgonia.WithName("target"))
	win := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(3*d, d), gorgonia.WithName("in.w"))
	bin := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(3*d), gorgonia.WithName("in.b"))
	wout := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(d, d), gorgonia.WithName("out.w"))
	bout := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(d), gorgonia.WithName("out.b"))
	qkv := gorgonia.Must(ops.Apply(ops.Linear{}, x, win, bin))
	a := gorgonia.Must(ops.FusedAttentionOutput(cfg, qkv))
	y := gorgonia.Must(ops.Apply(ops.Linear{}, a, wout, bout))
	loss := gorgonia.Must(ops.Apply(ops.MSE{Dims: 2}, y, target))
	m := handModel{"fused attention", func() ([]*gorgonia.Node, []Block, *gorgonia.Node) {
		return []*gorgonia.Node{x, target}, []Block{{Name: "A", Params: []*gorgonia.Node{win, bin, wout, bout}}}, loss
	}}
	sc := compileTrain(t, m, Spec{})
	var parts []string
	for _, v := range sc.SavedValues() {
		parts = append(parts, fmt.Sprintf("%s %v by %s", v.Op, v.Shape, strings.Join(v.ReadBy, ", ")))
	}
	got := strings.Join(parts, "; ")
	want := "Linear [6 12] by FusedAttentionGrad; FusedAttentionLSE [2 2 3] by FusedAttentionGrad; " +
		"FusedAttentionOut [6 4] by LinearWeightGrad, FusedAttentionGrad; Linear [6 4] by MSEGrad"
	if got != want {
		t.Errorf("saved values\n %s\nwant\n %s", got, want)
	}
	firstBackward := slices.IndexFunc(sc.steps, func(s step) bool { return s.backward })
	for i, s := range sc.steps {
		switch name := opName(s.op); {
		case name == "FusedAttentionLSE" && i > firstBackward:
			t.Errorf("FusedAttentionLSE is step %d, after the backward pass's first, %d", i, firstBackward)
		case name == "FusedAttention" && sc.values[s.out].lastUse > firstBackward:
			t.Errorf("the packed value lives to step %d, past the forward pass (%d steps)", sc.values[s.out].lastUse, firstBackward)
		}
	}
}
