package hostmath

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// ConvShape describes a stride-1 two-dimensional cross-correlation, the
// Conv2d of PyTorch, on NCHW tensors:
//
//	out[n, o, y, x] = bias[o] + Σ_c Σ_ky Σ_kx w[o, c, ky, kx] · in[n, c, y+ky−Pad, x+kx−Pad]
//
// where in is zero outside its InH × InW plane. The weights are
// [OutC, InC, Kernel, Kernel] as PyTorch's. Pad may exceed the kernel or be
// negative (a crop): the output plane is OutH × OutW whatever it is, which
// is how the input gradient is computed as a correlation too.
type ConvShape struct {
	Batch      int
	InC        int
	InH, InW   int
	OutC       int
	OutH, OutW int
	Kernel     int
	Pad        int
}

// ConvOutSize is the side of a stride-1 convolution's output for an input
// side n, a kernel k and a padding p: n + 2p − k + 1.
func ConvOutSize(n, k, p int) int { return n + 2*p - k + 1 }

// patch is the number of rows of the column matrix: InC·Kernel².
func (s ConvShape) patch() int { return s.InC * s.Kernel * s.Kernel }

// validate panics on shapes that do not describe a correlation; the ops
// check their shapes before calling, so this is a programming error.
func (s ConvShape) validate(out, in, w int) {
	if s.Batch < 0 || s.InC <= 0 || s.OutC <= 0 || s.Kernel <= 0 || s.InH < 0 || s.InW < 0 || s.OutH < 0 || s.OutW < 0 {
		panic(fmt.Sprintf("hostmath: invalid convolution shape %+v", s))
	}
	if out != s.Batch*s.OutC*s.OutH*s.OutW || in != s.Batch*s.InC*s.InH*s.InW || w != s.OutC*s.patch() {
		panic(fmt.Sprintf("hostmath: convolution %+v given %d outputs, %d inputs, %d weights", s, out, in, w))
	}
}

// ConvScratchBytes bounds the scratch of one worker of a convolution: the
// im2col column matrix of a tile or, for the direct kernels, the padded
// input rows of a tile (the kernels hold a few of them at a time in a
// ring: conv.h). A call holds at most this per thread (more only when a
// single output row needs more), whatever the image or batch size; the
// direct weight gradient adds 16 partial sums per weight per thread.
const ConvScratchBytes = 2 << 20

// convScratchBytes is the budget in force; tests lower it to exercise
// tiling on small images.
var convScratchBytes = ConvScratchBytes

// im2colRows returns how many output rows one im2col tile holds: as many as
// fit the scratch budget, at least one.
func (s ConvShape) im2colRows(elemBytes int) int {
	row := s.patch() * s.OutW * elemBytes
	return max(1, min(s.OutH, convScratchBytes/max(row, 1)))
}

// directRows returns how many output rows one tile of the direct kernels
// holds: as many as let their padded input, rows + Kernel − 1 rows of
// OutW + Kernel − 1 floats per channel, fit the budget; at least one. The
// kernels copy those rows into their ring a few at a time, so the tiles
// set how the work is split and how many partial sums the weight gradient
// keeps, and bound the ring.
func (s ConvShape) directRows() int {
	row := s.InC * (s.OutW + s.Kernel - 1) * 4
	return max(1, min(s.OutH, convScratchBytes/max(row, 1)-(s.Kernel-1)))
}

// im2col writes rows [y0, y1) of image img's column matrix into cols:
// cols[(c·k+ky)·k+kx][(y−y0)·OutW + x] = in[img, c, y+ky−Pad, x+kx−Pad], zero
// outside the input. cols has patch() rows of (y1−y0)·OutW elements.
func im2col[T Float](cols, in []T, s ConvShape, img, y0, y1 int) {
	k, width := s.Kernel, (y1-y0)*s.OutW
	plane := s.InH * s.InW
	image := in[img*s.InC*plane : (img+1)*s.InC*plane]
	for c := range s.InC {
		channel := image[c*plane : (c+1)*plane]
		for ky := range k {
			for kx := range k {
				row := cols[((c*k+ky)*k+kx)*width:][:width]
				// Output x reads input column x+kx−Pad, inside [0, InW) for
				// x in [lo, hi).
				lo := min(max(0, s.Pad-kx), s.OutW)
				hi := max(min(s.OutW, s.InW+s.Pad-kx), lo)
				for y := y0; y < y1; y++ {
					dst := row[(y-y0)*s.OutW:][:s.OutW]
					iy := y + ky - s.Pad
					if iy < 0 || iy >= s.InH {
						clear(dst)
						continue
					}
					clear(dst[:lo])
					copy(dst[lo:hi], channel[iy*s.InW+lo+kx-s.Pad:])
					clear(dst[hi:])
				}
			}
		}
	}
}

