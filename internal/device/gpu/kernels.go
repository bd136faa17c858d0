package gpu

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"gpuz/internal/device"
	"gpuz/internal/half"
	"gpuz/internal/hostmath"
)

// BlockSize is the number of threads of every block gpuz launches; the
// reductions need a power of two.
const BlockSize = 256

// maxGrid bounds the grid of the grid-stride kernels.
const maxGrid = 4096

// reduceChunk is how many elements one block of reduce_partial adds; the
// number of partial sums, at most maxParts, follows from the size alone.
const (
	reduceChunk = 16 * BlockSize
	maxParts    = 1024
)

// sharedReduce is the dynamic shared memory of a reducing kernel: one
// double per thread.
const sharedReduce = BlockSize * 8

// Dispatcher implements device.Kernels by launching gpuz's CUDA kernels and
// GEMMs through a Launcher. Its arithmetic follows the host kernels'
// (package hostmath) operation by operation where it can; sums are in a
// different order, fixed by the sizes, so results are deterministic on a
// device but not bit-identical to the host's.
type Dispatcher struct {
	L Launcher
}

var _ device.Kernels = Dispatcher{}

// ptr is a buffer's device address.
func ptr(b device.Buffer) uintptr { return b.(Buffer).Ptr() }

// grid is the grid of a grid-stride loop over n elements.
func grid(n int) int { return max(1, min(maxGrid, (n+BlockSize-1)/BlockSize)) }

// each launches a grid-stride kernel over n elements; nothing when n is 0.
func (k Dispatcher) each(kernel string, n int, args ...Arg) {
	if n > 0 {
		k.L.Launch(kernel, grid(n), BlockSize, 0, args)
	}
}

// workspace hands out aligned pieces of the launcher's workspace for one
// method call.
type workspace struct {
	base uintptr
	size int
	used int
}

func (k Dispatcher) workspace() *workspace {
	p, n := k.L.Workspace()
	return &workspace{base: p, size: n}
}

// take returns the address of bytes of workspace, or 0 after recording an
// error when they do not fit.
func (k Dispatcher) take(w *workspace, bytes int, what string) uintptr {
	off := (w.used + 255) &^ 255
	if off+bytes > w.size {
		k.L.Fail(fmt.Errorf("gpu: %s needs %d bytes of workspace, %d of %d are left", what, bytes, w.size-off, w.size))
		return 0
	}
	w.used = off + bytes
	return w.base + uintptr(off)
}

// gemm computes the row-major c = alpha·op(a)·op(b) + beta·c, op(a) m×k and
// op(b) k×n, with row strides lda, ldb, ldc, through the column-major
// Sgemm: a row-major matrix is the column-major transpose, so
// cᵀ = op(b)ᵀ·op(a)ᵀ is one column-major GEMM with the operands and their
// transpose flags swapped and m and n swapped.
func (k Dispatcher) gemm(transA, transB bool, m, n, kk int, alpha float32, a uintptr, lda int, b uintptr, ldb int, beta float32, c uintptr, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	k.L.Sgemm(transB, transA, n, m, kk, alpha, b, ldb, a, lda, beta, c, ldc)
}

// Gemm computes c = op(a)·op(b).
func (k Dispatcher) Gemm(transA, transB bool, m, n, kk int, a, b, c device.Buffer) {
	lda, ldb := kk, n
	if transA {
		lda = m
	}
	if transB {
		ldb = kk
	}
	if kk == 0 {
		k.each("fill_value", m*n, Pointer(ptr(c)), Long(m*n), Float(0))
		return
	}
	k.gemm(transA, transB, m, n, kk, 1, ptr(a), lda, ptr(b), ldb, 0, ptr(c), n)
}

// GemmHalf computes c = op(a)·op(b) from 16-bit a and b through the
// launcher's GemmEx, with the operands swapped as gemm swaps them.
func (k Dispatcher) GemmHalf(f half.Format, transA, transB bool, m, n, kk int, a, b, c device.Buffer) {
	lda, ldb := kk, n
	if transA {
		lda = m
	}
	if transB {
		ldb = kk
	}
	if m == 0 || n == 0 {
		return
	}
	if kk == 0 {
		k.each("fill_value", m*n, Pointer(ptr(c)), Long(m*n), Float(0))
		return
	}
	k.L.GemmEx(f, transB, transA, n, m, kk, 1, ptr(b), ldb, ptr(a), lda, 0, ptr(c), n)
}

// ToHalf rounds src's first n values to 16 bits into dst.
func (k Dispatcher) ToHalf(dst, src device.Buffer, n int, f half.Format) {
	if f == half.FP16 {
		k.each("to_fp16", n, Pointer(ptr(dst)), Pointer(ptr(src)), Long(n))
		return
	}
	k.each("to_bf16", n, Pointer(ptr(dst)), Pointer(ptr(src)), Long(n))
}

