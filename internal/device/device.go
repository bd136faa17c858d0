// Package device defines where gpuz keeps a model's memory and runs its
// kernels: the Device interface, with the host (cpu) implementation here and
// the simulated and CUDA devices beside it.
//
// A Device owns its memory: buffers of float32 elements allocated and freed
// through it, filled and read back through counted copies. Out of memory is
// an *OutOfMemoryError carrying the requested, free and total bytes.
package device

import (
	"fmt"
	"time"

	"gpuz/internal/kernels"
)

// Buffer is a block of float32 elements in a device's memory. Only the device
// that allocated a buffer can use it.
type Buffer interface {
	// Len is the number of float32 elements.
	Len() int
}

// Device allocates memory, copies data to and from it and runs kernels on it.
type Device interface {
	// Name identifies the device in tables: "host", "sim:8GiB", "cuda:0".
	Name() string
	// Alloc returns a zeroed buffer of n float32 elements, or an
	// *OutOfMemoryError.
	Alloc(n int) (Buffer, error)
	// Free releases a buffer; using it, or a view of it, afterwards is an
	// error.
	Free(Buffer)
	// View returns a buffer of n elements of b starting at element offset,
	// sharing b's memory; it is not freed on its own.
	View(b Buffer, offset, n int) Buffer
	// Upload copies src from host memory into dst.
	Upload(dst Buffer, src []float32) error
	// Download copies src into dst in host memory.
	Download(dst []float32, src Buffer) error
	// Stats reports the device's memory use and copies so far.
	Stats() Stats
	// MemInfo reports the bytes free for a new allocation and the device's
	// capacity. On a simulated device, free memory accounts for what other
	// processes reserve on it.
	MemInfo() (free, total int64, err error)
	// Kernels runs the math on the device's buffers.
	Kernels() Kernels
}

// Stats is a device's accounting of memory and copies.
type Stats struct {
	AllocatedBytes int64 // held now
	PeakBytes      int64 // most held at once since the last ResetPeak
	TotalBytes     int64 // capacity; 0 when bounded only by the host
	UploadBytes    int64 // host → device, since the device was made
	DownloadBytes  int64 // device → host, since the device was made
	// CopyTime is the time spent in those copies.
	CopyTime time.Duration
}

// OutOfMemoryError reports an allocation that did not fit.
type OutOfMemoryError struct {
	Device    string
	Requested int64 // bytes asked for
	Free      int64 // bytes free when asked
	Total     int64 // capacity of the device
}

func (e *OutOfMemoryError) Error() string {
	return fmt.Sprintf("%s: out of memory: requested %d bytes, %d of %d bytes free", e.Device, e.Requested, e.Free, e.Total)
}

