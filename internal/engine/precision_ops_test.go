package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/ops"
)

// opCase is one op applied to inputs of the given shapes; ids marks the
// inputs that hold integer ids in [0, 3) and data those that hold values
// the op is not differentiated by (inputs, not parameters).
type opCase struct {
	name     string
	op       ops.Spec
	shapes   []tensor.Shape
	ids      map[int]bool
	constant map[int]bool
	// mix applies attention's weighted sum to the op's result (the
	// probabilities, float32) and its first input: a product reading a
	// float32 value, which it must round to 16 bits.
	mix *ops.AttentionMix
}

// opCases are the workloads' forward ops at small sizes; their gradients
// come from the engine's backward pass.
var opCases = func() []opCase {
	causal := ops.AttentionConfig{Heads: 2, SeqLen: 3, Causal: true}
	return []opCase{
		{name: "Linear", op: ops.Linear{}, shapes: []tensor.Shape{{3, 8}, {5, 8}, {5}}},
		{name: "LeakyReLU", op: ops.LeakyReLU{Slope: ops.DefaultLeakySlope}, shapes: []tensor.Shape{{4, 6}}},
		{name: "Add", op: ops.Add{}, shapes: []tensor.Shape{{3, 4}, {3, 4}}},
		{name: "Conv2d", op: ops.Conv2d{Pad: 1}, shapes: []tensor.Shape{{2, 3, 5, 4}, {4, 3, 3, 3}, {4}}},
		{name: "LayerNorm", op: ops.LayerNorm{Eps: ops.DefaultLayerNormEps}, shapes: []tensor.Shape{{4, 6}, {6}, {6}}},
		{name: "Embedding", op: ops.Embedding{}, shapes: []tensor.Shape{{2, 3}, {5, 4}, {3, 4}}, ids: map[int]bool{0: true}, constant: map[int]bool{2: true}},
		{name: "AttentionProbs", op: ops.AttentionProbs{AttentionConfig: causal}, shapes: []tensor.Shape{{6, 12}}},
		{name: "AttentionMix", op: ops.AttentionMix{AttentionConfig: causal}, shapes: []tensor.Shape{{2, 2, 3, 3}, {6, 12}}},
		{name: "AttentionProbs then Mix", op: ops.AttentionProbs{AttentionConfig: causal}, shapes: []tensor.Shape{{6, 12}},
			mix: &ops.AttentionMix{AttentionConfig: causal}},
		{name: "SoftmaxCrossEntropy", op: ops.SoftmaxCrossEntropy{}, shapes: []tensor.Shape{{6, 5}, {2, 3}}, ids: map[int]bool{1: true}},
	}
}()

// opTolerance bounds a 16-bit op's output and gradients against fp32's,
// relative to the largest fp32 magnitude of each: one rounding of each
// operand and of the result is at most 2^-9 (bf16) or 2^-12 (fp16) of it,
// and an op and its gradient op chain a few (the loss's gradient through
// the op's, each rounded); 16 roundings' worth bounds them with room, and
// a conversion that reads the wrong format or truncates is off by far
// more.
var opTolerance = map[levers.Precision]float64{levers.BF16: 16 * 0x1p-9, levers.FP16: 16 * 0x1p-12}

