package ops

import (
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// conv2dGradCases check Conv2d's three gradients against finite
// differences: paddings 0, 1 and 2 (one wider than a 3×3 kernel's reach),
// several channel counts, non-square images, one and two images.
var conv2dGradCases = []gradCase{
	{name: "Conv2d pad 0", op: Conv2d{Pad: 0}, shapes: []tensor.Shape{{2, 3, 5, 4}, {2, 3, 3, 3}, {2}}},
	{name: "Conv2d pad 1", op: Conv2d{Pad: 1}, shapes: []tensor.Shape{{1, 2, 4, 6}, {4, 2, 3, 3}, {4}}},
	{name: "Conv2d pad 2 k5", op: Conv2d{Pad: 2}, shapes: []tensor.Shape{{2, 2, 5, 3}, {3, 2, 5, 5}, {3}}},
	{name: "Conv2d pad 2 k3", op: Conv2d{Pad: 2}, shapes: []tensor.Shape{{1, 1, 3, 4}, {2, 1, 3, 3}, {2}}},
	{name: "Conv2d 1x1", op: Conv2d{Pad: 0}, shapes: []tensor.Shape{{2, 4, 3, 2}, {3, 4, 1, 1}, {3}}},
}

// conv2dLaunchCases check that Launch and Do agree bit for bit for the
// convolution and its gradient ops, at sizes that take the direct kernels'
// full 64-column blocks, their masked tails and several channel blocks.
var conv2dLaunchCases = []launchCase{
	{name: "Conv2d", op: Conv2d{Pad: 2}, shapes: []tensor.Shape{{2, 3, 7, 70}, {8, 3, 5, 5}, {8}}},
	{name: "Conv2d pad 0", op: Conv2d{Pad: 0}, shapes: []tensor.Shape{{1, 2, 5, 6}, {3, 2, 3, 3}, {3}}},
	{name: "Conv2dInputGrad", op: Conv2dInputGrad{Pad: 2}, shapes: []tensor.Shape{{2, 8, 7, 70}, {8, 3, 5, 5}}},
	{name: "Conv2dInputGrad pad 1", op: Conv2dInputGrad{Pad: 1}, shapes: []tensor.Shape{{1, 3, 4, 4}, {3, 2, 3, 3}}},
	{name: "Conv2dWeightGrad", op: Conv2dWeightGrad{Pad: 2}, shapes: []tensor.Shape{{2, 3, 7, 70}, {2, 8, 7, 70}}},
	{name: "Conv2dWeightGrad pad 0", op: Conv2dWeightGrad{Pad: 0}, shapes: []tensor.Shape{{1, 2, 5, 6}, {1, 3, 3, 4}}},
	{name: "Conv2dBiasGrad", op: Conv2dBiasGrad{}, shapes: []tensor.Shape{{2, 8, 7, 70}}},
}

// TestConv2dShapes checks the shapes the ops infer and the inputs they
// refuse.
func TestConv2dShapes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		op     Spec
		inputs []tensor.Shape
		want   tensor.Shape // nil: an error is expected
	}{
		{"forward", Conv2d{Pad: 2}, []tensor.Shape{{2, 10, 16, 12}, {30, 10, 5, 5}, {30}}, tensor.Shape{2, 30, 16, 12}},
		{"forward pad 0", Conv2d{}, []tensor.Shape{{1, 3, 8, 9}, {4, 3, 3, 3}, {4}}, tensor.Shape{1, 4, 6, 7}},
		{"channels differ", Conv2d{Pad: 1}, []tensor.Shape{{1, 3, 8, 8}, {4, 2, 3, 3}, {4}}, nil},
		{"bias differs", Conv2d{Pad: 1}, []tensor.Shape{{1, 3, 8, 8}, {4, 3, 3, 3}, {5}}, nil},
		{"kernel not square", Conv2d{Pad: 1}, []tensor.Shape{{1, 3, 8, 8}, {4, 3, 3, 1}, {4}}, nil},
		{"kernel larger than image", Conv2d{}, []tensor.Shape{{1, 3, 2, 8}, {4, 3, 3, 3}, {4}}, nil},
		{"negative padding", Conv2d{Pad: -1}, []tensor.Shape{{1, 3, 8, 8}, {4, 3, 3, 3}, {4}}, nil},
		{"input grad", Conv2dInputGrad{Pad: 2}, []tensor.Shape{{2, 30, 16, 12}, {30, 10, 5, 5}}, tensor.Shape{2, 10, 16, 12}},
		{"input grad pad 0", Conv2dInputGrad{}, []tensor.Shape{{1, 4, 6, 7}, {4, 3, 3, 3}}, tensor.Shape{1, 3, 8, 9}},
		{"weight grad", Conv2dWeightGrad{Pad: 2}, []tensor.Shape{{2, 10, 16, 12}, {2, 30, 16, 12}}, tensor.Shape{30, 10, 5, 5}},
		{"weight grad pad 0", Conv2dWeightGrad{}, []tensor.Shape{{1, 3, 8, 9}, {1, 4, 6, 7}}, tensor.Shape{4, 3, 3, 3}},
		{"weight grad not square", Conv2dWeightGrad{}, []tensor.Shape{{1, 3, 8, 9}, {1, 4, 6, 6}}, nil},
		{"bias grad", Conv2dBiasGrad{}, []tensor.Shape{{2, 30, 16, 12}}, tensor.Shape{30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := make([]gorgonia.DimSizer, len(tc.inputs))
			for i, s := range tc.inputs {
				in[i] = s
			}
			got, err := New(tc.op).InferShape(in...)
			switch {
			case tc.want == nil && err == nil:
				t.Errorf("inferred %v, want an error", got)
			case tc.want != nil && err != nil:
				t.Errorf("error %v, want %v", err, tc.want)
			case tc.want != nil && !got.Eq(tc.want):
				t.Errorf("inferred %v, want %v", got, tc.want)
			}
		})
	}
}