// convTile is one tile of work: output rows [y0, y1) of image img.
type convTile struct{ img, y0, y1 int }

// scratchPool keeps buffers of one purpose, per element type, so that steps
// reuse them instead of mapping fresh pages.
type scratchPool [2]sync.Pool

var (
	tilePool scratchPool // im2col columns and the direct kernels' rings of padded rows
	accPool  scratchPool // the direct weight gradient's partial sums
	sumPool  scratchPool // the weight gradient's per-tile sums
)

func getScratch[T Float](pool *scratchPool, n int) *[]T {
	if p, ok := pool[elemIndex[T]()].Get().(*[]T); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	s := make([]T, n)
	return &s
}

func putScratch[T Float](pool *scratchPool, p *[]T) { pool[elemIndex[T]()].Put(p) }

func elemIndex[T Float]() int {
	var zero T
	if _, ok := any(zero).(float32); ok {
		return 0
	}
	return 1
}

// convTiles splits the convolution's output into tiles of at most rows
// output rows: as few per image as fit, or a few more so that every thread
// can get as many, all of about one height.
func convTiles(s ConvShape, rows int) []convTile {
	perImage := (s.OutH + rows - 1) / max(rows, 1)
	for threads := Threads(); perImage < s.OutH && (s.Batch*perImage)%threads != 0; {
		perImage++
	}
	if perImage > 0 {
		rows = (s.OutH + perImage - 1) / perImage
	}
	var tiles []convTile
	for img := range s.Batch {
		for y0 := 0; y0 < s.OutH; y0 += rows {
			tiles = append(tiles, convTile{img, y0, min(y0+rows, s.OutH)})
		}
	}
	return tiles
}

// runTiles calls body(worker, buf, i) for every tile index i, with up to
// Threads() workers, each with its own scratch buf of scratch elements.
// Workers take the next tile as they become free, so that a worker that
// another process slows down does not hold the others up; which worker
// computes a tile must therefore not change its result, and sums over tiles
// are kept per tile and added in tile order. With useBLAS, the BLAS runs
// one thread per call while several workers run.
func runTiles[T Float](tiles []convTile, scratch int, useBLAS bool, body func(worker int, buf []T, i int)) {
	workers := min(Threads(), len(tiles))
	if workers <= 1 {
		p := getScratch[T](&tilePool, scratch)
		for i := range tiles {
			body(0, *p, i)
		}
		putScratch(&tilePool, p)
		return
	}
	if useBLAS {
		setBLASThreads(1)
		defer setBLASThreads(Threads())
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := getScratch[T](&tilePool, scratch)
			for i := int(next.Add(1) - 1); i < len(tiles); i = int(next.Add(1) - 1) {
				body(w, *p, i)
			}
			putScratch(&tilePool, p)
		}()
	}
	wg.Wait()
}