// runOp trains one step of loss = MSE(op(inputs), target) (or the op
// itself when it is a loss) with every float input a parameter, and
// returns the loss and each parameter's gradient.
func runOp(t *testing.T, tc opCase, prec levers.Precision) (float32, [][]float32) {
	t.Helper()
	g := gorgonia.NewGraph()
	rng := rand.New(rand.NewPCG(3, uint64(len(tc.name))))
	var inputs, params []*gorgonia.Node
	var data [][]float32
	nodes := make([]*gorgonia.Node, len(tc.shapes))
	for i, s := range tc.shapes {
		n := gorgonia.NewTensor(g, tensor.Float32, len(s), gorgonia.WithShape(s...), gorgonia.WithName(fmt.Sprint("in", i)))
		nodes[i] = n
		d := make([]float32, s.TotalSize())
		for j := range d {
			if tc.ids[i] {
				d[j] = float32(rng.IntN(3))
			} else {
				d[j] = float32(rng.NormFloat64())
			}
		}
		data = append(data, d)
		if tc.ids[i] || tc.constant[i] {
			inputs = append(inputs, n)
		} else {
			params = append(params, n)
		}
	}
	out := gorgonia.Must(ops.Apply(tc.op, nodes...))
	if tc.mix != nil {
		out = gorgonia.Must(ops.Apply(*tc.mix, out, nodes[0]))
	}
	loss := out
	var target *gorgonia.Node
	if !out.IsScalar() {
		s := out.Shape()
		target = gorgonia.NewTensor(g, tensor.Float32, len(s), gorgonia.WithShape(s...), gorgonia.WithName("target"))
		inputs = append(inputs, target)
		loss = gorgonia.Must(ops.Apply(ops.MSE{Dims: len(s)}, out, target))
	}
	sc, err := Compile(Spec{Inputs: inputs, Blocks: []Block{{Name: "op", Params: params}}, Output: loss, Train: true,
		Optimizer: hostmath.DefaultAdam(), ClipNorm: 1e9, RetainGradients: true, Precision: prec})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := sc.Load(device.NewHost(), Resident{})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	// fp16: a loss scale under which these gradients (of order 1) fit
	// fp16's range; GradScaler's 2^16 would skip the step
	// (TestFP16OverflowSkipsTheStep), and Gradient unscales.
	prog.loss.Scale = 256
	for i, n := range nodes {
		if err := prog.SetInput(n, data[i]); err != nil {
			t.Fatal(err)
		}
	}
	if target != nil {
		d := make([]float32, target.Shape().TotalSize())
		for j := range d {
			d[j] = float32(rng.NormFloat64())
		}
		if err := prog.SetInput(target, d); err != nil {
			t.Fatal(err)
		}
	}
	v, err := prog.Run()
	if err != nil {
		t.Fatal(err)
	}
	var grads [][]float32
	for _, n := range params {
		gr, err := prog.Gradient(n)
		if err != nil {
			t.Fatal(err)
		}
		grads = append(grads, gr)
	}
	return v, grads
}

// TestOpsAgreeWithFP32 runs each op's forward and gradients in bf16 and
// fp16 through the engine's conversions and compares them with fp32's
// within opTolerance; a product's must differ from fp32's somewhere, or
// nothing was rounded.
func TestOpsAgreeWithFP32(t *testing.T) {
	for _, tc := range slices.Concat(opCases, llamaOpCases, gpt2OpCases) {
		want, wantGrads := runOp(t, tc, levers.FP32)
		for _, prec := range []levers.Precision{levers.BF16, levers.FP16} {
			t.Run(tc.name+"/"+prec.String(), func(t *testing.T) {
				tol := opTolerance[prec]
				got, grads := runOp(t, tc, prec)
				if d := math.Abs(float64(got - want)); !(d <= tol*math.Abs(float64(want))) {
					t.Errorf("loss %v, fp32 %v", got, want)
				}
				if (tc.mix != nil || castOf(ops.New(tc.op)) == levers.CastLower) && got == want {
					t.Errorf("a product's loss %v is fp32's to the bit: nothing was rounded to %s", got, prec)
				}
				for i, w := range wantGrads {
					scale := 0.0
					for _, x := range w {
						scale = max(scale, math.Abs(float64(x)))
					}
					for j := range w {
						if d := math.Abs(float64(grads[i][j] - w[j])); !(d <= tol*scale) {
							t.Fatalf("gradient of input %d, element %d: %v, fp32 %v (scale %.3g)", i, j, grads[i][j], w[j], scale)
						}
					}
				}
			})
		}
	}
}