// FromHalf widens src's first n 16-bit values into dst.
func (k Dispatcher) FromHalf(dst, src device.Buffer, n int, f half.Format) {
	if f == half.FP16 {
		k.each("from_fp16", n, Pointer(ptr(dst)), Pointer(ptr(src)), Long(n))
		return
	}
	k.each("from_bf16", n, Pointer(ptr(dst)), Pointer(ptr(src)), Long(n))
}

// AddRowVector adds v to every row of m.
func (k Dispatcher) AddRowVector(m, v device.Buffer) {
	k.each("add_row_vector", m.Len(), Pointer(ptr(m)), Pointer(ptr(v)), Long(m.Len()), Int(v.Len()))
}

// SumRows sets dst to the sum of the rows of m.
func (k Dispatcher) SumRows(dst, m device.Buffer) {
	cols := dst.Len()
	k.each("sum_rows", cols, Pointer(ptr(dst)), Pointer(ptr(m)), Int(m.Len()/cols), Int(cols))
}

// LeakyReLU sets dst to the activation of src.
func (k Dispatcher) LeakyReLU(dst, src device.Buffer, slope float32) {
	k.each("leaky_relu", dst.Len(), Pointer(ptr(dst)), Pointer(ptr(src)), Long(dst.Len()), Float(slope))
}

// LeakyReLUGrad sets dst to the activation's gradient at x given g.
func (k Dispatcher) LeakyReLUGrad(dst, x, g device.Buffer, slope float32) {
	k.each("leaky_relu_grad", dst.Len(), Pointer(ptr(dst)), Pointer(ptr(x)), Pointer(ptr(g)), Long(dst.Len()), Float(slope))
}

// Add sets dst = a + b.
func (k Dispatcher) Add(dst, a, b device.Buffer) {
	k.each("add", dst.Len(), Pointer(ptr(dst)), Pointer(ptr(a)), Pointer(ptr(b)), Long(dst.Len()))
}

// reduce adds op's terms over n elements of a (and b) into the double
// result[0] and, when out is not 0, sets out[0] = sum/div.
func (k Dispatcher) reduce(w *workspace, op, n int, a, b uintptr, out uintptr, div float64) (result uintptr) {
	parts := max(1, min(maxParts, (n+reduceChunk-1)/reduceChunk))
	chunk := max(1, (n+parts-1)/parts)
	partials := k.take(w, 8*parts, "a reduction")
	result = k.take(w, 8, "a reduction")
	if partials == 0 || result == 0 {
		return 0
	}
	k.L.Launch("reduce_partial", parts, BlockSize, sharedReduce, []Arg{Pointer(partials), Pointer(a), Pointer(b), Long(n), Long(chunk), Int(op)})
	k.L.Launch("reduce_final", 1, BlockSize, sharedReduce, []Arg{Pointer(out), Pointer(result), Pointer(partials), Int(parts), Double(div)})
	return result
}

// Operations of reduce_partial (reduce.cu).
const (
	opSum        = 0
	opSumSquares = 1
	opSumSqDiff  = 2
)

// MeanSquaredError sets dst[0] to mean((pred − target)²).
func (k Dispatcher) MeanSquaredError(dst, pred, target device.Buffer) {
	n := pred.Len()
	if n == 0 {
		k.each("fill_value", 1, Pointer(ptr(dst)), Long(1), Float(0))
		return
	}
	k.reduce(k.workspace(), opSumSqDiff, n, ptr(pred), ptr(target), ptr(dst), float64(n))
}

// MeanSquaredErrorGrad sets dst = seed·2(pred − target)/n.
func (k Dispatcher) MeanSquaredErrorGrad(dst, pred, target, seed device.Buffer) {
	k.each("mse_grad", dst.Len(), Pointer(ptr(dst)), Pointer(ptr(pred)), Pointer(ptr(target)), Pointer(ptr(seed)), Long(pred.Len()))
}

// Mean sets dst[0] to the mean of x.
func (k Dispatcher) Mean(dst, x device.Buffer) {
	k.reduce(k.workspace(), opSum, x.Len(), ptr(x), 0, ptr(dst), float64(x.Len()))
}

// Fill sets dst to scale·s[0].
func (k Dispatcher) Fill(dst, s device.Buffer, scale float32) {
	k.each("fill_scalar", dst.Len(), Pointer(ptr(dst)), Pointer(ptr(s)), Long(dst.Len()), Float(scale))
}

