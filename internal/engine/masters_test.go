package engine

import (
	"testing"

	"gorgonia.org/gorgonia"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/hugemem"
)

// TestCloseFreesHostMasters loads a paged program whose blocks' masters
// (and the host optimizer's moments) are past hugemem's threshold: each
// is a buffer of hugemem's, a mapping of its own where the kernel offers
// huge pages, and Close frees every one.
func TestCloseFreesHostMasters(t *testing.T) {
	m := smallLinear{batch: 2, dim: 800, layers: 4, perBlock: 1}
	_, x, target, loss, blocks, _, _ := m.buildProject()
	sched, err := Compile(Spec{Inputs: []*gorgonia.Node{x, target}, Blocks: blocks, Output: loss, Train: true,
		Optimizer: hostmath.DefaultAdam(), ClipNorm: 1})
	if err != nil {
		t.Fatal(err)
	}
	dev := device.NewSim(1<<30, nil)
	defer dev.Close()
	prog, err := sched.Load(dev, Paged{Cache: cache.Config{Policy: cache.Auto, Window: 1, OptimizerOnHost: true}})
	if err != nil {
		t.Fatal(err)
	}
	masters := prog.placed.(*residency).masters
	if want := 3 * len(blocks); len(masters) != want { // a master per block, the moments of its weight and its bias
		t.Fatalf("%d host buffers, want %d", len(masters), want)
	}
	for i, f := range masters {
		if 4*len(f.Data) >= hugemem.Threshold && offeredHere() && !f.Mapped() {
			t.Errorf("host buffer %d of %d bytes is not a mapping of its own", i, 4*len(f.Data))
		}
	}
	if _, err := prog.Run(); err != nil {
		t.Fatal(err)
	}
	prog.Close()
	for i, f := range masters {
		if f.Data != nil {
			t.Errorf("host buffer %d still held after Close", i)
		}
	}
}

// offeredHere reports whether this machine's kernel offers huge pages to
// a program that asks (madvise or always).
func offeredHere() bool {
	s := hugemem.Status()
	return s == "madvise: used" || s == "always: used"
}
