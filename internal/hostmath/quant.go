package hostmath

import (
	"gpuz/internal/quant"
)

// The products by a quantized weight read W's blocks and decode them where
// they are used, never the whole weight. Three shapes:
//
//   - a few rows (m ≤ quantDotMax, a decode step): each worker takes tiles
//     of W's rows (QuantXWt) or of its columns (QuantGW) and streams their
//     blocks once, decoded into vector registers and multiplied with x's
//     or g's rows there (quant.h), so that the product runs at the pace of
//     the quantized bytes;
//   - many rows on a CPU with AVX-512 (prefill, training): each task
//     decodes a panel of W, a block of terms at a time, into a small
//     float32 tile that the SGEMM's micro-kernel (sgemm.h) multiplies by
//     its rows of x or g;
//   - many rows elsewhere: larger panels decoded in turn and multiplied by
//     the BLAS, which spreads each product over the threads.
//
// The kernels run in the instruction set quantISA names (quant.h: AVX-512
// or AVX2 with FMA and F16C), or as Go loops (quantGo: a purego build, or
// a CPU without them), which decode a run of blocks at a time with
// quant.DequantizeRow. Each sum runs in an order fixed by the shape, so
// results do not depend on the thread count. NF4's blocks run over the
// flattened weight, but a row of it (k a multiple of NF4Block) is whole
// blocks too, so that its kernels are the row kinds' with one more
// decoding. The float kinds run the reference loops.

// quantDotMax is the most rows of x or g that the few-row kernels take.
const quantDotMax = 4

// quantRun is the most weights of a row that the Go loops decode at a
// time, and the columns of dx a few-row QuantGW task takes: a whole number
// of every kind's blocks.
const quantRun = 512

// quantPanelRows is how many of W's rows a many-row QuantXWt task decodes
// (columns of y): with sgemmKC terms, a 128 KiB tile, which stays in L2
// beside the SGEMM's packed operands.
const quantPanelRows = 4 * sgemmNR

// quantGWCols is how many of W's columns (dx's) a many-row QuantGW task
// takes: one Q4_K super-block, sgemmNR's multiple.
const quantGWCols = 256

// quantBLASPanel is the side of the panels that the many-row products
// decode for the BLAS: 1 MiB of float32, a product large enough that the
// BLAS's threads pay.
const quantBLASPanel = 512

// QuantPath names the path QuantXWt and QuantGW run for Q8_0, Q4_0, Q4_K,
// Q6_K and NF4 on this CPU in this build, as BF16Path does for GemmBF16:
// "AVX-512 kernels (quant.h; many rows on gpuz's SGEMM micro-kernel)", "AVX2
// kernels (quant.h; many rows by OpenBLAS 0.3.21 (…))" or "Go loops (…)".
func QuantPath() string {
	many := "many rows by " + BLASName()
	switch quantISA {
	case quantAVX512:
		if sgemmKernel {
			many = "many rows on gpuz's SGEMM micro-kernel"
		}
		return "AVX-512 kernels (quant.h; " + many + ")"
	case quantAVX2:
		return "AVX2 kernels (quant.h; " + many + ")"
	}
	return "Go loops (" + many + ")"
}

// quantFast reports whether kind has the kernels of quant.h.
func quantFast(kind quant.Kind) bool { return kind.Quantized() }

// quantWeight is a weight W [n, k] stored in a block kind, as the kernels
// read it: w is its bytes, rb the bytes of a row's blocks (an NF4 row's
// codes), nf an NF4 weight's layout.
type quantWeight struct {
	kind quant.Kind
	w    []byte
	n, k int
	rb   int
	nf   quant.NF4Layout
}

// newQuantWeight returns W [n, k] stored in kind in w.
func newQuantWeight(kind quant.Kind, n, k int, w []byte) quantWeight {
	qw := quantWeight{kind: kind, w: w, n: n, k: k, rb: int(kind.RowBytes(k))}
	if kind == quant.NF4 {
		qw.nf = quant.NF4LayoutOf(n, k)
	}
	return qw
}

