package ops

import (
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/device"
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
	{name: "RMSNormInputGrad", op: RMSNormInputGrad{normInputGrad[RMSNorm]{Eps: DefaultRMSNormEps}}, shapes: []tensor.Shape{{5, 7}, {7}, {5, 7}}},
	{name: "RMSNormWeightGrad", op: RMSNormWeightGrad{normWeightGrad[RMSNorm]{Eps: DefaultRMSNormEps}}, shapes: []tensor.Shape{{5, 7}, {5, 7}}},
	{name: "Rotary", op: rotary, shapes: []tensor.Shape{{6, 15}, {3, 3}, {3, 3}}},
	{name: "RotaryGrad", op: RotaryGrad(rotary), shapes: []tensor.Shape{{6, 15}, {3, 3}, {3, 3}}},
	{name: "Projection", op: Projection{}, shapes: []tensor.Shape{{3, 4}, {5, 4}}},
	{name: "SwiGLU", op: SwiGLU{}, shapes: []tensor.Shape{{5, 14}}},
	{name: "SwiGLUGrad", op: SwiGLUGrad{}, shapes: []tensor.Shape{{5, 14}, {5, 7}}},
}

// TestLlamaGradients checks the Llama family's gradients against finite
// differences in float64, as TestGradients does the others'.
func TestLlamaGradients(t *testing.T) {
	for _, tc := range llamaGradCases {
		t.Run(tc.name, func(t *testing.T) { checkGradients(t, tc) })
	}
}

// TestLlamaLaunchMatchesDo runs the Llama family's ops through Do and
// through Launch on the host: the results must be identical.
func TestLlamaLaunchMatchesDo(t *testing.T) {
	for _, tc := range llamaLaunchCases {
		t.Run(tc.name, func(t *testing.T) { checkLaunch(t, tc) })
	}
}

// TestLlamaOpsHaveACost checks that every Llama op reports bytes read and
// written, and nothing for shapes it rejects, and a few figures by hand.
func TestLlamaOpsHaveACost(t *testing.T) {
	for _, tc := range llamaLaunchCases {
		op := New(tc.op).(coster)
		if c := op.Cost(tc.shapes); c.ReadBytes <= 0 || c.WriteBytes <= 0 || c.FLOPs <= 0 {
			t.Errorf("%s: Cost(%v) = %+v, want work", tc.name, tc.shapes, c)
		}
		if c := op.Cost(tc.shapes[1:]); c != (device.Cost{}) {
			t.Errorf("%s: cost of the wrong arity = %+v, want none", tc.name, c)
		}
	}
	for _, tc := range []struct {
		name   string
		op     Spec
		shapes []tensor.Shape
		want   device.Cost
	}{
		// 3×4 by 4×5: 2·3·5·4, no bias pass.
		{"Projection", Projection{}, []tensor.Shape{{3, 4}, {5, 4}}, device.Cost{FLOPs: 120, ReadBytes: 4 * (12 + 20), WriteBytes: 4 * 15}},
		// 6 tokens of 12 rotated columns, 3 operations each; the 3 copied
		// columns cost only their bytes.
		{"Rotary", rotary, []tensor.Shape{{6, 15}, {3, 3}, {3, 3}}, device.Cost{FLOPs: 3 * 6 * 12, ReadBytes: 4 * (90 + 9 + 9), WriteBytes: 4 * 90}},
	} {
		if got := New(tc.op).(coster).Cost(tc.shapes); got != tc.want {
			t.Errorf("%s: Cost(%v) = %+v, want %+v", tc.name, tc.shapes, got, tc.want)
		}
	}
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
