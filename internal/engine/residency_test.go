package engine

import (
	"errors"
	"fmt"
	"testing"

	"gorgonia.org/gorgonia"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/hostmath"
)

// trainResult is what a few training steps leave: the losses and the final
// parameters, and the bytes the device copied.
type trainResult struct {
	losses    []float32
	params    [][]float32
	uploads   int64
	downloads int64
	window    int
}

// trainSmall trains the small linear model for steps steps under a placement.
func trainSmall(t *testing.T, m smallLinear, pl Placement, steps int, train bool) trainResult {
	t.Helper()
	init := m.init(newInitRNG())
	xData := make([]float32, m.batch*m.dim)
	for i := range xData {
		xData[i] = float32(i%7) / 7
	}
	_, x, target, loss, blocks, ws, bs := m.buildProject()
	sched, err := Compile(Spec{Inputs: []*gorgonia.Node{x, target}, Blocks: blocks, Output: loss, Train: train,
		Optimizer: hostmath.DefaultAdam(), ClipNorm: 1})
	if err != nil {
		t.Fatal(err)
	}
	dev := device.NewHost()
	prog, err := sched.Load(dev, pl)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	for _, in := range []*gorgonia.Node{x, target} {
		if err := prog.SetInput(in, xData); err != nil {
			t.Fatal(err)
		}
	}
	for l := range m.layers {
		if err := prog.SetInput(ws[l], init[l].w); err != nil {
			t.Fatal(err)
		}
		if err := prog.SetInput(bs[l], init[l].b); err != nil {
			t.Fatal(err)
		}
	}
	before := dev.Stats()
	var r trainResult
	for range steps {
		v, err := prog.Run()
		if err != nil {
			t.Fatal(err)
		}
		r.losses = append(r.losses, v)
	}
	after := dev.Stats()
	r.uploads, r.downloads = after.UploadBytes-before.UploadBytes, after.DownloadBytes-before.DownloadBytes
	r.window = prog.Window()
	for l := range m.layers {
		for _, n := range []*gorgonia.Node{ws[l], bs[l]} {
			v, err := prog.Read(n)
			if err != nil {
				t.Fatal(err)
			}
			r.params = append(r.params, v)
		}
	}
	return r
}

// TestPagedMatchesResident trains and evaluates with every block resident
// and then paged through windows of several sizes under both policies: the
// losses and the final parameters must be bit-identical.
func TestPagedMatchesResident(t *testing.T) {
	m := smallLinear{batch: 2, dim: 5, layers: 8, perBlock: 2} // 4 blocks
	for _, train := range []bool{true, false} {
		want := trainSmall(t, m, Resident{}, 3, train)
		for _, pl := range []Placement{
			Paged{Cache: cache.Config{Policy: cache.Window, Window: 1}},
			Paged{Cache: cache.Config{Policy: cache.Window, Window: 2}},
			Paged{Cache: cache.Config{Policy: cache.Window, Window: 3}},
			Paged{Cache: cache.Config{Policy: cache.Window, Window: 9}},
			Paged{Cache: cache.Config{Policy: cache.WindowPaged, Window: 1}},
			Paged{Cache: cache.Config{Policy: cache.WindowPaged, Window: 3}},
			Paged{Cache: cache.Config{Policy: cache.Auto, Window: 1}},
			Paged{Cache: cache.Config{Policy: cache.Auto, Window: 2}},
			Paged{Cache: cache.Config{Policy: cache.Auto, Window: 3}},
			Paged{Cache: cache.Config{Policy: cache.Auto}},
			Paged{Cache: cache.Config{Policy: cache.Auto, Window: 2, OptimizerOnHost: true}},
			Paged{Cache: cache.Config{Policy: cache.Auto, Window: 1, OptimizerOnHost: true}},
		} {
			if !train && cacheOf(pl).OptimizerOnHost {
				continue
			}
			t.Run(fmt.Sprintf("train=%v/%s-%d/host-optimizer=%v", train, cacheOf(pl).Policy, cacheOf(pl).Window, cacheOf(pl).OptimizerOnHost), func(t *testing.T) {
				got := trainSmall(t, m, pl, 3, train)
				for i := range want.losses {
					if got.losses[i] != want.losses[i] {
						t.Errorf("step %d: loss %v, resident %v", i+1, got.losses[i], want.losses[i])
					}
				}
				for i := range want.params {
					for j := range want.params[i] {
						if got.params[i][j] != want.params[i][j] {
							t.Fatalf("parameter %d element %d: %v, resident %v", i, j, got.params[i][j], want.params[i][j])
						}
					}
				}
			})
		}
	}
}