// SumSquares returns the sum of the squares of x; it waits for the device.
// On a device error it returns NaN, and the device reports the error at
// its next copy.
func (k Dispatcher) SumSquares(x device.Buffer) float64 {
	result := k.reduce(k.workspace(), opSumSquares, x.Len(), ptr(x), 0, 0, 1)
	if result == 0 {
		return math.NaN()
	}
	var s float64
	if err := k.L.Read(unsafe.Pointer(&s), result, 8); err != nil {
		k.L.Fail(err)
		return math.NaN()
	}
	return s
}

// AdamStep applies Adam update number step, with the per-step constants in
// float32 exactly as hostmath.AdamStep computes them.
func (k Dispatcher) AdamStep(opt hostmath.Adam, p, g, m, v device.Buffer, gradScale float64, step int) {
	n := p.Len()
	k.each("adam", n, Pointer(ptr(p)), Pointer(ptr(g)), Pointer(ptr(m)), Pointer(ptr(v)), Long(n),
		Float(float32(gradScale)), Float(float32(opt.Beta1)), Float(float32(opt.Beta2)),
		Float(float32(1-opt.Beta1)), Float(float32(1-opt.Beta2)),
		Float(float32(opt.LR/(1-math.Pow(opt.Beta1, float64(step))))),
		Float(float32(math.Sqrt(1-math.Pow(opt.Beta2, float64(step))))), Float(float32(opt.Eps)))
}

// LayerNorm normalises each row of x over len(gamma) columns.
func (k Dispatcher) LayerNorm(dst, x, gamma, beta device.Buffer, eps float64) {
	cols := gamma.Len()
	if rows := x.Len() / cols; rows > 0 {
		k.L.Launch("layer_norm", rows, BlockSize, sharedReduce, []Arg{Pointer(ptr(dst)), Pointer(ptr(x)), Pointer(ptr(gamma)), Pointer(ptr(beta)), Int(cols), Double(eps)})
	}
}

// LayerNormInputGrad sets dst to LayerNorm's gradient with respect to x.
func (k Dispatcher) LayerNormInputGrad(dst, x, gamma, g device.Buffer, eps float64) {
	cols := gamma.Len()
	if rows := x.Len() / cols; rows > 0 {
		k.L.Launch("layer_norm_input_grad", rows, BlockSize, sharedReduce, []Arg{Pointer(ptr(dst)), Pointer(ptr(x)), Pointer(ptr(gamma)), Pointer(ptr(g)), Int(cols), Double(eps)})
	}
}

// LayerNormWeightGrad sets dst to LayerNorm's gradient with respect to
// gamma: the rows' statistics into the workspace, then one thread per
// column.
func (k Dispatcher) LayerNormWeightGrad(dst, x, g device.Buffer, eps float64) {
	cols := dst.Len()
	rows := x.Len() / cols
	if rows == 0 {
		k.each("fill_value", cols, Pointer(ptr(dst)), Long(cols), Float(0))
		return
	}
	stats := k.take(k.workspace(), 8*rows, "layer norm statistics")
	if stats == 0 {
		return
	}
	k.L.Launch("row_stats", rows, BlockSize, sharedReduce, []Arg{Pointer(stats), Pointer(ptr(x)), Int(cols), Double(eps)})
	k.each("layer_norm_weight_grad", cols, Pointer(ptr(dst)), Pointer(ptr(x)), Pointer(ptr(g)), Pointer(stats), Int(rows), Int(cols))
}

// readIDs copies a buffer of integer ids stored as floats to the host and
// checks that each is an exact integer in [0, classes), as the host kernels
// do, with their messages.
func (k Dispatcher) readIDs(b device.Buffer, classes int, what string) ([]int32, error) {
	vals := make([]float32, b.Len())
	if len(vals) > 0 {
		if err := k.L.Read(unsafe.Pointer(&vals[0]), ptr(b), 4*len(vals)); err != nil {
			return nil, err
		}
	}
	ids := make([]int32, len(vals))
	for i, v := range vals {
		c := int(v)
		if float32(c) != v || c < 0 || c >= classes {
			return nil, fmt.Errorf("%s: element %d: class id %v is not an integer in [0, %d)", what, i, float64(v), classes)
		}
		ids[i] = int32(c)
	}
	return ids, nil
}

// Embedding sets dst to the rows of weight that ids select plus the
// positions. It reads the ids back to check them, which waits for the
// device.
func (k Dispatcher) Embedding(dst, ids, weight, positions device.Buffer) error {
	n, rows := dst.Len(), ids.Len()
	d, err := rowLength("embedding", "outputs", n, rows)
	if err != nil {
		return err
	}
	if weight.Len()%d != 0 || positions.Len()%d != 0 || positions.Len() == 0 {
		return fmt.Errorf("embedding: weight (%d) and positions (%d) are not rows of %d", weight.Len(), positions.Len(), d)
	}
	if _, err := k.readIDs(ids, weight.Len()/d, "embedding ids"); err != nil {
		return err
	}
	k.each("embedding", n, Pointer(ptr(dst)), Pointer(ptr(ids)), Pointer(ptr(weight)), Pointer(ptr(positions)), Long(n), Int(d), Int(positions.Len()/d))
	return nil
}

