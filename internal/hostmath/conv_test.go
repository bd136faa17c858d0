package hostmath

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// eachTap calls f with the flat indices of the output, weight and input
// elements of every term of the direct correlation, skipping the kernel
// taps that fall in the padding. The terms of one output come one after
// another, by input channel, kernel row and kernel column.
func eachTap(s ConvShape, f func(oi, wi, xi int)) {
	k := s.Kernel
	for n := range s.Batch {
		for o := range s.OutC {
			for y := range s.OutH {
				for x := range s.OutW {
					oi := ((n*s.OutC+o)*s.OutH+y)*s.OutW + x
					for c := range s.InC {
						for ky := range k {
							for kx := range k {
								iy, ix := y+ky-s.Pad, x+kx-s.Pad
								if iy < 0 || iy >= s.InH || ix < 0 || ix >= s.InW {
									continue
								}
								f(oi, ((o*s.InC+c)*k+ky)*k+kx, ((n*s.InC+c)*s.InH+iy)*s.InW+ix)
							}
						}
					}
				}
			}
		}
	}
}

// naiveConv is the direct six-loop correlation in float64, the reference
// for Conv2d: out[n,o,y,x] = bias[o] + Σ w[o,c,ky,kx]·in[n,c,y+ky−pad,x+kx−pad].
func naiveConv(in, w, bias []float64, s ConvShape) []float64 {
	out := make([]float64, s.Batch*s.OutC*s.OutH*s.OutW)
	if bias != nil {
		for i := range out {
			out[i] = bias[i/(s.OutH*s.OutW)%s.OutC]
		}
	}
	eachTap(s, func(oi, wi, xi int) { out[oi] += w[wi] * in[xi] })
	return out
}

// naiveConvGrads returns the gradients of Σ g ⊙ naiveConv(in, w) with
// respect to in and w, by the chain rule written out term by term.
func naiveConvGrads(in, w, g []float64, s ConvShape) (dx, dw []float64) {
	dx, dw = make([]float64, len(in)), make([]float64, len(w))
	eachTap(s, func(oi, wi, xi int) {
		dx[xi] += g[oi] * w[wi]
		dw[wi] += g[oi] * in[xi]
	})
	return dx, dw
}

// convShapes covers paddings below, at and beyond the kernel's reach,
// non-square images and channel counts, one and several images.
func convShapes() []ConvShape {
	var shapes []ConvShape
	for _, c := range []struct{ n, inC, h, w, outC, k, pad int }{
		{1, 1, 5, 5, 1, 3, 1},
		{2, 3, 7, 6, 4, 3, 0},
		{2, 3, 7, 6, 4, 3, 1},
		{2, 2, 6, 9, 5, 5, 2},
		{1, 4, 5, 4, 3, 3, 2},
		{1, 2, 4, 4, 3, 3, 3}, // padding beyond k−1: the input gradient crops
		{3, 2, 8, 3, 2, 1, 0}, // 1×1 kernel
		{2, 5, 11, 13, 3, 5, 1},
		{1, 3, 5, 70, 7, 5, 2},   // a full vector block of 64 columns and a tail
		{2, 2, 4, 131, 13, 7, 3}, // three channel blocks, kernel columns 5 + 2
		{1, 2, 40, 300, 6, 3, 1}, // the weight gradient's tiles in several chunks of rows
	} {
		shapes = append(shapes, ConvShape{Batch: c.n, InC: c.inC, InH: c.h, InW: c.w, OutC: c.outC,
			OutH: ConvOutSize(c.h, c.k, c.pad), OutW: ConvOutSize(c.w, c.k, c.pad), Kernel: c.k, Pad: c.pad})
	}
	return shapes
}

// TestConv2d checks the forward, input-gradient, weight-gradient and
// bias-gradient kernels against the naive loops in float64, with a scratch
// budget so small that every tile is one row, and with the default budget;
// on one thread and on three; in float64 (im2col and the BLAS) and in
// float32 (the direct kernels where the CPU has AVX-512). The tolerances
// are rounding of sums of at most a few hundred terms of size ≤ 1: 1e-12 in
// float64 and 2e-4 in float32 (about 250 · 2⁻²⁴ times the largest partial
// sum); a wrong index shows as an error of order 1.
func TestConv2d(t *testing.T) {
	defer SetThreads(0)
	defer func(b int) { convScratchBytes = b }(convScratchBytes)
	for _, budget := range []int{1, ConvScratchBytes} {
		for _, threads := range []int{1, 3} {
			for _, s := range convShapes() {
				name := fmt.Sprintf("budget%d/threads%d/%+v", budget, threads, s)
				set := func() { convScratchBytes = budget; SetThreads(threads) }
				t.Run("float64/"+name, func(t *testing.T) { set(); checkConv[float64](t, s, 1e-12) })
				t.Run("float32/"+name, func(t *testing.T) { set(); checkConv[float32](t, s, 2e-4) })
			}
		}
	}
}

