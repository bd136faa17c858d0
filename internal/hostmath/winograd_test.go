package hostmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestConv2dWinograd checks the Winograd forward kernels of winograd.h
// against the naive correlation in float64, over output rows of 1 to 100
// columns (tiles of 32 and their tails, odd widths whose last pair has one
// output), paddings from a crop to beyond the kernel, 1 to 11 output
// channels (every block size and split), input channels that make one
// chunk or several, with and without a bias, one-row tiles and whole
// images, on one thread and on three. Each output must lie within
// 2⁻²⁴·(5·InC + 30)·8 times the sum of its terms' magnitudes (|bias| +
// Σ|w·x|) of the exact value: the rounding of a sum of 5·InC products of
// transformed values, which the transforms make up to 8 times the terms'
// (Bᵀ's rows sum to 10 in magnitude, G's to under 1, Aᵀ's to 7). A wrong
// index or coefficient shows as an error of the terms' own size.
func TestConv2dWinograd(t *testing.T) {
	if !winogradConv {
		t.Skip("no Winograd kernels on this CPU or build")
	}
	defer SetThreads(0)
	defer func(b int) { convScratchBytes = b }(convScratchBytes)
	var shapes []ConvShape
	for _, c := range []struct{ n, inC, h, w, outC, pad int }{
		{1, 1, 5, 1, 1, 2},
		{1, 2, 6, 9, 3, 2},
		{2, 3, 7, 31, 4, 2},
		{1, 2, 5, 32, 5, 2},
		{1, 1, 6, 33, 6, 2},
		{1, 3, 4, 63, 7, 1},
		{1, 2, 5, 64, 11, 0},
		{2, 1, 3, 65, 2, 3},
		{1, 2, 9, 70, 9, 4},
		// A tile past the first whose 36 input columns end one to two
		// past the row (32t − pad + 34 or 35 = in_w): the read must stop
		// at the row's end, the rest taken as the padding's zeros.
		{1, 2, 5, 65, 3, 2},
		{1, 2, 4, 64, 2, 3},
		{1, 1, 4, 96, 2, 2},
		{1, 1, 5, 96, 4, 3},
		{1, 13, 4, 100, 10, 2}, // two chunks of input channels
		{1, 25, 3, 40, 8, 2},   // three chunks
		{1, 2, 6, 80, 3, 6},    // padding beyond the kernel's reach
		{1, 2, 6, 80, 3, -1},   // a crop
	} {
		shapes = append(shapes, ConvShape{Batch: c.n, InC: c.inC, InH: c.h, InW: c.w, OutC: c.outC,
			OutH: ConvOutSize(c.h, 5, c.pad), OutW: ConvOutSize(c.w, 5, c.pad), Kernel: 5, Pad: c.pad})
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for _, s := range shapes {
		for _, budget := range []int{1, ConvScratchBytes} {
			for _, threads := range []int{1, 3} {
				for _, withBias := range []bool{false, true} {
					t.Run(fmt.Sprintf("%+v/budget%d/threads%d/bias=%v", s, budget, threads, withBias), func(t *testing.T) {
						convScratchBytes = budget
						SetThreads(threads)
						checkWinograd(t, rng, s, withBias)
					})
				}
			}
		}
	}
}

// checkWinograd runs one case of TestConv2dWinograd.
func checkWinograd(t *testing.T, rng *rand.Rand, s ConvShape, withBias bool) {
	t.Helper()
	in, w := toFloat32(randomSlice(rng, s.Batch*s.InC*s.InH*s.InW)), toFloat32(randomSlice(rng, s.OutC*s.patch()))
	var bias []float32
	var bias64 []float64
	if withBias {
		bias = toFloat32(randomSlice(rng, s.OutC))
		bias64 = widen(bias)
	}
	out := toFloat32(randomSlice(rng, s.Batch*s.OutC*s.OutH*s.OutW)) // every output must be written
	conv2dWinograd(out, in, w, bias, s)
	want := naiveConv(widen(in), widen(w), bias64, s)
	mag := make([]float64, len(want))
	for i := range mag {
		if withBias {
			mag[i] = math.Abs(bias64[i/(s.OutH*s.OutW)%s.OutC])
		}
	}
	eachTap(s, func(oi, wi, xi int) { mag[oi] += math.Abs(float64(w[wi]) * float64(in[xi])) })
	gamma := 0x1p-24 * float64(5*s.InC+30) * 8
	for i, g := range out {
		if diff := math.Abs(float64(g) - want[i]); !(diff <= gamma*mag[i]) {
			t.Fatalf("out[%d] = %g, want %g (off by %.3g, bound %.3g)", i, g, want[i], diff, gamma*mag[i])
		}
	}
}

// widen converts float32 values to float64 exactly.
func widen(s []float32) []float64 {
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = float64(v)
	}
	return out
}
