package ops

import (
	"slices"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/device"
)

// GPT-2's ops and the token embedding: their rows of the gradient checks
// against finite differences (TestGradients), of Launch against Do
// (TestLaunchMatchesDo, TestEveryOpHasACost; their costs by hand are
// TestCostByHand's) and the errors of bad shapes and ids. The ids (ids in attention_test.go) repeat, so that the
// embedding gradient's scatter-add meets a row more than once; the
// position tables have more rows than a sequence, so that the unused rows'
// zero gradient is checked too.

// gpt2GradCases are the forward ops.
var gpt2GradCases = []gradCase{
	// Inputs in [-1, 1] scaled by nothing: the curve's bend; the tails are
	// hostmath's TestGELUTanhValues.
	{name: "GELUTanh", op: GELUTanh{}, shapes: []tensor.Shape{{4, 6}}},
	{name: "GELUTanh vector", op: GELUTanh{}, shapes: []tensor.Shape{{17}}},
	{name: "Conv1D", op: Conv1D{}, shapes: []tensor.Shape{{3, 4}, {4, 5}, {5}}},
	{name: "Conv1D batch 1", op: Conv1D{}, shapes: []tensor.Shape{{1, 2}, {2, 3}, {3}}},
	{name: "TokenEmbedding", op: TokenEmbedding{}, shapes: []tensor.Shape{{2, 3}, {5, 4}}, fixed: map[int][]float64{0: ids}},
	{name: "AddPositions", op: AddPositions{SeqLen: 3}, shapes: []tensor.Shape{{6, 4}, {5, 4}}},
	{name: "AddPositions rows = SeqLen", op: AddPositions{SeqLen: 2}, shapes: []tensor.Shape{{6, 3}, {2, 3}}},
}

// gpt2LaunchCases are the forward and gradient ops.
var gpt2LaunchCases = []launchCase{
	{name: "GELUTanh", op: GELUTanh{}, shapes: []tensor.Shape{{4, 6}}},
	{name: "GELUTanhGrad", op: GELUTanhGrad{}, shapes: []tensor.Shape{{4, 6}, {4, 6}}},
	{name: "Conv1D", op: Conv1D{}, shapes: []tensor.Shape{{3, 4}, {4, 5}, {5}}},
	{name: "Conv1DInputGrad", op: Conv1DInputGrad{}, shapes: []tensor.Shape{{3, 5}, {4, 5}}},
	{name: "Conv1DWeightGrad", op: Conv1DWeightGrad{}, shapes: []tensor.Shape{{3, 4}, {3, 5}}},
	{name: "TokenEmbedding", op: TokenEmbedding{}, shapes: []tensor.Shape{{2, 3}, {5, 4}}, fixed: map[int][]float32{0: ids32()}},
	{name: "AddPositions", op: AddPositions{SeqLen: 3}, shapes: []tensor.Shape{{6, 4}, {5, 4}}},
	{name: "PositionsGrad", op: PositionsGrad{SeqLen: 3, Rows: 5}, shapes: []tensor.Shape{{6, 4}}},
}

// TestGPT2Errors checks that shapes that do not fit and ids out of range
// are errors of Do and of Launch, not panics.
func TestGPT2Errors(t *testing.T) {
	host := device.NewHost()
	for _, tc := range []struct {
		name   string
		op     Spec
		shapes []tensor.Shape
		fixed  map[int][]float32
		want   string
	}{
		{"Conv1D W as Linear's", Conv1D{}, []tensor.Shape{{3, 4}, {5, 4}, {5}}, nil, "do not fit"},
		{"Conv1DInputGrad", Conv1DInputGrad{}, []tensor.Shape{{3, 5}, {5, 4}}, nil, "do not fit"},
		{"Conv1DWeightGrad", Conv1DWeightGrad{}, []tensor.Shape{{3, 4}, {2, 5}}, nil, "differ"},
		{"TokenEmbedding id too large", TokenEmbedding{}, []tensor.Shape{{2, 3}, {4, 4}}, map[int][]float32{0: ids32()},
			"element 0: class id 4 is not an integer in [0, 4)"},
		{"TokenEmbedding fractional id", TokenEmbedding{}, []tensor.Shape{{1, 2}, {4, 4}}, map[int][]float32{0: {1, 2.5}},
			"class id 2.5 is not"},
		{"AddPositions table too short", AddPositions{SeqLen: 3}, []tensor.Shape{{6, 4}, {2, 4}}, nil, "fewer than 3 rows"},
		{"AddPositions ragged tokens", AddPositions{SeqLen: 4}, []tensor.Shape{{6, 4}, {5, 4}}, nil, "6 tokens are not sequences of 4"},
		{"AddPositions widths", AddPositions{SeqLen: 3}, []tensor.Shape{{6, 4}, {5, 3}}, nil, "do not fit"},
		{"AddPositions no SeqLen", AddPositions{}, []tensor.Shape{{6, 4}, {5, 4}}, nil, "not positive"},
		{"PositionsGrad table too short", PositionsGrad{SeqLen: 3, Rows: 2}, []tensor.Shape{{6, 4}}, nil, "does not hold"},
		{"PositionsGrad ragged tokens", PositionsGrad{SeqLen: 4, Rows: 5}, []tensor.Shape{{6, 4}}, nil, "not sequences"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := New(tc.op)
			values := make([]gorgonia.Value, len(tc.shapes))
			buffers := make([]device.Buffer, len(tc.shapes))
			for i, s := range tc.shapes {
				data := make([]float32, s.TotalSize())
				if v, ok := tc.fixed[i]; ok {
					copy(data, v)
				}
				values[i] = tensor.New(tensor.WithBacking(slices.Clone(data)), tensor.WithShape(s...))
				buffers[i], _ = host.Alloc(len(data))
				host.Upload(buffers[i], data)
			}
			_, err := op.Do(values...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Do: error %v, want one containing %q", err, tc.want)
			}
			size := 64 // the shapes that do not fit have no output shape
			if tc.fixed != nil {
				size = tc.shapes[0].TotalSize() * tc.shapes[1][1]
			}
			out, _ := host.Alloc(size)
			err = op.(deviceOp).Launch(host.Kernels(), out, buffers, tc.shapes)
			if tc.fixed != nil && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Launch: error %v, want one containing %q", err, tc.want)
			}
			if tc.fixed == nil && err == nil {
				t.Errorf("Launch: no error, want one containing %q", tc.want)
			}
		})
	}
}
