package calibration

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"gpuz/internal/device"
	"gpuz/internal/perfmodel"
)

// TestCasesFitTheirOps: every case's op accepts its shapes and costs
// something, and every kernel of every class of perfmodel.KernelClasses
// that an op runs (all but the bare Gemm) is timed at three shapes or more,
// so that the fit can decide the class's compute, bandwidth and overhead.
func TestCasesFitTheirOps(t *testing.T) {
	shapes := map[string]int{}
	for _, c := range Cases() {
		op, err := c.launcher()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := op.InferShape(dimSizers(c.Shapes)...); err != nil {
			t.Errorf("%v: %v", c, err)
			continue
		}
		if cost := op.Cost(c.Shapes); cost.FLOPs <= 0 || cost.Bytes() <= 0 {
			t.Errorf("%v: cost %+v, want FLOPs and bytes", c, cost)
		}
		shapes[opName(op)]++
	}
	for _, class := range perfmodel.KernelClasses() {
		for _, k := range class.Kernels {
			if k != "Gemm" && shapes[k] < 3 {
				t.Errorf("class %s: kernel %s timed at %d shapes, want 3 or more", class.Name, k, shapes[k])
			}
		}
	}
}

// TestSamplesOnTheHost times every case and copy on the host, each run
// once (a target of 1 ns): one sample per case, each with one kernel named
// as the engine names it and counted by its op's cost, then the copies.
// It checks what is counted, never how long anything took.
func TestSamplesOnTheHost(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every case's kernels")
	}
	host := device.NewHost()
	defer host.Close()
	samples, err := Samples(context.Background(), host, time.Nanosecond, 1)
	if err != nil {
		t.Fatal(err)
	}
	cases := Cases()
	if len(samples) != len(cases)+2*len(CopySizes) {
		t.Fatalf("%d samples, want %d cases and %d copies", len(samples), len(cases), 2*len(CopySizes))
	}
	for i, c := range cases {
		s, op := samples[i], must(c.launcher())
		want := perfmodel.Kernel{Name: opName(op), Launches: 1, FLOPs: op.Cost(c.Shapes).FLOPs, Bytes: op.Cost(c.Shapes).Bytes()}
		if !slices.Equal(s.Kernels, []perfmodel.Kernel{want}) || !strings.HasPrefix(s.Name, c.String()) || s.Time <= 0 {
			t.Errorf("sample %d: %+v, want %v as %+v", i, s, c, want)
		}
	}
	for _, s := range samples[len(cases):] {
		if len(s.Kernels) != 0 || s.Copies.Count != 1 || s.Copies.H2DBytes+s.Copies.D2HBytes == 0 {
			t.Errorf("copy sample %+v, want one copy", s)
		}
	}
}

// must returns v, panicking on err.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// cancellingDevice is a device that cancels a context at its cancelAt-th
// allocation (0: never) and counts its allocations.
type cancellingDevice struct {
	device.Device
	allocs, cancelAt int
	cancel           context.CancelFunc
}

func (d *cancellingDevice) Alloc(n int) (device.Buffer, error) {
	d.allocs++
	if d.allocs == d.cancelAt {
		d.cancel()
	}
	return d.Device.Alloc(n)
}

// TestSamplesStop checks that Samples stops at the next sample once its
// context is done, returning the context's error and no samples: gpuz
// calibrate timed every case (1.6 to 3.8 s) before a signal was acted on
// (issue 36 item 16).
func TestSamplesStop(t *testing.T) {
	first := len(Cases()[0].Shapes) + 1 // the first case's arguments and output
	for _, tt := range []struct {
		name     string
		before   bool // the context done before Samples starts
		cancelAt int  // else done at this allocation
		allocs   int  // the allocations made
	}{
		{"done before", true, 0, 0},
		{"done during the first case", false, 1, first},
		{"done at the first case's output", false, first, first},
	} {
		t.Run(tt.name, func(t *testing.T) {
			host := device.NewHost()
			defer host.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			dev := &cancellingDevice{Device: host, cancelAt: tt.cancelAt, cancel: cancel}
			if tt.before {
				cancel()
			}
			samples, err := Samples(ctx, dev, time.Nanosecond, 1)
			if !errors.Is(err, context.Canceled) || samples != nil || dev.allocs != tt.allocs {
				t.Errorf("Samples: %d samples, %v, %d allocations; want none, context.Canceled, %d allocations", len(samples), err, dev.allocs, tt.allocs)
			}
		})
	}
}
