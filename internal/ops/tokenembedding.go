package ops

import (
	"fmt"

	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/perfmodel"
)

// TokenEmbedding is PyTorch's nn.Embedding: given token ids [batch, seq]
// (exact integers stored in the tensors' float type) and the weight
// [vocab, d], row b·seq + s of the output [batch·seq, d] is
// weight[ids[b, s]]; ids that are not integers in [0, vocab) are an error.
// It is Embedding without the positions, which GPT-2 learns (AddPositions)
// and Llama does not have. It is differentiable in the weight only, whose
// gradient is EmbeddingGrad's.
type TokenEmbedding struct{}

func (TokenEmbedding) signature() []int { return []int{2, 2, 2} }

func (TokenEmbedding) shape(in []tensor.Shape) (tensor.Shape, error) {
	ids, w := in[0], in[1]
	if ids.TotalSize() == 0 || w[1] == 0 {
		return nil, fmt.Errorf("shapes ids %v and weight %v give no rows", ids, w)
	}
	return tensor.Shape{ids[0] * ids[1], w[1]}, nil
}

func (TokenEmbedding) kernel() kernel {
	return checked2(hostmath.TokenEmbedding, hostmath.TokenEmbedding, device.Kernels.TokenEmbedding)
}

// grads: the ids are data; the weight's gradient is Embedding's
// (EmbeddingGrad, of the ids, inputs[0], and the weight, inputs[1]).
func (TokenEmbedding) grads() []grad { return []grad{nil, embeddingWeightGrad} }

// cost: a gather, which reads the ids and only the weight rows they name
// (one per token) and computes nothing.
func (TokenEmbedding) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return device.Cost{ReadBytes: bytesOf(in[0], out), WriteBytes: bytesOf(out)}
}

// Element-wise in the performance model: memory-bound or nearly
// (perfmodel.ClassElementwise).
func (TokenEmbedding) class() string { return perfmodel.ClassElementwise }
