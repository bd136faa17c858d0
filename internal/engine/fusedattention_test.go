package engine

import (
	"fmt"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/ops"
)

// TestFusedAttentionSavesOutputAndLSE compiles the training of one block
// of fused attention (qkv = Linear(x), a = FusedAttention(qkv), y =
// Linear(a), an MSE loss) and checks what it saves for the backward pass:
// qkv, the attention output and the log-sum-exps, which FusedAttention's
// gradient wiring adds and the engine runs as a forward step (the graph's
// order puts it after the out projection), the loss's input, and no
// probabilities.
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
	a := gorgonia.Must(ops.Apply(ops.FusedAttention{AttentionConfig: cfg}, qkv))
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
	want := "Linear [6 12] by FusedAttentionGrad; FusedAttention [6 4] by LinearWeightGrad, FusedAttentionGrad; " +
		"Linear [6 4] by MSEGrad; FusedAttentionLSE [2 2 3] by FusedAttentionGrad"
	if got != want {
		t.Errorf("saved values\n %s\nwant\n %s", got, want)
	}
	for _, s := range sc.steps {
		if opName(s.op) == "FusedAttentionLSE" && s.backward {
			t.Errorf("FusedAttentionLSE runs in the backward pass")
		}
	}
}