// QuantXWt sets y [m, n] = x [m, k] · Wᵀ for W [n, k] stored in kind in
// w (kind.Bytes(n, k) bytes): the products of the projections whose
// frozen weight is quantized. W's blocks are decoded where they are used,
// never the whole weight (see the comment above quantDotMax). Every kind:
// the floats run a reference loop that widens a row at a time.
func QuantXWt(kind quant.Kind, m, n, k int, x []float32, w []byte, y []float32) {
	switch {
	case m == 0 || n == 0:
		return
	case k == 0:
		clear(y[:m*n])
		return
	case !quantFast(kind):
		quantXWtRef(kind, m, n, k, x, w, y)
		return
	}
	qw := newQuantWeight(kind, n, k, w)
	switch {
	case m <= quantDotMax:
		fewRowsTiles(m, n, k, func(j0, j1 int) { quantDot(qw, m, x, y, j0, j1) })
	case quantISA == quantAVX512 && sgemmKernel:
		quantTiles(qw, true, m, x, y)
	default:
		quantBLAS(qw, true, m, x, y)
	}
}

// QuantGW sets dx [m, k] = g [m, n] · W for W [n, k] stored in kind in w:
// the gradient with respect to the input of a projection whose frozen
// weight is quantized (QLoRA's backward pass). As QuantXWt, W's blocks
// are decoded where they are used.
func QuantGW(kind quant.Kind, m, n, k int, g []float32, w []byte, dx []float32) {
	switch {
	case m == 0 || k == 0:
		return
	case n == 0:
		clear(dx[:m*k])
		return
	case !quantFast(kind):
		quantGWRef(kind, m, n, k, g, w, dx)
		return
	}
	qw := newQuantWeight(kind, n, k, w)
	switch {
	case m <= quantDotMax:
		runs := ceilDiv(k, quantRun)
		run := func(t int) { quantGWRows(qw, m, g, dx, t*quantRun/32, min((t+1)*quantRun, k)/32) }
		workers := min(Threads(), runs)
		if m*n*k < fewRowsMinWork {
			workers = 1
		}
		if workers <= 1 {
			for t := range runs {
				run(t)
			}
			return
		}
		shareTasks(workers, runs, func() (func(int), func()) { return run, nil })
	case quantISA == quantAVX512 && sgemmKernel:
		quantTiles(qw, false, m, g, dx)
	default:
		quantBLAS(qw, false, m, g, dx)
	}
}

// quantTiles computes a many-row product on the SGEMM's micro-kernel:
// c = a·Wᵀ where trans (QuantXWt: a = x, c = y), else c = a·W (QuantGW:
// a = g, c = dx). A task takes up to sgemmTileRows rows of a by a panel
// of c's columns (quantPanelRows of W's rows, or quantGWCols of its
// columns), and for each block of sgemmKC terms in turn decodes W's block
// into a tile (quantBlock) and multiplies a's rows by it into c (the
// first block writes c, the later ones add to it).
func quantTiles(qw quantWeight, trans bool, m int, a, c []float32) {
	out, terms := qw.sides(trans)
	panel := quantGWCols
	if trans {
		panel = quantPanelRows
	}
	rowTiles := ceilDiv(m, sgemmTileRows)
	tasks := rowTiles * ceilDiv(out, panel)
	shareTasks(min(Threads(), tasks), tasks, func() (func(int), func()) {
		tile, bt, ap, s := quantScratch(panel * sgemmKC)
		return func(t int) {
			i0, o0 := t%rowTiles*sgemmTileRows, t/rowTiles*panel
			ob := min(panel, out-o0)
			for t0 := 0; t0 < terms; t0 += sgemmKC {
				tc := min(sgemmKC, terms-t0)
				ldb := quantBlock(qw, trans, o0, ob, t0, tc, tile)
				sgemmTile(false, trans, ob, tc, 1, a[t0:], terms, tile, ldb, nil, bt, firstBeta(t0), c[o0:], out,
					i0, min(i0+sgemmTileRows, m), 0, ob, ap)
			}
		}, func() { putScratch(&quantPool, s) }
	})
}

