package ops

import (
	"fmt"

	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/perfmodel"
)

// SoftmaxCrossEntropy is PyTorch's F.cross_entropy with integer targets and
// mean reduction: given logits [tokens, classes] and targets of any 2-D
// shape holding one exact integer class id per token (in the tensors' float
// type), it is the mean over tokens of logsumexp(row) − row[target], a
// scalar, computed with the row maximum subtracted so that it cannot
// overflow. It is differentiable in the logits only; targets that are not
// class ids are an error.
type SoftmaxCrossEntropy struct{}

func (SoftmaxCrossEntropy) signature() []int { return []int{2, 2, 0} }

func (SoftmaxCrossEntropy) shape(in []tensor.Shape) (tensor.Shape, error) {
	if _, err := logitsShape(in); err != nil {
		return nil, err
	}
	return tensor.ScalarShape(), nil
}

// logitsShape checks that the first two shapes are logits [tokens, classes]
// and one target per token, and returns the logits' shape.
func logitsShape(in []tensor.Shape) (tensor.Shape, error) {
	logits, targets := in[0], in[1]
	if len(logits) != 2 || logits[1] == 0 || targets.TotalSize() != logits[0] {
		return nil, fmt.Errorf("logits %v and targets %v do not fit", logits, targets)
	}
	return logits, nil
}

func (op SoftmaxCrossEntropy) kernel() kernel {
	return kernel{hostOf(op, softmaxCrossEntropyHost, softmaxCrossEntropyHost), op.launch}
}

func softmaxCrossEntropyHost[T hostmath.Float](_ SoftmaxCrossEntropy, h hostArgs[T]) error {
	loss, err := hostmath.SoftmaxCrossEntropy(h.in[0], h.in[1])
	h.out[0] = T(loss)
	return err
}

func (SoftmaxCrossEntropy) launch(d launchArgs) error {
	return d.k.SoftmaxCrossEntropy(d.out, d.args[0], d.args[1])
}

func (SoftmaxCrossEntropy) grads() []grad {
	return []grad{gradOf(SoftmaxCrossEntropyGrad{}, 0, 1, gArg), nil}
}

// SoftmaxCrossEntropyGrad is the gradient of SoftmaxCrossEntropy with
// respect to the logits, given the logits, the targets and the scalar
// gradient of the loss (the seed): seed·(softmax(row) − onehot(target))/tokens.
type SoftmaxCrossEntropyGrad struct{}

func (SoftmaxCrossEntropyGrad) signature() []int { return []int{2, 2, 0, 2} }

func (SoftmaxCrossEntropyGrad) shape(in []tensor.Shape) (tensor.Shape, error) { return logitsShape(in) }

func (op SoftmaxCrossEntropyGrad) kernel() kernel {
	return kernel{hostOf(op, softmaxCrossEntropyGradHost, softmaxCrossEntropyGradHost), op.launch}
}

func softmaxCrossEntropyGradHost[T hostmath.Float](_ SoftmaxCrossEntropyGrad, h hostArgs[T]) error {
	return hostmath.SoftmaxCrossEntropyGrad(h.out, h.in[0], h.in[1], h.in[2][0])
}

func (SoftmaxCrossEntropyGrad) launch(d launchArgs) error {
	return d.k.SoftmaxCrossEntropyGrad(d.out, d.args[0], d.args[1], d.args[2])
}

// cost: about 4 operations per logit (max, subtract, exp, sum).
func (SoftmaxCrossEntropy) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return stream(in, out, 4*elemsOf(in[0]))
}

// cost: about 5 operations per logit (the softmax again, less one-hot,
// scaled).
func (SoftmaxCrossEntropyGrad) cost(in []tensor.Shape, out tensor.Shape) device.Cost {
	return perElement(in, out, 5)
}

// The reductions, under 16-bit precision: read and stored in float32
// (autocast's fp32 list: softmax, layer norm, the losses, sums).
func (SoftmaxCrossEntropy) cast() levers.Cast     { return levers.CastFP32 }
func (SoftmaxCrossEntropyGrad) cast() levers.Cast { return levers.CastFP32 }

// Element-wise in the performance model: memory-bound or nearly
// (perfmodel.ClassElementwise).
func (SoftmaxCrossEntropy) class() string     { return perfmodel.ClassElementwise }
func (SoftmaxCrossEntropyGrad) class() string { return perfmodel.ClassElementwise }