// EmbeddingGrad sets dst to Embedding's gradient with respect to weight. It
// reads the ids back, groups the tokens by id on the host (token order kept)
// and writes the lists to the workspace, so that one thread per weight adds
// its rows in the host's order.
func (k Dispatcher) EmbeddingGrad(dst, ids, g device.Buffer) error {
	rows := ids.Len()
	d, err := rowLength("embedding gradient", "gradients", g.Len(), rows)
	if err != nil {
		return err
	}
	if dst.Len()%d != 0 {
		return fmt.Errorf("embedding gradient: %d weights are not rows of %d", dst.Len(), d)
	}
	vocab := dst.Len() / d
	list, err := k.readIDs(ids, vocab, "embedding ids")
	if err != nil {
		return err
	}
	offsets := make([]int32, vocab+1)
	for _, id := range list {
		offsets[id+1]++
	}
	for v := range vocab {
		offsets[v+1] += offsets[v]
	}
	tokens := make([]int32, rows)
	next := append([]int32(nil), offsets[:vocab]...)
	for r, id := range list {
		tokens[next[id]] = int32(r)
		next[id]++
	}
	w := k.workspace()
	po, pt := k.take(w, 4*len(offsets), "embedding gradient lists"), k.take(w, 4*len(tokens), "embedding gradient lists")
	if po == 0 || pt == 0 {
		return errors.New("embedding gradient: the token lists do not fit the device workspace")
	}
	if err := k.L.Write(po, unsafe.Pointer(&offsets[0]), 4*len(offsets)); err != nil {
		return fmt.Errorf("embedding gradient: %w", err)
	}
	if err := k.L.Write(pt, unsafe.Pointer(&tokens[0]), 4*len(tokens)); err != nil {
		return fmt.Errorf("embedding gradient: %w", err)
	}
	k.each("embedding_grad", dst.Len(), Pointer(ptr(dst)), Pointer(po), Pointer(pt), Pointer(ptr(g)), Long(dst.Len()), Int(d))
	return nil
}

// rowLength returns the length of the rows when n elements (what they
// are) split into rows, or op's error when they do not.
func rowLength(op, what string, n, rows int) (int, error) {
	if rows == 0 || n%rows != 0 {
		return 0, fmt.Errorf("%s: %d %s do not split into %d rows", op, n, what, rows)
	}
	return n / rows, nil
}

// SoftmaxCrossEntropy sets dst[0] to the mean cross-entropy of the rows of
// logits with the class ids in targets. It reads the targets back to check
// them, which waits for the device.
func (k Dispatcher) SoftmaxCrossEntropy(dst, logits, targets device.Buffer) error {
	rows := targets.Len()
	classes, err := rowLength("cross-entropy", "logits", logits.Len(), rows)
	if err != nil {
		return err
	}
	if _, err := k.readIDs(targets, classes, "cross-entropy targets"); err != nil {
		return err
	}
	w := k.workspace()
	rowloss, result := k.take(w, 8*rows, "cross-entropy rows"), k.take(w, 8, "cross-entropy")
	if rowloss == 0 || result == 0 {
		return errors.New("cross-entropy: the row losses do not fit the device workspace")
	}
	k.L.Launch("xent_rows", rows, BlockSize, sharedReduce, []Arg{Pointer(rowloss), Pointer(ptr(logits)), Pointer(ptr(targets)), Int(classes)})
	k.L.Launch("reduce_final", 1, BlockSize, sharedReduce, []Arg{Pointer(ptr(dst)), Pointer(result), Pointer(rowloss), Int(rows), Double(float64(rows))})
	return nil
}

// SoftmaxCrossEntropyGrad sets dst to the loss's gradient times seed[0].
func (k Dispatcher) SoftmaxCrossEntropyGrad(dst, logits, targets, seed device.Buffer) error {
	rows := targets.Len()
	if rows == 0 || logits.Len()%rows != 0 || dst.Len() != logits.Len() {
		return fmt.Errorf("cross-entropy gradient: %d logits and %d gradients do not split into %d rows", logits.Len(), dst.Len(), rows)
	}
	classes := logits.Len() / rows
	if _, err := k.readIDs(targets, classes, "cross-entropy targets"); err != nil {
		return err
	}
	k.L.Launch("xent_grad", rows, BlockSize, sharedReduce, []Arg{Pointer(ptr(dst)), Pointer(ptr(logits)), Pointer(ptr(targets)), Pointer(ptr(seed)), Int(rows), Int(classes)})
	return nil
}