// Conv2d computes out = correlate(in, w) + bias for the shape s (see
// ConvShape); bias may be nil for none. In float32 on a CPU with AVX-512
// each tile of output rows is computed by the direct kernels of conv.h,
// which copy its input rows, padded, into a ring in scratch as they go;
// otherwise each tile is an im2col into
// scratch followed by one product w[OutC, patch] · cols[patch, tile]
// written in place. Either way the scratch is bounded (ConvScratchBytes).
func Conv2d[T Float](out, in, w, bias []T, s ConvShape) {
	s.validate(len(out), len(in), len(w))
	if o, ok := any(out).([]float32); ok && directConv {
		conv2dDirect(o, any(in).([]float32), any(w).([]float32), any(bias).([]float32), s)
		return
	}
	plane, k := s.OutH*s.OutW, s.patch()
	rows := s.im2colRows(int(unsafe.Sizeof(T(0))))
	tiles := convTiles(s, rows)
	runTiles(tiles, k*rows*s.OutW, true, func(_ int, cols []T, i int) {
		t := tiles[i]
		width := (t.y1 - t.y0) * s.OutW
		cols = cols[:k*width]
		im2col(cols, in, s, t.img, t.y0, t.y1)
		dst := out[t.img*s.OutC*plane+t.y0*s.OutW:]
		beta := T(0)
		if bias != nil {
			for o, b := range bias {
				row := dst[o*plane:][:width]
				for i := range row {
					row[i] = b
				}
			}
			beta = 1
		}
		gemmStrided(false, false, s.OutC, width, k, 1, w, k, cols, width, beta, dst, plane)
	})
}

func conv2dDirect(out, in, w, bias []float32, s ConvShape) {
	if useWinograd(s) {
		conv2dWinograd(out, in, w, bias, s)
		return
	}
	tiles := convTiles(s, s.directRows())
	runTiles(tiles, convForwardRing(s), false, func(_ int, ring []float32, i int) {
		t := tiles[i]
		convForwardRows(in, s, t.img, t.y0, t.y1-t.y0, w, bias, out, ring)
	})
}

// winogradMinOutW is the narrowest output row the Winograd kernels take:
// they compute 32 columns at a time, and a narrower row would waste most
// of them.
const winogradMinOutW = 64

// useWinograd reports whether a float32 forward convolution runs the
// Winograd kernels of winograd.h: for 5 × 5 kernels and rows of at least
// winogradMinOutW outputs, on a CPU with AVX-512F.
func useWinograd(s ConvShape) bool {
	return winogradConv && s.Kernel == 5 && s.OutW >= winogradMinOutW
}

// conv2dWinograd is conv2dDirect by the Winograd kernels: the weights
// transformed once, then each tile of output rows as the direct kernels
// take them.
func conv2dWinograd(out, in, w, bias []float32, s ConvShape) {
	p := getScratch[float32](&tilePool, s.OutC*s.InC*30)
	defer putScratch(&tilePool, p)
	wt := *p
	winogradWeights(w, s, wt)
	tiles := convTiles(s, s.directRows())
	runTiles(tiles, winogradRing(s)+16, false, func(_ int, ring []float32, i int) {
		t := tiles[i]
		winogradRows(in, s, t.img, t.y0, t.y1-t.y0, wt, bias, out, align64(ring))
	})
}

// Conv2dInputGrad sets dx to the gradient of Conv2d's input given the
// output gradient g: with s the forward shape, dx is the correlation of g
// with the kernel flipped in both axes and its channel axes swapped, at
// padding Kernel−1−Pad.
func Conv2dInputGrad[T Float](dx, g, w []T, s ConvShape) {
	s.validate(len(g), len(dx), len(w))
	k := s.Kernel
	flipped := make([]T, len(w))
	for o := range s.OutC {
		for c := range s.InC {
			src := w[(o*s.InC+c)*k*k:][:k*k]
			dst := flipped[(c*s.OutC+o)*k*k:][:k*k]
			for i, v := range src {
				dst[k*k-1-i] = v
			}
		}
	}
	back := ConvShape{Batch: s.Batch, InC: s.OutC, InH: s.OutH, InW: s.OutW, OutC: s.InC, OutH: s.InH, OutW: s.InW, Kernel: k, Pad: k - 1 - s.Pad}
	Conv2d(dx, g, flipped, nil, back)
}

