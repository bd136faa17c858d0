package engine

import (
	"gorgonia.org/tensor"

	"gpuz/internal/ops"
)

// gpt2OpCases are GPT-2's ops and the token embedding at small sizes, for
// TestOpsAgreeWithFP32: Conv1D is a product (rounded to 16 bits, its
// gradients too), the others promote; the positions table has rows beyond
// the sequence.
var gpt2OpCases = []opCase{
	{name: "Conv1D", op: ops.Conv1D{}, shapes: []tensor.Shape{{3, 8}, {8, 5}, {5}}},
	{name: "GELUTanh", op: ops.GELUTanh{}, shapes: []tensor.Shape{{4, 6}}},
	{name: "TokenEmbedding", op: ops.TokenEmbedding{}, shapes: []tensor.Shape{{2, 3}, {5, 4}}, ids: map[int]bool{0: true}},
	{name: "AddPositions", op: ops.AddPositions{SeqLen: 3}, shapes: []tensor.Shape{{6, 4}, {5, 4}}},
}