// sides returns the columns of the product's output and the terms of its
// sums: W's rows and columns for a·Wᵀ (trans), its columns and rows for
// a·W.
func (qw quantWeight) sides(trans bool) (out, terms int) {
	if trans {
		return qw.n, qw.k
	}
	return qw.k, qw.n
}

// quantBlock decodes the block of W that the product's output columns
// [o0, o0 + ob) take from its terms [t0, t0 + tc) into tile, laid out as
// the product reads it, and returns the tile's row stride: W's rows o0… as
// they are for a·Wᵀ (trans), W's rows t0… for a·W.
func quantBlock(qw quantWeight, trans bool, o0, ob, t0, tc int, tile []float32) int {
	if trans {
		quantTile(qw, o0, ob, t0/32, (t0+tc)/32, tile, tc)
		return tc
	}
	quantTile(qw, t0, tc, o0/32, (o0+ob)/32, tile, ob)
	return ob
}

// quantScratch returns a worker's scratch for the many-row tasks: a tile
// of size floats, and the SGEMM's packed B (as large, 64-byte aligned) and
// packed rows of A (sgemmTileRows by sgemmKC, aligned), all in s, which
// the worker puts back in quantPool.
func quantScratch(size int) (tile, bt, ap []float32, s *[]float32) {
	apLen := sgemmTileRows*sgemmKC + 16
	s = getScratch[float32](&quantPool, 2*size+16+apLen)
	tile = (*s)[:size]
	bt = align64((*s)[size : 2*size+16])
	ap = align64((*s)[2*size+16:])
	return tile, bt, ap, s
}

// firstBeta is the β of a block of terms starting at term t0: 0 for the
// first (the product writes its output), 1 for the later ones (they add).
func firstBeta(t0 int) float32 {
	if t0 == 0 {
		return 0
	}
	return 1
}

// quantBLAS computes a many-row product by the BLAS, c = a·Wᵀ (trans) or
// c = a·W as quantTiles does: panels of quantBLASPanel of c's columns and of
// the terms, W's block decoded in turn (quantBlock) and multiplied into c
// by gemmStrided.
func quantBLAS(qw quantWeight, trans bool, m int, a, c []float32) {
	out, terms := qw.sides(trans)
	p := getScratch[float32](&quantPool, quantBLASPanel*quantBLASPanel)
	defer putScratch(&quantPool, p)
	tile := *p
	for o0 := 0; o0 < out; o0 += quantBLASPanel {
		ob := min(quantBLASPanel, out-o0)
		for t0 := 0; t0 < terms; t0 += quantBLASPanel {
			tc := min(quantBLASPanel, terms-t0)
			ldb := quantBlock(qw, trans, o0, ob, t0, tc, tile)
			gemmStrided(false, trans, m, ob, tc, 1, a[t0:], terms, tile, ldb, firstBeta(t0), c[o0:], out)
		}
	}
}

// quantPool holds the many-row products' tiles.
var quantPool scratchPool

// quantDot computes columns [j0, j1) of y = x·Wᵀ for m ≤ quantDotMax rows
// of x.
func quantDot(qw quantWeight, m int, x, y []float32, j0, j1 int) {
	if quantISA != quantGo {
		quantDotC(qw, m, x, y, j0, j1)
		return
	}
	k := qw.k
	var run [quantRun]float32
	var sums [quantDotMax]float32
	for j := j0; j < j1; j++ {
		clear(sums[:])
		for p0 := 0; p0 < k; p0 += quantRun {
			p1 := min(p0+quantRun, k)
			dec := run[:p1-p0]
			qw.decode(dec, j, p0)
			for i := range m {
				xi, s := x[i*k+p0:i*k+p1], sums[i]
				for p, v := range dec {
					s += xi[p] * v
				}
				sums[i] = s
			}
		}
		for i := range m {
			y[i*qw.n+j] = sums[i]
		}
	}
}

