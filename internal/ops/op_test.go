package ops

import (
	"testing"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
)

// TestOpIdentity checks that an op's hash tells apart ops that differ only
// in their parameters, and that its arity and type follow its signature.
func TestOpIdentity(t *testing.T) {
	for _, pair := range [][2]Spec{
		{LeakyReLU{Slope: 0.01}, LeakyReLU{Slope: 0.2}},
		{Conv2d{Pad: 1}, Conv2d{Pad: 2}},
		{MSE{Dims: 2}, Mean{Dims: 2}},
		{AttentionMix{causal}, AttentionMix{full}},
	} {
		a, b := New(pair[0]), New(pair[1])
		if a.Hashcode() == b.Hashcode() || a.String() == b.String() {
			t.Errorf("%v and %v share a hash or a name", a, b)
		}
	}
	a := hm.TypeVariable('a')
	matrix := &gorgonia.TensorType{Dims: 2, Of: a}
	for _, tc := range []struct {
		op    Spec
		arity int
		want  hm.Type
	}{
		{LeakyReLU{}, 1, hm.NewFnType(a, a)},
		{MSE{Dims: 2}, 2, hm.NewFnType(matrix, matrix, a)},
		{Linear{}, 3, hm.NewFnType(matrix, matrix, &gorgonia.TensorType{Dims: 1, Of: a}, matrix)},
	} {
		op := New(tc.op)
		if op.Arity() != tc.arity || !op.Type().Eq(tc.want) {
			t.Errorf("%v: arity %d, type %v; want %d, %v", op, op.Arity(), op.Type(), tc.arity, tc.want)
		}
	}
}