// Kernels is the math a device runs on its buffers, one method per
// operation that the engine dispatches. Matrices are row-major; every
// method's shapes are those of the op it serves in package ops.
type Kernels interface {
	// Gemm computes c = op(a)·op(b) for op(a) m×k and op(b) k×n.
	Gemm(transA, transB bool, m, n, k int, a, b, c Buffer)
	// AddRowVector adds v to every row of m.
	AddRowVector(m, v Buffer)
	// SumRows sets dst to the sum of the rows of m.
	SumRows(dst, m Buffer)
	// LeakyReLU sets dst to the activation of src.
	LeakyReLU(dst, src Buffer, slope float32)
	// LeakyReLUGrad sets dst to the activation's gradient at x given g.
	LeakyReLUGrad(dst, x, g Buffer, slope float32)
	// Add sets dst = a + b.
	Add(dst, a, b Buffer)
	// Conv2d sets dst to the stride-1 convolution of x with w plus bias,
	// NCHW, with weights [out, in, k, k] (see kernels.ConvShape).
	Conv2d(dst, x, w, bias Buffer, s kernels.ConvShape)
	// Conv2dInputGrad sets dst to Conv2d's gradient with respect to x given
	// the output gradient g.
	Conv2dInputGrad(dst, g, w Buffer, s kernels.ConvShape)
	// Conv2dWeightGrad sets dst to Conv2d's gradient with respect to w given
	// the input x and the output gradient g.
	Conv2dWeightGrad(dst, x, g Buffer, s kernels.ConvShape)
	// Conv2dBiasGrad sets dst to Conv2d's gradient with respect to the
	// bias: g summed over images and positions, per channel.
	Conv2dBiasGrad(dst, g Buffer, s kernels.ConvShape)
	// MeanSquaredError sets the one element of dst to mean((pred − target)²).
	MeanSquaredError(dst, pred, target Buffer)
	// MeanSquaredErrorGrad sets dst = seed · 2(pred − target)/n, seed being a
	// one-element buffer.
	MeanSquaredErrorGrad(dst, pred, target, seed Buffer)
	// Mean sets the one element of dst to the mean of x.
	Mean(dst, x Buffer)
	// Fill sets every element of dst to scale times the one element of s.
	Fill(dst, s Buffer, scale float32)
	// SumSquares returns the sum of the squares of x's elements.
	SumSquares(x Buffer) float64
	// AdamStep applies Adam update number step to p from g·gradScale,
	// updating the moments m and v (see kernels.AdamStep).
	AdamStep(opt kernels.Adam, p, g, m, v Buffer, gradScale float64, step int)

	// LayerNorm normalises each row of x over len(gamma) columns, then
	// scales by gamma and shifts by beta (see kernels.LayerNorm).
	LayerNorm(dst, x, gamma, beta Buffer, eps float64)
	// LayerNormInputGrad sets dst to LayerNorm's gradient with respect to x
	// given the output gradient g.
	LayerNormInputGrad(dst, x, gamma, g Buffer, eps float64)
	// LayerNormWeightGrad sets dst to LayerNorm's gradient with respect to
	// gamma given the output gradient g.
	LayerNormWeightGrad(dst, x, g Buffer, eps float64)
	// Embedding sets dst to the rows of weight that ids select plus the
	// positions (see kernels.Embedding); ids out of range are an error.
	Embedding(dst, ids, weight, positions Buffer) error
	// EmbeddingGrad sets dst to Embedding's gradient with respect to weight
	// given the output gradient g.
	EmbeddingGrad(dst, ids, g Buffer) error
	// AttentionProbs sets dst to the attention probabilities of the packed
	// queries, keys and values qkv (see kernels.Attention for the layouts).
	AttentionProbs(dst, qkv Buffer, a kernels.Attention)
	// AttentionProbsGrad sets dst to AttentionProbs' gradient with respect
	// to qkv given its output p and that output's gradient dp.
	AttentionProbsGrad(dst, qkv, p, dp Buffer, a kernels.Attention)
	// AttentionMix sets dst to the attention output: the probabilities p
	// times the values in qkv, heads merged.
	AttentionMix(dst, p, qkv Buffer, a kernels.Attention)
	// AttentionMixProbsGrad sets dst to AttentionMix's gradient with
	// respect to p given the output gradient g.
	AttentionMixProbsGrad(dst, g, qkv Buffer, a kernels.Attention)
	// AttentionMixValueGrad sets dst to AttentionMix's gradient with
	// respect to qkv given the output gradient g.
	AttentionMixValueGrad(dst, p, g Buffer, a kernels.Attention)
	// SoftmaxCrossEntropy sets the one element of dst to the mean over the
	// rows of logits of the cross-entropy with the integer class ids in
	// targets; ids out of range are an error.
	SoftmaxCrossEntropy(dst, logits, targets Buffer) error
	// SoftmaxCrossEntropyGrad sets dst to the loss's gradient with respect
	// to the logits times the one element of seed.
	SoftmaxCrossEntropyGrad(dst, logits, targets, seed Buffer) error
}