// TestWindowTransfersByHand checks the bytes the window policies copy
// against counts worked out by hand from DictCache's rules
// (docs/dictcache.md), for 3 blocks of 2 layers of Linear(5→5) + LeakyReLU
// at batch 2: a block's parameters are 2·(25+5) = 60 floats (240 B), with
// Adam's moments 180 floats (720 B); an activation is 10 floats (40 B);
// every Run downloads its 4-byte output. Saved activations travel with the
// block whose layer reads them: block 0 keeps z0, h0, z1; block 1 h1, z2,
// h2, z3; block 2 h3, z4, h4, z5, h5 (z = Linear output, h = LeakyReLU
// output).
func TestWindowTransfersByHand(t *testing.T) {
	m := smallLinear{batch: 2, dim: 5, layers: 6, perBlock: 2}
	for _, tc := range []struct {
		name            string
		policy          cache.Policy
		window, runs    int
		train           bool
		up, down        int64
		effectiveWindow int
	}{
		// The window policy (DictCache's): Adam's moments stay on the
		// device, a block moves its 240 B of parameters; a miss loads the
		// missed block and the successors the previous pass taught.
		//
		// Eval, window 1: each run loads blocks 0, 1, 2 (3 × 240 B up) and
		// writes back each block it evicts, changed or not (240 B down): 2
		// evictions in the first run, 3 in each later one (block 2 is
		// still resident when run 2 misses on block 0).
		{"window eval 1", cache.Window, 1, 3, false, 9 * 240, 8*240 + 3*4, 1},
		// Window 2: run 1 knows no order and loads only what it misses, as
		// window 1 (3 up, 2 down) and learns 0→1→2. Run 2: the miss on 0
		// writes 2 back and loads 0 and its successor 1 (2 up, 1 down),
		// then learns 2→0 (the forward pass is not reset between runs); the
		// miss on 2 writes 0 and 1 back and loads 2 and 0 (2 up, 2 down).
		// Run 3: 0 hits; the miss on 1 writes 2 and 0 back and loads 1 and
		// 2 (2 up, 2 down). 9 loads, 7 write-backs.
		{"window eval 2", cache.Window, 2, 3, false, 9 * 240, 7*240 + 3*4, 2},
		// Window 3: run 1 as window 1 (3 up, 2 down); run 2's miss on 0
		// writes 2 back and loads 0, 1, 2 (3 up, 1 down); run 3 hits all.
		{"window eval 3", cache.Window, 3, 3, false, 6 * 240, 3*240 + 3*4, 3},
		// Train, window 1, one step. Forward: load b0 (240 up); h1 is
		// computed while b1 is out, so it is staged to b1's master (40
		// down); miss on b1: b0 written back with its 3 live activations
		// (240 + 120 down), b1 loaded with h1 (240 + 40 up); likewise h3
		// staged (40 down), b1 written back (240 + 160 down), b2 loaded
		// with h3 (240 + 40 up). Backward: b2 is resident; miss on b1: b2's
		// updated parameters written back and its activations, all used,
		// dropped (240 down), b1 loaded with its 4 live ones (240 + 160 up);
		// miss on b0: b1 written back (240 down), b0 loaded with its 3
		// (240 + 120 up).
		{"window train 1", cache.Window, 1, 1, true, 5*240 + 40 + 40 + 160 + 120, 40 + 360 + 40 + 400 + 240 + 240 + 4, 1},

		// window-paged, gpuz's earlier variant: the moments page with the
		// block (720 B), and a miss loads the successors in the schedule's
		// order from the first run on.
		//
		// Eval, window 1: as the window policy (no moments in eval).
		{"paged eval 1", cache.WindowPaged, 1, 3, false, 3 * 720, 480 + 720 + 720 + 3*4, 1},
		// Window 2: a miss on block 0 loads 0 and 1; a miss on block 2
		// writes both back and loads 2. The bytes are the same as window 1.
		{"paged eval 2", cache.WindowPaged, 2, 3, false, 3 * 720, 480 + 720 + 720 + 3*4, 2},
		// Window 3 holds the model: one load, no write-back.
		{"paged eval 3", cache.WindowPaged, 3, 3, false, 720, 3 * 4, 3},
		// Train, window 1, one step: as the window policy's, each block
		// moving 720 B instead of 240 B, and b2's and b1's write-backs in
		// the backward pass 720 B each.
		{"paged train 1", cache.WindowPaged, 1, 1, true, 5*720 + 40 + 40 + 160 + 120, 40 + 840 + 40 + 880 + 720 + 720 + 4, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := trainSmall(t, m, Paged{Cache: cache.Config{Policy: tc.policy, Window: tc.window}}, tc.runs, tc.train)
			if got.window != tc.effectiveWindow {
				t.Errorf("window %d, want %d", got.window, tc.effectiveWindow)
			}
			if got.uploads != tc.up || got.downloads != tc.down {
				t.Errorf("copied %d B up and %d B down, want %d and %d", got.uploads, got.downloads, tc.up, tc.down)
			}
		})
	}
}

