package hostmath

// sgemmMinWork is the fewest multiply-adds (m·n·k) for which gpuz's own
// SGEMM runs a product: below it packing and starting the workers cost
// more than they save, and the BLAS runs it (BenchmarkSgemm: at 128³,
// 2^21, level with OpenBLAS's Haswell kernels; at 64³ two thirds of their
// speed; at 256³ 1.5×).
const sgemmMinWork = 1 << 22

// sgemmMinWorkName is sgemmMinWork as the messages write it.
const sgemmMinWorkName = "2^22"

// sgemmOverBLAS reports whether gpuz's own SGEMM runs the large float32
// products: on a CPU with AVX-512F whose OpenBLAS runs narrower kernels
// (forced by OPENBLAS_CORETYPE, or an OpenBLAS that does not recognise the
// CPU), where it measured 1.2–2.5× as fast as OpenBLAS's Haswell (AVX2)
// kernels and 2–4× its Prescott (SSE3) ones on the workloads' products
// (BenchmarkSgemm). Where OpenBLAS runs its own AVX-512 kernels it keeps
// them: its SkylakeX kernels measured as fast or up to a fifth faster.
var sgemmOverBLAS = sgemmKernel && narrowerBLAS(BLASKernels(), CPUVector())

// SGEMMPath names what runs the float32 matrix products in this build on
// this CPU: "gpuz AVX-512 SGEMM (…)" (sgemm.h, for products of at least
// 2^22 multiply-adds; the BLAS for the smaller ones) where sgemmOverBLAS
// holds, else the BLAS (BLASName). Either way a linear layer's forward
// product of at most 32 rows runs the few-row kernel of fewrow.h on a CPU
// with AVX-512F.
func SGEMMPath() string {
	if sgemmOverBLAS {
		return "gpuz AVX-512 SGEMM (" + BLASName() + " under " + sgemmMinWorkName + " multiply-adds)"
	}
	return BLASName()
}

// sgemmTileRows and sgemmTileCols are the largest tile of C a task
// computes: for a block of 256 terms, the tile's rows of A (192 KiB) and
// columns of B (1 MiB) stay in a core's L2 (2 MiB here) while the rows, 12
// at a time, in L1, run against the columns.
const (
	sgemmTileRows = 16 * sgemmMR
	sgemmTileCols = 32 * sgemmNR
)

// sgemmMinTileCols is the narrowest tile: the rows of A packed for a tile
// run against at least 4 panels of B.
const sgemmMinTileCols = 4 * sgemmNR

// sgemmPackedMax is the most elements of a row-major B that sgemm packs
// whole (4 MiB): the in_proj's input gradient's 1536 × 512 weight, not the
// weight gradients' 15360-row activations.
const sgemmPackedMax = 1 << 20

// sgemmTasksPerWorker is how many tasks a worker gets at least, when the
// product is large enough: a worker that another process slows down then
// holds the others up by a fraction of its share.
const sgemmTasksPerWorker = 4

// useSgemm reports whether a float32 product of m×k by k×n runs
// gpuz's own SGEMM (sgemm.h): where sgemmOverBLAS holds, for products large
// enough to pay for packing.
func useSgemm(m, n, k int) bool {
	return sgemmOverBLAS && m > 0 && n > 0 && k > 0 && m*n*k >= sgemmMinWork && 16*max(m, n, k) <= 1<<31-1
}

// sgemmStripeTerms is the fewest terms of a stripe: a product of few
// rows and columns over many terms (the weight gradients, 512 × 512 over
// 15360 tokens) is cut into stripes of its terms, each summed into a C of
// its own, and those added in turn; else its C makes few tiles, and each
// tile packs the same rows of A again for each of its neighbours' columns
// (BenchmarkSgemm's attn-ff-dw: a third of its time went to packing).
const sgemmStripeTerms = 16 * sgemmKC

// sgemmStripeMaxC is the most elements of a C that is cut into stripes:
// each stripe past the first sums into scratch of C's size.
const sgemmStripeMaxC = 1 << 20

// sgemmStripes is how many stripes of terms sgemm cuts an m×k by k×n
// product into: one a sgemmStripeTerms terms, for a C of at most
// sgemmStripeMaxC elements; one for the others. It depends on the shape
// only, so that the sums' order does not depend on the thread count.
func sgemmStripes(m, n, k int) int {
	if m*n > sgemmStripeMaxC {
		return 1
	}
	return max(1, k/sgemmStripeTerms)
}

