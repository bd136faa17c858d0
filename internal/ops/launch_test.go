package ops

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/device"
)

// launchCase is an op and the shapes of its float32 inputs.
type launchCase struct {
	name   string
	op     Spec
	shapes []tensor.Shape
	// fixed gives the inputs whose index is in it those values instead of
	// random ones, such as integer ids.
	fixed map[int][]float32
}

// deviceOp is what package engine calls on an op.
type deviceOp interface {
	Launch(k device.Kernels, out device.Buffer, args []device.Buffer, shapes []tensor.Shape) error
}

// launchCases are the dense workload's ops; conv_test.go and
// attention_test.go have the others'. Scalars are given the empty shape.
var launchCases = []launchCase{
	{name: "Linear", op: Linear{}, shapes: []tensor.Shape{{3, 4}, {5, 4}, {5}}},
	{name: "LinearInputGrad", op: LinearInputGrad{}, shapes: []tensor.Shape{{3, 5}, {5, 4}}},
	{name: "LinearWeightGrad", op: LinearWeightGrad{}, shapes: []tensor.Shape{{3, 5}, {3, 4}}},
	{name: "LinearBiasGrad", op: LinearBiasGrad{}, shapes: []tensor.Shape{{3, 5}}},
	{name: "LeakyReLU", op: LeakyReLU{Slope: 0.01}, shapes: []tensor.Shape{{4, 6}}},
	{name: "LeakyReLUGrad", op: LeakyReLUGrad{Slope: 0.01}, shapes: []tensor.Shape{{4, 6}, {4, 6}}},
	{name: "MSE", op: MSE{Dims: 2}, shapes: []tensor.Shape{{3, 5}, {3, 5}}},
	{name: "MSEGrad", op: MSEGrad{Dims: 2}, shapes: []tensor.Shape{{3, 5}, {3, 5}, {}}},
	{name: "Mean", op: Mean{Dims: 2}, shapes: []tensor.Shape{{3, 5}}},
	{name: "MeanGrad", op: MeanGrad{Dims: 2}, shapes: []tensor.Shape{{3, 5}, {}}},
}

// TestLaunchMatchesDo runs every op both ways on the host, through Do (what
// the TapeMachine and the gradient checks use) and through Launch (what the
// engine uses): the results must be identical.
func TestLaunchMatchesDo(t *testing.T) {
	for _, tc := range slices.Concat(launchCases, conv2dLaunchCases, attentionLaunchCases, cacheLaunchCases, gpt2LaunchCases, llamaLaunchCases) {
		t.Run(tc.name, func(t *testing.T) { checkLaunch(t, tc) })
	}
}

// checkLaunch runs one op through Do and through Launch on the host on
// random float32 inputs and fails unless the results are identical.
func checkLaunch(t *testing.T, tc launchCase) {
	t.Helper()
	op := New(tc.op)
	host := device.NewHost()
	rng := rand.New(rand.NewPCG(11, uint64(len(tc.name))))
	values := make([]gorgonia.Value, len(tc.shapes))
	buffers := make([]device.Buffer, len(tc.shapes))
	for i, s := range tc.shapes {
		data := make([]float32, max(s.TotalSize(), 1))
		for j := range data {
			data[j] = rng.Float32()*2 - 1
		}
		if v, ok := tc.fixed[i]; ok {
			data = append([]float32(nil), v...)
		}
		if len(s) == 0 {
			values[i] = gorgonia.NewF32(data[0])
		} else {
			values[i] = tensor.New(tensor.WithBacking(append([]float32(nil), data...)), tensor.WithShape(s...))
		}
		buffers[i], _ = host.Alloc(len(data))
		host.Upload(buffers[i], data)
	}
	want, err := op.Do(values...)
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	var wantData []float32
	switch d := want.Data().(type) {
	case float32:
		wantData = []float32{d}
	case []float32:
		wantData = d
	}
	out, _ := host.Alloc(len(wantData))
	if j := op.OverwritesInput(); j >= 0 { // as the engine binds it: out is that input's buffer
		out = buffers[j]
	} else {
		// The engine hands an op a buffer that held another value: an
		// element Launch does not write must show, not read as a zero.
		host.Upload(out, stale(len(wantData)))
	}
	if err := op.(deviceOp).Launch(host.Kernels(), out, buffers, tc.shapes); err != nil {
		t.Fatalf("Launch: %v", err)
	}
	got := device.Floats(out)
	for i := range wantData {
		if got[i] != wantData[i] {
			t.Fatalf("element %d: Launch %g, Do %g", i, got[i], wantData[i])
		}
	}
}

// stale is n elements of what a reused buffer may hold: NaN, which no
// result equals, so an element that Launch leaves unwritten fails the
// comparison.
func stale(n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(math.NaN())
	}
	return x
}
