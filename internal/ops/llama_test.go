package ops

import (
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// rotary is the Rotary layout of the tests: two rotated heads of 6 (odd
// halves) in rows of 15, whose last 3 columns are copied, sequences of 3.
var rotary = Rotary{Heads: 2, HeadDim: 6, SeqLen: 3}

// llamaGradCases are the Llama family's forward ops at odd sizes: rows not
// a power of two, d = 7, heads of 6 with unrotated columns beside them.
var llamaGradCases = []gradCase{
	{name: "RMSNorm", op: RMSNorm{Eps: DefaultRMSNormEps}, shapes: []tensor.Shape{{5, 7}, {7}}},
	{name: "RMSNorm eps 0.5", op: RMSNorm{Eps: 0.5}, shapes: []tensor.Shape{{3, 3}, {3}}},
	{name: "Rotary", op: rotary, shapes: []tensor.Shape{{6, 15}, {3, 3}, {3, 3}}},
	{name: "Rotary one pair per head", op: Rotary{Heads: 3, HeadDim: 2, SeqLen: 5}, shapes: []tensor.Shape{{5, 6}, {5, 1}, {5, 1}}},
	{name: "Projection", op: Projection{}, shapes: []tensor.Shape{{3, 4}, {5, 4}}},
	{name: "Projection batch 1", op: Projection{}, shapes: []tensor.Shape{{1, 2}, {3, 2}}},
	{name: "SwiGLU", op: SwiGLU{}, shapes: []tensor.Shape{{5, 14}}},
}

// llamaLaunchCases are the Llama family's ops, gradients included.
var llamaLaunchCases = []launchCase{
	{name: "RMSNorm", op: RMSNorm{Eps: DefaultRMSNormEps}, shapes: []tensor.Shape{{5, 7}, {7}}},
	{name: "RMSNormInputGrad", op: RMSNormInputGrad{Eps: DefaultRMSNormEps}, shapes: []tensor.Shape{{5, 7}, {7}, {5, 7}}},
	{name: "RMSNormWeightGrad", op: RMSNormWeightGrad{Eps: DefaultRMSNormEps}, shapes: []tensor.Shape{{5, 7}, {5, 7}}},
	{name: "Rotary", op: rotary, shapes: []tensor.Shape{{6, 15}, {3, 3}, {3, 3}}},
	{name: "RotaryGrad", op: RotaryGrad(rotary), shapes: []tensor.Shape{{6, 15}, {3, 3}, {3, 3}}},
	{name: "Projection", op: Projection{}, shapes: []tensor.Shape{{3, 4}, {5, 4}}},
	{name: "SwiGLU", op: SwiGLU{}, shapes: []tensor.Shape{{5, 14}}},
	{name: "SwiGLUGrad", op: SwiGLUGrad{}, shapes: []tensor.Shape{{5, 14}, {5, 7}}},
}

// TestLlamaShapeErrors checks that shapes the ops cannot take are errors
// from the shape rule and from Do, not panics.
func TestLlamaShapeErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		op     Spec
		shapes []tensor.Shape
		want   string
	}{
		{"RMSNorm weight", RMSNorm{}, []tensor.Shape{{5, 7}, {6}}, "do not fit"},
		{"RMSNormInputGrad gradient", RMSNormInputGrad{}, []tensor.Shape{{5, 7}, {7}, {4, 7}}, "do not fit"},
		{"RMSNormWeightGrad gradient", RMSNormWeightGrad{}, []tensor.Shape{{5, 7}, {5, 6}}, "differ"},
		{"Rotary narrow rows", rotary, []tensor.Shape{{6, 11}, {3, 3}, {3, 3}}, "cannot hold"},
		{"Rotary odd head", Rotary{Heads: 2, HeadDim: 5, SeqLen: 3}, []tensor.Shape{{6, 15}, {3, 2}, {3, 2}}, "even"},
		{"Rotary partial sequence", rotary, []tensor.Shape{{7, 15}, {3, 3}, {3, 3}}, "whole sequences"},
		{"Rotary cos table", rotary, []tensor.Shape{{6, 15}, {3, 4}, {3, 3}}, "tables"},
		{"Rotary sin table", rotary, []tensor.Shape{{6, 15}, {3, 3}, {2, 3}}, "tables"},
		{"Rotary no sequence", Rotary{Heads: 2, HeadDim: 6}, []tensor.Shape{{6, 15}, {1, 3}, {1, 3}}, "positive"},
		{"RotaryGrad narrow rows", RotaryGrad(rotary), []tensor.Shape{{6, 11}, {3, 3}, {3, 3}}, "cannot hold"},
		{"Projection", Projection{}, []tensor.Shape{{3, 4}, {5, 3}}, "do not fit"},
		{"SwiGLU odd", SwiGLU{}, []tensor.Shape{{5, 13}}, "halves"},
		{"SwiGLUGrad gradient", SwiGLUGrad{}, []tensor.Shape{{5, 14}, {5, 6}}, "do not fit"},
		{"SwiGLUGrad rows", SwiGLUGrad{}, []tensor.Shape{{5, 14}, {4, 7}}, "do not fit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := New(tc.op).(interface {
				InferShape(...gorgonia.DimSizer) (tensor.Shape, error)
				Do(...gorgonia.Value) (gorgonia.Value, error)
			})
			dims := make([]gorgonia.DimSizer, len(tc.shapes))
			values := make([]gorgonia.Value, len(tc.shapes))
			rng := rand.New(rand.NewPCG(1, 2))
			for i, s := range tc.shapes {
				dims[i] = s
				data := make([]float64, s.TotalSize())
				for j := range data {
					data[j] = rng.Float64()
				}
				values[i] = tensor.New(tensor.WithBacking(data), tensor.WithShape(s...))
			}
			if _, err := o.InferShape(dims...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("InferShape: error %v, want one saying %q", err, tc.want)
			}
			if _, err := o.Do(values...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Do: error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