// TestLoadOutOfMemoryFreesEverything loads the small model on simulated
// devices too small for it, resident and paged: Load must fail with the
// device's out-of-memory error and leave nothing allocated.
func TestLoadOutOfMemoryFreesEverything(t *testing.T) {
	m := smallLinear{batch: 2, dim: 5, layers: 6, perBlock: 2}
	_, x, target, loss, blocks, _, _ := m.buildProject()
	sched, err := Compile(Spec{Inputs: []*gorgonia.Node{x, target}, Blocks: blocks, Output: loss, Train: true,
		Optimizer: hostmath.DefaultAdam(), ClipNorm: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		capacity int64
		pl       Placement
	}{
		{"resident", 2000, Resident{}},
		{"paged window 1", 1000, Paged{Cache: cache.Config{Policy: cache.Window, Window: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := device.NewSim(tc.capacity, nil)
			_, err := sched.Load(dev, tc.pl)
			var oom *device.OutOfMemoryError
			if !errors.As(err, &oom) {
				t.Fatalf("Load on %d bytes: %v, want an out-of-memory error", tc.capacity, err)
			}
			if got := dev.Stats().AllocatedBytes; got != 0 {
				t.Errorf("%d bytes still allocated after the failed Load", got)
			}
		})
	}
}

// TestFootprintIsMeasuredPeak runs the schedule on a simulated device under
// several placements: the device's measured peak must equal the footprint
// computed before allocating.
func TestFootprintIsMeasuredPeak(t *testing.T) {
	m := smallLinear{batch: 2, dim: 5, layers: 6, perBlock: 2}
	for _, train := range []bool{true, false} {
		for _, pl := range []Placement{
			Resident{},
			Paged{Cache: cache.Config{Policy: cache.Window, Window: 1}},
			Paged{Cache: cache.Config{Policy: cache.Window, Window: 2}},
			Paged{Cache: cache.Config{Policy: cache.WindowPaged, Window: 2}},
			Paged{Cache: cache.Config{Policy: cache.Auto, Window: 2}},
			Paged{Cache: cache.Config{Policy: cache.Auto, OptimizerOnHost: train}},
		} {
			_, x, target, loss, blocks, _, _ := m.buildProject()
			sched, err := Compile(Spec{Inputs: []*gorgonia.Node{x, target}, Blocks: blocks, Output: loss, Train: train,
				Optimizer: hostmath.DefaultAdam(), ClipNorm: 1})
			if err != nil {
				t.Fatal(err)
			}
			dev := device.NewSim(1<<20, nil)
			free, _, _ := dev.MemInfo()
			want := sched.Footprint(pl, free)
			prog, err := sched.Load(dev, pl)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := prog.Run(); err != nil {
					t.Fatal(err)
				}
			}
			if got := dev.Stats().PeakBytes; got != want.Device {
				t.Errorf("train=%v %+v: measured peak %d bytes, footprint %d", train, pl, got, want.Device)
			}
			if prog.Window() != want.Window {
				t.Errorf("train=%v %+v: window %d, footprint's %d", train, pl, prog.Window(), want.Window)
			}
			prog.Close()
			if got := dev.Stats().AllocatedBytes; got != 0 {
				t.Errorf("%d bytes still allocated after Close", got)
			}
		}
	}
}

// TestAutoCopiesNoMoreThanWindow checks that the auto policy, which evicts
// the block needed farthest ahead and loads the next block early, never
// copies more than the window-paged policy with the same window (which,
// like auto, pages Adam's moments with their block), and
// never reloads a block more often than the model has blocks per pass.
func TestAutoCopiesNoMoreThanWindow(t *testing.T) {
	m := smallLinear{batch: 2, dim: 5, layers: 12, perBlock: 1} // 12 blocks
	for _, train := range []bool{true, false} {
		for window := 1; window <= 12; window++ {
			win := trainSmall(t, m, Paged{Cache: cache.Config{Policy: cache.WindowPaged, Window: window}}, 3, train)
			auto := trainSmall(t, m, Paged{Cache: cache.Config{Policy: cache.Auto, Window: window}}, 3, train)
			if auto.uploads > win.uploads {
				t.Errorf("train=%v window %d: auto copied %d B up, the window-paged policy %d B", train, window, auto.uploads, win.uploads)
			}
			// A block is 30 floats; with Adam's moments 90. Each of 3 steps
			// can load each block at most once per pass (2 passes in training).
			blockBytes, passes := int64(4*30), int64(1)
			if train {
				blockBytes, passes = 3*blockBytes, 2
			}
			if limit := 3 * passes * 12 * (blockBytes + 4*2*5*3); auto.uploads > limit {
				t.Errorf("train=%v window %d: auto copied %d B up, more than %d B", train, window, auto.uploads, limit)
			}
		}
	}
}

// cacheOf is pl's cache configuration, the zero one when it pages nothing.
func cacheOf(pl Placement) cache.Config {
	c, _ := pl.Paging()
	return c
}

// isPaged reports whether pl pages some block.
func isPaged(pl Placement) bool {
	_, ok := pl.Paging()
	return ok
}
