package engine

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/hostmath"
)

// loadWatcher is a simulated device that records, for every upload of a
// block's area into a window slot, whether the auto policy's prefetch made
// it or a step that found its block missing (a load on demand), and at
// which step of the Run.
type loadWatcher struct {
	*device.Sim
	prog     *Program
	prefetch int   // uploads made by prefetch
	demand   []int // the step of each upload made on demand
}

func (w *loadWatcher) Upload(dst device.Buffer, src []float32) error {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		switch {
		case strings.HasSuffix(f.Function, "cache.auto.ahead"):
			w.prefetch++
			return w.Sim.Upload(dst, src)
		case strings.HasSuffix(f.Function, "cache.(*Cache).ensure"):
			w.demand = append(w.demand, w.prog.placed.(*residency).done+1)
			return w.Sim.Upload(dst, src)
		}
		if !more {
			return w.Sim.Upload(dst, src)
		}
	}
}

// TestAutoHoldsKOfNBlocks loads 8 one-layer blocks under the auto policy
// with no window given, on simulated devices whose capacity is the
// footprint of a window of k blocks plus half a block: the window must be
// k, the program must run without running out of memory, and after the
// first Run every block must arrive by prefetch except, when evaluating,
// block 0 at the first step of each Run (prefetch looks ahead within a Run
// only; in training block 0 is the last block the backward pass used, so it
// is still resident).
func TestAutoHoldsKOfNBlocks(t *testing.T) {
	m := smallLinear{batch: 2, dim: 5, layers: 8, perBlock: 1}
	for _, train := range []bool{true, false} {
		for _, k := range []int{2, 3, 5} {
			t.Run(fmt.Sprintf("train=%v/k=%d", train, k), func(t *testing.T) {
				_, x, target, loss, blocks, _, _ := m.buildProject()
				sched, err := Compile(Spec{Inputs: []*gorgonia.Node{x, target}, Blocks: blocks, Output: loss, Train: train,
					Optimizer: hostmath.DefaultAdam(), ClipNorm: 1})
				if err != nil {
					t.Fatal(err)
				}
				fixed := sched.Footprint(Paged{Cache: cache.Config{Policy: cache.Auto, Window: k}}, 1<<40)
				capacity := fixed.Device + fixed.BlockBytes/2
				dev := &loadWatcher{Sim: device.NewSim(capacity, nil)}
				defer dev.Close()
				pl := Paged{Cache: cache.Config{Policy: cache.Auto}}
				if fp := sched.Footprint(pl, capacity); fp.Window != k || fp.Device > capacity {
					t.Fatalf("footprint on %d bytes: window %d of %d bytes, want %d blocks", capacity, fp.Window, fp.Device, k)
				}
				prog, err := sched.Load(dev, pl)
				var oom *device.OutOfMemoryError
				if errors.As(err, &oom) {
					t.Fatalf("Load on %d bytes ran out of memory: %v", capacity, err)
				} else if err != nil {
					t.Fatal(err)
				}
				defer prog.Close()
				dev.prog = prog
				if prog.Window() != k {
					t.Fatalf("window %d, want %d of %d blocks", prog.Window(), k, len(blocks))
				}
				if _, err := prog.Run(); err != nil {
					t.Fatal(err)
				}
				dev.prefetch, dev.demand = 0, nil
				for range 3 {
					if _, err := prog.Run(); err != nil {
						t.Fatalf("Run on %d bytes: %v", capacity, err)
					}
				}
				if dev.prefetch == 0 {
					t.Errorf("no block was prefetched in 3 Runs")
				}
				for _, step := range dev.demand {
					if train || step != 0 {
						t.Errorf("a block was loaded on demand at step %d (prefetched uploads: %d)", step, dev.prefetch)
						break
					}
				}
				if st := dev.Stats(); st.PeakBytes > capacity {
					t.Errorf("peak %d bytes over the capacity %d", st.PeakBytes, capacity)
				}
			})
		}
	}
}