// quantGWRows computes columns [32·s0, 32·s1) of dx = g·W for m ≤
// quantDotMax rows of g, at most quantRun columns in Go.
func quantGWRows(qw quantWeight, m int, g, dx []float32, s0, s1 int) {
	if quantISA != quantGo {
		quantGWC(qw, m, g, dx, s0, s1)
		return
	}
	n, k := qw.n, qw.k
	p0, p1 := 32*s0, 32*s1
	for i := range m {
		clear(dx[i*k+p0 : i*k+p1])
	}
	var run [quantRun]float32
	dec := run[:p1-p0]
	for j := range n {
		qw.decode(dec, j, p0)
		for i := range m {
			gij, d := g[i*n+j], dx[i*k+p0:i*k+p1]
			for p, v := range dec {
				d[p] += gij * v
			}
		}
	}
}

// quantTile decodes weights [32·s0, 32·s1) of W's rows [r0, r0 + rows)
// into dst, rows ldd apart.
func quantTile(qw quantWeight, r0, rows, s0, s1 int, dst []float32, ldd int) {
	if quantISA != quantGo {
		quantTileC(qw, r0, rows, s0, s1, dst, ldd)
		return
	}
	for r := range rows {
		qw.decode(dst[r*ldd:r*ldd+32*(s1-s0)], r0+r, 32*s0)
	}
}

// decode sets dst to W's weights [p0, p0 + len(dst)) of row j, whole
// blocks: the row kinds as quant.DequantizeRow, NF4 as dequantize_4bit
// (NF4Layout), a block at a time.
func (qw quantWeight) decode(dst []float32, j, p0 int) {
	row := qw.w[j*qw.rb:]
	if qw.kind != quant.NF4 {
		quant.DequantizeRow(qw.kind, dst, row[quantByte(qw.kind, p0):quantByte(qw.kind, p0+len(dst))])
		return
	}
	for b := 0; b < len(dst); b += quant.NF4Block {
		blk := int64(j*qw.k+p0+b) / quant.NF4Block
		a := qw.nf.BlockAbsmax(qw.w, blk)
		y := dst[b : b+quant.NF4Block]
		for i, c := range qw.w[blk*quant.NF4Block/2 : (blk+1)*quant.NF4Block/2] {
			y[2*i] = quant.NF4Levels[c>>4] * a
			y[2*i+1] = quant.NF4Levels[c&0x0F] * a
		}
	}
}

// quantByte is the offset in a row of kind of its weight p, which starts
// a block.
func quantByte(kind quant.Kind, p int) int { return int(kind.RowBytes(p)) }

// quantXWtRef is QuantXWt as the reference loop for the float kinds: each
// of W's rows is widened into one scratch row.
func quantXWtRef(kind quant.Kind, m, n, k int, x []float32, w []byte, y []float32) {
	row := make([]float32, k)
	rb := int(kind.RowBytes(k))
	for j := range n {
		quant.DequantizeRow(kind, row, w[j*rb:(j+1)*rb])
		for i := range m {
			var s float32
			xi := x[i*k : (i+1)*k]
			for p, v := range row {
				s += xi[p] * v
			}
			y[i*n+j] = s
		}
	}
}

// quantGWRef is QuantGW as the reference loop for the float kinds.
func quantGWRef(kind quant.Kind, m, n, k int, g []float32, w []byte, dx []float32) {
	clear(dx[:m*k])
	row := make([]float32, k)
	rb := int(kind.RowBytes(k))
	for j := range n {
		quant.DequantizeRow(kind, row, w[j*rb:(j+1)*rb])
		for i := range m {
			gij, dxi := g[i*n+j], dx[i*k:(i+1)*k]
			for p, v := range row {
				dxi[p] += gij * v
			}
		}
	}
}