// sgemm computes c = alpha·op(a)·op(b) + beta·c with gpuz's own AVX-512
// kernel (useSgemm must hold), with the operands' row strides lda, ldb and
// ldc as gemmStrided. The workers take tiles of C in turn. Under more than
// one tile's rows, B is packed whole once, in parallel, before them, when
// it is transposed (its packing gathers, slowly) or small enough to stay
// in the caches packed (sgemmPackedMax); else each tile packs its own
// columns of B, a block of terms at a time: packing a large B whole would
// write it to memory and read it back (measured slower, BenchmarkSgemm's
// weight gradients by a fifth). Each entry of C sums its terms in an order
// fixed by its position and the shape (blocks of sgemmKC terms in turn,
// within stripes added in turn: sgemmStripes), so the result does not
// depend on the thread count or on which worker runs which tile.
func sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	packWhole := m > sgemmTileRows && (transB || k*n <= sgemmPackedMax)
	sgemmWith(packWhole, sgemmStripes(m, n, k), transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// sgemmWith is sgemm, B packed whole before the tiles run when pack holds,
// else by each tile, a block of terms of its columns at a time, and the
// terms cut into at most stripes stripes of whole blocks. The first
// stripe sums into c as a product of its terms only would; each later one
// sums into scratch (alpha times its sum), added to c in turn after all.
func sgemmWith(pack bool, stripes int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	workers := Threads()
	panels := (n + sgemmNR - 1) / sgemmNR
	var packed []float32
	if pack {
		p := getScratch[float32](&sgemmPool, k*panels*sgemmNR+16)
		defer putScratch(&sgemmPool, p)
		packed = align64(*p)[:k*panels*sgemmNR]
		// One task per block of terms and group of panels.
		blocks := (k + sgemmKC - 1) / sgemmKC
		groups := (n + sgemmTileCols - 1) / sgemmTileCols
		shareTasks(min(workers, blocks*groups), blocks*groups, func() (func(int), func()) {
			return func(t int) {
				k0, j0 := t/groups*sgemmKC, t%groups*sgemmTileCols
				kc, nc := min(sgemmKC, k-k0), min(sgemmTileCols, n-j0)
				sgemmPackB(transB, b, ldb, k0, kc, j0, nc, packed[k0*panels*sgemmNR+j0/sgemmNR*kc*sgemmNR:])
			}, nil
		})
	}

	// Stripes of whole blocks of terms; fewer than asked when the blocks
	// run out.
	stripeTerms := ceilDiv(ceilDiv(k, max(1, stripes)), sgemmKC) * sgemmKC
	stripes = ceilDiv(k, stripeTerms)
	var partial []float32
	if stripes > 1 {
		p := getScratch[float32](&sgemmPool, (stripes-1)*m*n)
		defer putScratch(&sgemmPool, p)
		partial = *p
	}

	// Tiles of C: halve them until every worker has a few, the longer side
	// first, so that the tiles stay square: a tile of R rows and C columns
	// reads R + C values of A and B a term for R·C multiply-adds. A striped
	// product's tile of fewer columns than the most may take more rows in
	// their place, as many as fit the same L2 (BenchmarkSgemm's weight
	// gradients measured 3% and 15% faster; the other products, of few
	// blocks of terms, slower).
	tileCols := min(sgemmTileCols, ceilDiv(n, sgemmNR)*sgemmNR)
	rowBudget := sgemmTileRows
	if stripes > 1 {
		rowBudget += sgemmTileCols - tileCols
	}
	tileRows := min(rowBudget/sgemmMR*sgemmMR, ceilDiv(m, sgemmMR)*sgemmMR)
	tiles := func() int { return stripes * ceilDiv(m, tileRows) * ceilDiv(n, tileCols) }
	for tiles() < sgemmTasksPerWorker*workers && (tileRows > sgemmMR || tileCols > sgemmMinTileCols) {
		if tileCols > sgemmMinTileCols && (tileCols >= tileRows || tileRows <= sgemmMR) {
			tileCols = ceilDiv(tileCols/2, sgemmNR) * sgemmNR
		} else {
			tileRows = ceilDiv(tileRows/2, sgemmMR) * sgemmMR
		}
	}
	rowTiles := ceilDiv(m, tileRows)
	stripeTiles := rowTiles * ceilDiv(n, tileCols)
	shareTasks(min(workers, tiles()), tiles(), func() (func(int), func()) {
		aLen, bLen := tileRows*sgemmKC+16, 0
		if !pack {
			bLen = sgemmKC*tileCols + 16
		}
		s := getScratch[float32](&sgemmPool, aLen+bLen)
		ap, bt := align64((*s)[:aLen]), []float32(nil)
		if !pack {
			bt = align64((*s)[aLen:])
		}
		return func(t int) {
			stripe, t := t/stripeTiles, t%stripeTiles
			i0, j0 := t%rowTiles*tileRows, t/rowTiles*tileCols
			k0 := stripe * stripeTerms
			kt := min(stripeTerms, k-k0)
			sa, sb, sp := a[k0:], b[k0:], packed
			if transA {
				sa = a[k0*lda:]
			}
			if !transB {
				sb = b[k0*ldb:]
			}
			if pack {
				sp = packed[k0*panels*sgemmNR:]
			}
			sc, ldsc, sbeta := c, ldc, beta
			if stripe > 0 {
				sc, ldsc, sbeta = partial[(stripe-1)*m*n:stripe*m*n], n, 0
			}
			sgemmTile(transA, transB, n, kt, alpha, sa, lda, sb, ldb, sp, bt, sbeta, sc, ldsc, i0, min(i0+tileRows, m), j0, min(j0+tileCols, n), ap)
		}, func() { putScratch(&sgemmPool, s) }
	})

	// The later stripes' sums added to C in turn, a row per task.
	if stripes > 1 {
		shareTasks(min(workers, m), m, func() (func(int), func()) {
			return func(i int) {
				row := c[i*ldc : i*ldc+n]
				for s := range stripes - 1 {
					Add(row, row, partial[s*m*n+i*n:s*m*n+(i+1)*n])
				}
			}, nil
		})
	}
}

// sgemmPool holds the packed B of sgemm and its workers' packed rows of A.
var sgemmPool scratchPool

// ceilDiv is ⌈a/b⌉ for a ≥ 0, b > 0.
func ceilDiv(a, b int) int { return (a + b - 1) / b }
