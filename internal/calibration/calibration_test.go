package calibration

import (
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
	samples, err := Samples(host, time.Nanosecond, 1)
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
