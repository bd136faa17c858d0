package engine_test

import (
	"testing"

	"gpuz/internal/engine"
	"gpuz/internal/models"
)

// TestWorkCountsPerElement pins what Work counts per element for the
// engine's own kernels, on the three workloads at --scale small in
// training: a gradient sum adds two float32 values into a third (1 FLOP,
// 8 bytes read and 4 written an element); a gradient's sum of squares
// reads each element once for 2 FLOPs; Adam's update of each parameter
// element reads p, g, m and v and writes p, m and v (28 bytes) for
// adamFLOPs (14) FLOPs, one launch a parameter. Sums of squares and
// updates cover the same parameters, so Adam's FLOPs are 7 times the sums'
// and its bytes 7 times theirs.
func TestWorkCountsPerElement(t *testing.T) {
	linear, err := models.LinearPreset("small")
	if err != nil {
		t.Fatal(err)
	}
	resnet, err := models.ResnetPreset("small")
	if err != nil {
		t.Fatal(err)
	}
	attention, err := models.AttentionPreset("small")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		c       models.Config
		gradSum bool // the graph sums a value's gradients
	}{{"linear", &linear, false}, {"resnet", &resnet, true}, {"attention", &attention, true}} {
		t.Run(tc.name, func(t *testing.T) {
			_, s := compileModel(t, tc.c, true)
			w := s.Work()
			sq, adam, sum := kernel(w, engine.KernelSumSquares), kernel(w, engine.KernelAdam), kernel(w, engine.KernelGradientSum)
			if sq.Launches == 0 || adam.Launches != sq.Launches {
				t.Errorf("%d sums of squares, %d Adam updates: want one of each per parameter", sq.Launches, adam.Launches)
			}
			if elems := sq.FLOPs / 2; sq.Bytes != 4*elems || adam.FLOPs != 14*elems || adam.Bytes != 28*elems {
				t.Errorf("%d parameter elements (from the sums of squares' %d FLOPs): sums of squares %d bytes, Adam %d FLOPs and %d bytes; want %d, %d and %d",
					elems, sq.FLOPs, sq.Bytes, adam.FLOPs, adam.Bytes, 4*elems, 14*elems, 28*elems)
			}
			if tc.gradSum != (sum.Launches > 0) {
				t.Fatalf("%d gradient sums, want some: %v", sum.Launches, tc.gradSum)
			}
			if sum.Launches > 0 && (sum.FLOPs <= 0 || sum.Bytes != 12*sum.FLOPs) {
				t.Errorf("gradient sums: %d FLOPs, %d bytes; want 1 FLOP and 12 bytes an element", sum.FLOPs, sum.Bytes)
			}
		})
	}
	// By hand: resnet at --scale small has 3 levels, level(l, x) = x +
	// b(level(l−1, a(x))). The outer level's x is the input, whose
	// gradient is not computed; each inner level's x (a's output) feeds
	// its a and its residual add, so its gradient is a sum: 2 sums of
	// batch 2 × 4 channels × 32 × 32 = 8192 elements each.
	_, s := compileModel(t, &resnet, true)
	if got, want := kernel(s.Work(), engine.KernelGradientSum), (engine.KernelWork{Name: engine.KernelGradientSum,
		Launches: 2, FLOPs: 2 * 8192, Bytes: 2 * 12 * 8192}); got != want {
		t.Errorf("resnet's gradient sums %+v, want %+v", got, want)
	}
}