// Conv2dWeightGrad sets dw to the gradient of Conv2d's weights given the
// input x and the output gradient g. Each tile's contribution is computed
// on its own (with im2col: g[OutC, tile] · cols[patch, tile]ᵀ; directly:
// 16-lane partial sums per weight) and kept in float64; the tiles' sums are
// added in tile order, so the result does not depend on which thread
// computed which tile.
func Conv2dWeightGrad[T Float](dw, x, g []T, s ConvShape) {
	s.validate(len(g), len(x), len(dw))
	if d, ok := any(dw).([]float32); ok && directConv {
		conv2dWeightGradDirect(d, any(x).([]float32), any(g).([]float32), s)
		return
	}
	plane, k := s.OutH*s.OutW, s.patch()
	n := len(dw)
	rows := s.im2colRows(int(unsafe.Sizeof(T(0))))
	tiles := convTiles(s, rows)
	ps := getScratch[float64](&sumPool, len(tiles)*n)
	defer putScratch(&sumPool, ps)
	sums := *ps
	parts := make([]T, Threads()*n)
	runTiles(tiles, k*rows*s.OutW, true, func(worker int, cols []T, i int) {
		t := tiles[i]
		width := (t.y1 - t.y0) * s.OutW
		cols = cols[:k*width]
		im2col(cols, x, s, t.img, t.y0, t.y1)
		part := parts[worker*n:][:n]
		gemmStrided(false, true, s.OutC, k, width, 1, g[t.img*s.OutC*plane+t.y0*s.OutW:], plane, cols, width, 0, part, k)
		for j, v := range part {
			sums[i*n+j] = float64(v)
		}
	})
	addTileSums(dw, sums)
}

func conv2dWeightGradDirect(dw, x, g []float32, s ConvShape) {
	const lanes = 16
	n := len(dw)
	tiles := convTiles(s, s.directRows())
	maxRows := 0
	for _, t := range tiles {
		maxRows = max(maxRows, t.y1-t.y0)
	}
	ps := getScratch[float64](&sumPool, len(tiles)*n)
	defer putScratch(&sumPool, ps)
	sums := *ps
	p := getScratch[float32](&accPool, Threads()*n*lanes)
	defer putScratch(&accPool, p)
	accs := *p
	runTiles(tiles, convWeightGradRing(s, maxRows), false, func(worker int, ring []float32, i int) {
		t := tiles[i]
		acc := accs[worker*n*lanes:][:n*lanes]
		convWeightGradRows(x, s, t.img, t.y0, t.y1-t.y0, maxRows, g, acc, ring)
		for j := range n {
			sum := 0.0
			for _, v := range acc[j*lanes:][:lanes] {
				sum += float64(v)
			}
			sums[i*n+j] = sum
		}
	})
	addTileSums(dw, sums)
}

// addTileSums sets dst[j] to the sum over tiles of sums[i·len(dst) + j],
// added in tile order.
func addTileSums[T Float](dst []T, sums []float64) {
	n := len(dst)
	for j := range dst {
		total := 0.0
		for i := j; i < len(sums); i += n {
			total += sums[i]
		}
		dst[j] = T(total)
	}
}

// Conv2dBiasGrad sets db to the gradient of Conv2d's bias: the sum of the
// output gradient g over images and positions, per channel, accumulated in
// float64. Channels are spread over the threads.
func Conv2dBiasGrad[T Float](db, g []T, batch, channels, plane int) {
	if plane == 0 {
		clear(db)
		return
	}
	parallelFor(channels*plane, plane, func(lo, hi int) {
		for o := lo / plane; o < hi/plane; o++ {
			s := 0.0
			for img := range batch {
				s += sumPlane(g[(img*channels+o)*plane:][:plane])
			}
			db[o] = T(s)
		}
	})
}

// sumPlane returns the sum of x in float64: in C for float32 (reduce.h),
// where the Go loop ran at a quarter of the memory's bandwidth.
func sumPlane[T Float](x []T) float64 {
	if f, ok := any(x).([]float32); ok {
		return sumFloat32(f)
	}
	return sum8(x)
}

// sum8 returns the sum of x in float64 with eight independent partial
// sums, so that the additions do not wait on one another.
func sum8[T Float](x []T) float64 {
	var s [8]float64
	i := 0
	for ; i+8 <= len(x); i += 8 {
		c := x[i : i+8 : i+8]
		s[0] += float64(c[0])
		s[1] += float64(c[1])
		s[2] += float64(c[2])
		s[3] += float64(c[3])
		s[4] += float64(c[4])
		s[5] += float64(c[5])
		s[6] += float64(c[6])
		s[7] += float64(c[7])
	}
	for ; i < len(x); i++ {
		s[0] += float64(x[i])
	}
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}
