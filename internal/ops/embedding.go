package ops

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/perfmodel"
)

// Embedding is PyTorch's nn.Embedding followed by the addition of fixed
// positional encodings: given token ids [batch, seq] (exact integers stored
// in the tensors' float type), the weight [vocab, d] and the positions
// [seq, d], row b·seq + s of the output [batch·seq, d] is
// weight[ids[b, s]] + positions[s]; ids that are not integers in
// [0, vocab) are an error. It is differentiable in the weight only: the ids
// are data and the positions fixed.
type Embedding struct{}

func (Embedding) signature() []int { return []int{2, 2, 2, 2} }

func (Embedding) shape(in []tensor.Shape) (tensor.Shape, error) {
	ids, w, pos := in[0], in[1], in[2]
	if pos[0] != ids[1] || pos[1] != w[1] {
		return nil, fmt.Errorf("shapes ids %v, weight %v, positions %v do not fit", ids, w, pos)
	}
	return tensor.Shape{ids[0] * ids[1], w[1]}, nil
}

func (op Embedding) kernel() kernel {
	return kernel{hostOf(op, embeddingHost, embeddingHost), op.launch}
}

func embeddingHost[T hostmath.Float](_ Embedding, h hostArgs[T]) error {
	return hostmath.Embedding(h.out, h.in[0], h.in[1], h.in[2])
}

func (Embedding) launch(d launchArgs) error {
	return d.k.Embedding(d.out, d.args[0], d.args[1], d.args[2])
}

func (Embedding) grads() []grad { return []grad{nil, embeddingWeightGrad, nil} }

// embeddingWeightGrad is the gradient of the weight, inputs[1].
func embeddingWeightGrad(inputs gorgonia.Nodes, _, g *gorgonia.Node) (*gorgonia.Node, error) {
	return Apply(EmbeddingGrad{Vocab: inputs[1].Shape()[0]}, inputs[0], g)
}

// EmbeddingGrad is the gradient of Embedding with respect to its weight,
// given the ids and the output gradient g [batch·seq, d]: a [Vocab, d]
// matrix into whose row id every row of g with that id is added. (gorgonia's
// own ByIndices gradient puts the sums in the wrong rows.)
type EmbeddingGrad struct {
	Vocab int // rows of the weight
}

func (EmbeddingGrad) signature() []int { return []int{2, 2, 2} }

func (op EmbeddingGrad) shape(in []tensor.Shape) (tensor.Shape, error) {
	ids, g := in[0], in[1]
	if ids.TotalSize() != g[0] || op.Vocab <= 0 {
		return nil, fmt.Errorf("shapes ids %v and gradient %v do not fit", ids, g)
	}
	return tensor.Shape{op.Vocab, g[1]}, nil
}

func (EmbeddingGrad) kernel() kernel {
	return checked2(hostmath.EmbeddingGrad, hostmath.EmbeddingGrad, device.Kernels.EmbeddingGrad)
}

// cost: a gather, which reads the ids, only the weight rows they name (one
// per token) and the positions, and adds one position per element.
func (Embedding) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return device.Cost{FLOPs: elemsOf(out), ReadBytes: bytesOf(in[0], out, in[2]), WriteBytes: bytesOf(out)}
}

// cost: the gradient zeroed, then every row of g added into the row its
// id names (read and written).
func (EmbeddingGrad) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	g := bytesOf(in[1])
	return device.Cost{FLOPs: elemsOf(in[1]), ReadBytes: bytesOf(in...) + g, WriteBytes: bytesOf(out) + g}
}

// Element-wise in the performance model: memory-bound or nearly
// (perfmodel.ClassElementwise).
func (Embedding) class() string     { return perfmodel.ClassElementwise }
func (EmbeddingGrad) class() string { return perfmodel.ClassElementwise }
