package calibration

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/ops"
	"gpuz/internal/perfmodel"
)

// TestCopySamples: timeCopies's two samples of n floats count what they
// copied: an upload then a download, each of 4n bytes a copy, as many
// copies as repetitions, all of their bytes waited for, from pageable
// memory (a Go slice), and named by their bytes. A target of 2 ms makes
// the copies of 16 floats repeat (thousands of times on any machine), so
// that a count of one copy's bytes instead of all of them shows; the
// checks hold for any count.
func TestCopySamples(t *testing.T) {
	host := device.NewHost()
	defer host.Close()
	for _, tc := range []struct {
		n      int
		target time.Duration
	}{{16, 2 * time.Millisecond}, {1 << 10, time.Nanosecond}} {
		n := tc.n
		samples, err := timeCopies(host, n, tc.target)
		if err != nil {
			t.Fatal(err)
		}
		if len(samples) != 2 {
			t.Fatalf("%d floats: %d samples, want an upload and a download", n, len(samples))
		}
		for i, up := range []bool{true, false} {
			s := samples[i]
			reps, bytes := s.Copies.Count, 4*int64(n)
			want := perfmodel.Copies{SyncBytes: reps * bytes, Count: reps, Pageable: true}
			name := "upload"
			if up {
				want.H2DBytes = reps * bytes
			} else {
				want.D2HBytes, name = reps*bytes, "download"
			}
			if reps < 1 || s.Copies != want || len(s.Kernels) != 0 || s.Name != fmt.Sprintf("%s %d B ×%d", name, bytes, reps) || s.Time <= 0 {
				t.Errorf("%d floats, sample %d: %q %+v, want %q %+v", n, i, s.Name, s.Copies, fmt.Sprintf("%s %d B ×%d", name, bytes, reps), want)
			}
		}
	}
}

// TestConvCasesKeepTheirSize: the convolution cases are padded to keep the
// image's size, as resnet's convolutions are: the forward's output and the
// input gradient have the input's size, and the weight gradient the
// forward case's weight (the cases of one shape come forward, input
// gradient, weight gradient).
func TestConvCasesKeepTheirSize(t *testing.T) {
	n := 0
	var weight tensor.Shape
	for _, c := range Cases() {
		var want tensor.Shape
		switch c.Spec.(type) {
		case ops.Conv2d: // x, w, b → [batch, out, size, size]
			x, w := c.Shapes[0], c.Shapes[1]
			want, weight = tensor.Shape{x[0], w[0], x[2], x[3]}, w
		case ops.Conv2dInputGrad: // g, w → [batch, in, size, size]
			g, w := c.Shapes[0], c.Shapes[1]
			want = tensor.Shape{g[0], w[1], g[2], g[3]}
		case ops.Conv2dWeightGrad: // x, g → w's shape
			want = weight
		default:
			continue
		}
		n++
		op := must(c.launcher())
		got, err := op.InferShape(dimSizers(c.Shapes)...)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%v: output %v, want %v (the image's size kept)", c, got, want)
		}
	}
	if n == 0 {
		t.Fatal("no convolution cases")
	}
}

// TestOpSampleCounts: a kernel sample counts every repetition it timed:
// its launches, and its FLOPs and bytes as many times the op's cost. An
// Add of 16 floats with a target of 2 ms repeats many times.
func TestOpSampleCounts(t *testing.T) {
	host := device.NewHost()
	defer host.Close()
	c := Case{Spec: ops.Add{}, Shapes: []tensor.Shape{{16}, {16}}}
	s, err := timeOp(host, c, 2*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	cost := must(c.launcher()).Cost(c.Shapes)
	if len(s.Kernels) != 1 {
		t.Fatalf("kernels %+v, want one", s.Kernels)
	}
	k := s.Kernels[0]
	if reps := k.Launches; reps < 1 || k != (perfmodel.Kernel{Name: "Add", Launches: reps, FLOPs: reps * cost.FLOPs, Bytes: reps * cost.Bytes()}) ||
		s.Name != fmt.Sprintf("%v ×%d", c, reps) {
		t.Errorf("sample %q %+v, want %d launches of Add at %d FLOPs and %d bytes each", s.Name, k, k.Launches, cost.FLOPs, cost.Bytes())
	}
}