func checkConv[T Float](t *testing.T, s ConvShape, tol float64) {
	rng := rand.New(rand.NewPCG(uint64(s.InH), uint64(s.OutC)))
	// Inputs rounded to T first, so that the reference sees the same values.
	random := func(n int) ([]T, []float64) {
		v := randomSlice(rng, n)
		out := make([]T, n)
		for i, x := range v {
			out[i] = T(x)
			v[i] = float64(out[i])
		}
		return out, v
	}
	in, in64 := random(s.Batch * s.InC * s.InH * s.InW)
	w, w64 := random(s.OutC * s.InC * s.Kernel * s.Kernel)
	bias, bias64 := random(s.OutC)
	g, g64 := random(s.Batch * s.OutC * s.OutH * s.OutW)

	out := make([]T, len(g))
	Conv2d(out, in, w, bias, s)
	if d := maxAbsDiff(out, naiveConv(in64, w64, bias64, s)); d > tol {
		t.Errorf("forward differs by %g", d)
	}
	wantDx, wantDw := naiveConvGrads(in64, w64, g64, s)
	dx := make([]T, len(in))
	Conv2dInputGrad(dx, g, w, s)
	if d := maxAbsDiff(dx, wantDx); d > tol {
		t.Errorf("input gradient differs by %g", d)
	}
	dw := make([]T, len(w))
	Conv2dWeightGrad(dw, in, g, s)
	// The weight gradient sums over every position of every image: scale
	// the tolerance by the number of terms per weight over 250.
	if d := maxAbsDiff(dw, wantDw); d > tol*max(1, float64(s.Batch*s.OutH*s.OutW)/250) {
		t.Errorf("weight gradient differs by %g", d)
	}
	db := make([]T, s.OutC)
	Conv2dBiasGrad(db, g, s.Batch, s.OutC, s.OutH*s.OutW)
	wantDb := make([]float64, s.OutC)
	for n := range s.Batch {
		for o := range s.OutC {
			for i := range s.OutH * s.OutW {
				wantDb[o] += g64[(n*s.OutC+o)*s.OutH*s.OutW+i]
			}
		}
	}
	if d := maxAbsDiff(db, wantDb); d > tol {
		t.Errorf("bias gradient differs by %g", d)
	}
}

// BenchmarkConv2d times the two convolutions of the reference resnet
// workload (10→30 and 30→10 channels, 5×5, padding 2) on a batch of two
// 512×512 images, forward and both gradients, and reports GFLOP/s counting
// 2·N·Cout·Cin·k²·H·W per pass.
func BenchmarkConv2d(b *testing.B) {
	const n, hw, k = 2, 512, 5
	rng := rand.New(rand.NewPCG(1, 1))
	for _, ch := range [][2]int{{10, 30}, {30, 10}} {
		s := ConvShape{Batch: n, InC: ch[0], InH: hw, InW: hw, OutC: ch[1], OutH: hw, OutW: hw, Kernel: k, Pad: k / 2}
		x := toFloat32(randomSlice(rng, n*ch[0]*hw*hw))
		w := toFloat32(randomSlice(rng, ch[0]*ch[1]*k*k))
		bias := toFloat32(randomSlice(rng, ch[1]))
		y := make([]float32, n*ch[1]*hw*hw)
		dx, dw := make([]float32, len(x)), make([]float32, len(w))
		flops := 2.0 * n * float64(ch[0]*ch[1]*k*k*hw*hw)
		for _, bc := range []struct {
			name string
			run  func()
		}{
			{"forward", func() { Conv2d(y, x, w, bias, s) }},
			{"input-grad", func() { Conv2dInputGrad(dx, y, w, s) }},
			{"weight-grad", func() { Conv2dWeightGrad(dw, x, y, s) }},
		} {
			b.Run(fmt.Sprintf("%dto%d/%s", ch[0], ch[1], bc.name), func(b *testing.B) {
				for b.Loop() {
					bc.run()
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestConv2dWeightGradReproducible runs the weight gradient, whose tiles go
// to whichever thread is free, several times on three threads with one-row
// tiles: every run must give the same bits.
func TestConv2dWeightGradReproducible(t *testing.T) {
	defer SetThreads(0)
	defer func(b int) { convScratchBytes = b }(convScratchBytes)
	SetThreads(3)
	convScratchBytes = 1
	s := ConvShape{Batch: 2, InC: 3, InH: 20, InW: 33, OutC: 4, OutH: 20, OutW: 33, Kernel: 3, Pad: 1}
	rng := rand.New(rand.NewPCG(8, 8))
	x := toFloat32(randomSlice(rng, s.Batch*s.InC*s.InH*s.InW))
	g := toFloat32(randomSlice(rng, s.Batch*s.OutC*s.OutH*s.OutW))
	first := make([]float32, s.OutC*s.InC*9)
	Conv2dWeightGrad(first, x, g, s)
	for run := range 10 {
		dw := make([]float32, len(first))
		Conv2dWeightGrad(dw, x, g, s)
		for i := range dw {
			if dw[i] != first[i] {
				t.Fatalf("run %d: weight %d is %g, first run %g", run, i, dw[i], first[i])
			}
		}
	}
}
