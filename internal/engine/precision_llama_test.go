package engine

import (
	"gorgonia.org/tensor"

	"gpuz/internal/ops"
)

// llamaOpCases are the Llama family's forward ops at small sizes, for
// TestOpsAgreeWithFP32: the rotary tables are constants, as a model's.
var llamaOpCases = []opCase{
	{name: "RMSNorm", op: ops.RMSNorm{Eps: ops.DefaultRMSNormEps}, shapes: []tensor.Shape{{4, 6}, {6}}},
	{name: "Rotary", op: ops.Rotary{Heads: 2, HeadDim: 6, SeqLen: 3}, shapes: []tensor.Shape{{6, 15}, {3, 3}, {3, 3}},
		constant: map[int]bool{1: true, 2: true}},
	{name: "Projection", op: ops.Projection{}, shapes: []tensor.Shape{{3, 8}, {5, 8}}},
	{name: "SwiGLU", op: ops.SwiGLU{}, shapes: []tensor.Shape{{4, 12}}},
}
