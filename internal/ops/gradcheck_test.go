package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// gradTolerance bounds the relative error of analytic against numerical
// gradients: central differences in float64 with step 1e-6 are accurate to
// about h² ≈ 1e-12 (truncation) plus ε/h ≈ 1e-10 (rounding) of the scale of
// the function, so 1e-6 leaves room without hiding a wrong formula, which
// shows as an error of order 1.
const (
	gradStep      = 1e-6
	gradTolerance = 1e-6
)

// gradCase is one forward op with the shapes of its inputs.
type gradCase struct {
	name   string
	op     Spec
	shapes []tensor.Shape
	// awayFromZero keeps random inputs at least 1e-3 from 0, where an
	// activation has a kink that finite differences cannot cross.
	awayFromZero bool
	// fixed gives the inputs whose index is in it those values instead of
	// random ones: data such as integer ids, in which the op is not
	// differentiable.
	fixed map[int][]float64
}

// gradCases are the dense workload's forward ops; conv_test.go and
// attention_test.go have the others'.
var gradCases = []gradCase{
	{name: "Linear", op: Linear{}, shapes: []tensor.Shape{{3, 4}, {5, 4}, {5}}},
	{name: "Linear batch 1", op: Linear{}, shapes: []tensor.Shape{{1, 2}, {3, 2}, {3}}},
	{name: "LeakyReLU", op: LeakyReLU{Slope: DefaultLeakySlope}, shapes: []tensor.Shape{{4, 6}}, awayFromZero: true},
	{name: "LeakyReLU slope 0.2 vector", op: LeakyReLU{Slope: 0.2}, shapes: []tensor.Shape{{17}}, awayFromZero: true},
	{name: "MSE", op: MSE{Dims: 2}, shapes: []tensor.Shape{{3, 5}, {3, 5}}},
	{name: "Mean", op: Mean{Dims: 3}, shapes: []tensor.Shape{{2, 3, 4}}},
}

// TestGradients checks every forward op's gradients against finite
// differences.
func TestGradients(t *testing.T) {
	for _, tc := range slices.Concat(gradCases, conv2dGradCases, attentionGradCases, gpt2GradCases, llamaGradCases) {
		t.Run(tc.name, func(t *testing.T) { checkGradients(t, tc) })
	}
}

// checkGradients compares the op's symbolic gradients, evaluated by
// gorgonia's TapeMachine through our gradient ops' Do, with central finite
// differences of L = Σ r ⊙ op(inputs) for a random cotangent r.
func checkGradients(t *testing.T, tc gradCase) {
	t.Helper()
	op, ok := New(tc.op).(gorgonia.SDOp)
	if !ok {
		t.Fatalf("%v is not differentiable", tc.op)
	}
	rng := rand.New(rand.NewPCG(7, uint64(len(tc.name))))
	random := func(shape tensor.Shape) *tensor.Dense {
		data := make([]float64, shape.TotalSize())
		for i := range data {
			for {
				data[i] = rng.Float64()*2 - 1
				if !tc.awayFromZero || math.Abs(data[i]) > 1e-3 {
					break
				}
			}
		}
		return tensor.New(tensor.WithBacking(data), tensor.WithShape(shape...))
	}

	// Every input node is named: gorgonia merges unnamed inputs of one type
	// and shape into a single node.
	g := gorgonia.NewGraph()
	inputs := make(gorgonia.Nodes, len(tc.shapes))
	values := make([]*tensor.Dense, len(tc.shapes))
	for i, s := range tc.shapes {
		values[i] = random(s)
		if v, ok := tc.fixed[i]; ok {
			values[i] = tensor.New(tensor.WithBacking(append([]float64(nil), v...)), tensor.WithShape(s...))
		}
		inputs[i] = gorgonia.NewTensor(g, tensor.Float64, len(s), gorgonia.WithShape(s...), gorgonia.WithValue(values[i]), gorgonia.WithName(fmt.Sprint("input", i)))
	}
	y, err := gorgonia.ApplyOp(op, inputs...)
	if err != nil {
		t.Fatalf("ApplyOp: %v", err)
	}
	var r *gorgonia.Node
	var rValue gorgonia.Value
	if y.Shape().IsScalar() {
		rValue = gorgonia.NewF64(rng.Float64() + 0.5)
		r = gorgonia.NewScalar(g, tensor.Float64, gorgonia.WithValue(rValue), gorgonia.WithName("cotangent"))
	} else {
		rValue = random(y.Shape())
		r = gorgonia.NewTensor(g, tensor.Float64, y.Dims(), gorgonia.WithShape(y.Shape()...), gorgonia.WithValue(rValue), gorgonia.WithName("cotangent"))
	}
	grads, err := op.SymDiff(inputs, y, r)
	if err != nil {
		t.Fatalf("SymDiff: %v", err)
	}
	diffable := op.DiffWRT(len(inputs))
	analytic := make([]gorgonia.Value, len(grads))
	for i, gn := range grads {
		if diffable[i] {
			gorgonia.Read(gn, &analytic[i])
		}
	}
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatalf("TapeMachine: %v", err)
	}

	objective := func() float64 {
		args := make([]gorgonia.Value, len(values))
		for i, v := range values {
			args[i] = v
		}
		out, err := op.Do(args...)
		if err != nil {
			t.Fatalf("Do: %v", err)
		}
		return dot(out, rValue)
	}
	for i, v := range values {
		if !diffable[i] {
			continue
		}
		if analytic[i] == nil {
			t.Fatalf("input %d: no gradient value", i)
		}
		got := analytic[i].Data().([]float64)
		data := v.Data().([]float64)
		if len(got) != len(data) {
			t.Fatalf("input %d: gradient of %d elements, want %d", i, len(got), len(data))
		}
		worst, scale := 0.0, 0.0
		for j := range data {
			orig := data[j]
			data[j] = orig + gradStep
			plus := objective()
			data[j] = orig - gradStep
			minus := objective()
			data[j] = orig
			want := (plus - minus) / (2 * gradStep)
			worst = max(worst, math.Abs(got[j]-want))
			scale = max(scale, math.Abs(want))
		}
		if rel := worst / max(scale, 1e-12); rel > gradTolerance {
			t.Errorf("input %d: analytic and numerical gradients differ by %.3g relative", i, rel)
		}
	}
}

// dot returns Σ a ⊙ b for two values of one shape, or a·b for scalars.
func dot(a, b gorgonia.Value) float64 {
	if s, ok := a.Data().(float64); ok {
		return s * b.Data().(float64)
	}
	x, y := a.Data().([]float64), b.Data().([]float64)
	s := 0.0
	for i := range x {
		s += x[i] * y[i]
	}
	return s
}
