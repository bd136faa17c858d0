package hostmath

import (
	"math"
	"unsafe"
)

// fewRowsMax is the most rows of x the few-row kernel takes: two vectors
// of 16 lanes (fewrow.h).
const fewRowsMax = 32

// fewRowsTile is how many columns of y a worker takes at a time: four of
// the kernel's blocks of 14 rows of W, so that a 2000-wide layer makes 36
// tiles and a worker that another process slows down holds the others up
// by at most one.
const fewRowsTile = 4 * 14

// fewRowsDotMax is the most rows of x that fewRowsNT multiplies by dot
// products along k (gpuz_fewrow_dot in fewrow.h) rather than by the
// broadcast kernel: with one to four rows (a decode step's tokens) that
// reads W at 16 elements a load, and measured twice the broadcast
// kernel's rate at one row (19.5 against 9.7 GB per CPU second, 2048 →
// 8192, on a loaded Zen 5) and 1.1× at four.
const fewRowsDotMax = 4

// fewRowsMinWork is the fewest multiply-adds (m·n·k) worth a second
// worker: below it starting one costs about as much as the work.
const fewRowsMinWork = 1 << 20

// useFewRows reports whether y = x·wᵀ with x m×k and w n×k runs the few-row
// kernel: float32 on a CPU with AVX-512, at most fewRowsMax rows, and y's
// rows addressable by the kernel's 32-bit scatter indices.
func useFewRows(m, n, k int) bool {
	return fewRowKernel && m >= 1 && m <= fewRowsMax && k >= 1 && 16*n <= math.MaxInt32
}

// fewRowsNT computes y = x·wᵀ with the few-row kernel (useFewRows must
// hold): x is m×k, w n×k, y m×n, all dense row-major. Up to fewRowsDotMax
// rows, workers take tiles of fewRowsTile columns of y in turn, each
// reading its rows of w once as dot products with x's rows; above it, x
// is packed transposed into scratch once and the tiles run the broadcast
// kernel.
func fewRowsNT(m, n, k int, x, w, y []float32) {
	if m <= fewRowsDotMax {
		fewRowsTiles(m, n, k, func(j0, j1 int) { fewRowDotColumns(x, m, k, w, y, n, j0, j1) })
		return
	}
	fewRows(m, n, k, k, func(xt []float32, lanes int) { fewRowPack(x, m, k, xt, lanes) },
		func(xt []float32, lanes, j0, j1 int) { fewRowColumns(xt, lanes, m, n, k, w, y, j0, j1) })
}

// fewRowsNT16 is fewRowsNT for bf16 x and w (useFewRows16 must hold),
// on the kernel of fewrow16.h, which packs x by pairs of k.
func fewRowsNT16(m, n, k int, x, w []uint16, y []float32) {
	words := func(xt []float32) []uint32 { return unsafe.Slice((*uint32)(unsafe.Pointer(&xt[0])), len(xt)) }
	fewRows(m, n, k, (k+1)/2, func(xt []float32, lanes int) { fewRow16Pack(x, m, k, words(xt), lanes) },
		func(xt []float32, lanes, j0, j1 int) { fewRow16Columns(words(xt), lanes, m, n, k, w, y, j0, j1) })
}

// useFewRows16 reports whether a bf16 y = x·wᵀ runs fewrow16.h's kernel:
// as useFewRows, on a CPU with the AVX512_BF16 dot instruction.
func useFewRows16(m, n, k int) bool { return bf16Dot && useFewRows(m, n, k) }

// fewRows runs a few-row product of m rows, n columns and k terms: pack
// writes x transposed into lanes·packed 32-bit words of scratch once, then
// workers take tiles of fewRowsTile columns of y in turn (columns).
func fewRows(m, n, k, packed int, pack func(xt []float32, lanes int), columns func(xt []float32, lanes, j0, j1 int)) {
	if n == 0 {
		return
	}
	lanes := 16
	if m > 16 {
		lanes = 32
	}
	p := getScratch[float32](&fewRowPool, lanes*packed+16)
	defer putScratch(&fewRowPool, p)
	xt := align64(*p)[:lanes*packed]
	pack(xt, lanes)

	fewRowsTiles(m, n, k, func(j0, j1 int) { columns(xt, lanes, j0, j1) })
}

// fewRowsTiles runs columns(j0, j1) over tiles of fewRowsTile columns of
// an m × n product of k terms, on as many workers as it is worth.
func fewRowsTiles(m, n, k int, columns func(j0, j1 int)) {
	tiles := (n + fewRowsTile - 1) / fewRowsTile
	workers := min(Threads(), tiles)
	if m*n*k < fewRowsMinWork {
		workers = 1
	}
	if workers <= 1 {
		columns(0, n)
		return
	}
	tile := func(t int) { columns(t*fewRowsTile, min((t+1)*fewRowsTile, n)) }
	shareTasks(workers, tiles, func() (func(int), func()) { return tile, nil })
}

// fewRowPool holds the packed x of fewRowsNT.
var fewRowPool scratchPool

// align64 returns s from its first element on a 64-byte boundary, the
// alignment of an AVX-512 vector; s must have 15 elements to spare.
func align64(s []float32) []float32 {
	off := int(uintptr(unsafe.Pointer(&s[0])) % 64 / 4)
	if off == 0 {
		return s
	}
	return s[16-off:]
}
