package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"gorgonia.org/gorgonia"

	"gpuz/internal/cache"
	"gpuz/internal/hostmath"
)

// TestFrozenSchedule checks what freezing parameters removes from a
// training schedule, by hand: 4 layers Linear(5→5) in 2 blocks, layers 1
// and 2 frozen. Only layers 0 and 3 compute a weight gradient (2
// LinearWeightGrad steps, not 4), the frozen parameters have no gradient
// and no optimizer state, and both blocks, each with a trained layer,
// are updated. Frozen: 2·(25+5) = 60 floats; trained the same, with 120
// floats of Adam's moments.
func TestFrozenSchedule(t *testing.T) {
	for _, tc := range []struct {
		frozen             []int
		perBlock           int
		weightGrads        int
		trained, frozenB   int64
		optimizer, updates int64
	}{
		{frozen: nil, perBlock: 2, weightGrads: 4, trained: 4 * 120, optimizer: 4 * 240, updates: 2},
		{frozen: []int{1, 2}, perBlock: 2, weightGrads: 2, trained: 4 * 60, frozenB: 4 * 60, optimizer: 4 * 120, updates: 2},
		// Blocks of one layer: blocks 1 and 2 wholly frozen, no update.
		{frozen: []int{1, 2}, perBlock: 1, weightGrads: 2, trained: 4 * 60, frozenB: 4 * 60, optimizer: 4 * 120, updates: 2},
		// The first layer frozen: its input's gradient is not needed either.
		{frozen: []int{0}, perBlock: 1, weightGrads: 3, trained: 4 * 90, frozenB: 4 * 30, optimizer: 4 * 180, updates: 3},
	} {
		t.Run(fmt.Sprintf("frozen=%v/per-block=%d", tc.frozen, tc.perBlock), func(t *testing.T) {
			m := smallLinear{batch: 2, dim: 5, layers: 4, perBlock: tc.perBlock, frozen: tc.frozen}
			_, x, target, loss, blocks, _, _ := m.buildProject()
			sc, err := Compile(Spec{Inputs: []*gorgonia.Node{x, target}, Blocks: blocks, Output: loss, Train: true,
				Optimizer: hostmath.DefaultAdam(), ClipNorm: 1})
			if err != nil {
				t.Fatal(err)
			}
			weightGrads, inputGrads := 0, 0
			for _, s := range sc.steps {
				switch opName(s.op) {
				case "LinearWeightGrad":
					weightGrads++
				case "LinearInputGrad":
					inputGrads++
				}
			}
			if weightGrads != tc.weightGrads {
				t.Errorf("%d weight-gradient steps, want %d", weightGrads, tc.weightGrads)
			}
			// The gradient flows back to the first trained layer: every
			// layer after it passes it on.
			first := slices.IndexFunc([]int{0, 1, 2, 3}, func(l int) bool { return !slices.Contains(tc.frozen, l) })
			if want := m.layers - 1 - first; inputGrads != want {
				t.Errorf("%d input-gradient steps, want %d", inputGrads, want)
			}
			for i, pv := range sc.params {
				if frozen := sc.values[pv].frozen; frozen != (sc.grads[i] < 0) {
					t.Errorf("%s: frozen %v, gradient value %d", sc.values[pv].node.Name(), frozen, sc.grads[i])
				}
			}
			b := sc.Bytes()
			if b.Parameters != tc.trained || b.Frozen != tc.frozenB || b.Optimizer != tc.optimizer {
				t.Errorf("bytes: trained %d, frozen %d, optimizer %d; want %d, %d, %d", b.Parameters, b.Frozen, b.Optimizer, tc.trained, tc.frozenB, tc.optimizer)
			}
			if int64(len(sc.updates)) != tc.updates {
				t.Errorf("%d updates, want %d", len(sc.updates), tc.updates)
			}
		})
	}
}

// TestFrozenStayBitIdentical trains a model with two frozen layers for
// three steps under every placement: the frozen parameters end
// bit-identical to their initial values, the trained ones have moved,
// and every paged placement ends where the resident one does, bit for
// bit (losses and parameters), with blocks 1 and 2 wholly frozen.
func TestFrozenStayBitIdentical(t *testing.T) {
	m := smallLinear{batch: 2, dim: 5, layers: 4, perBlock: 1, frozen: []int{1, 2}}
	init := m.init(newInitRNG())
	want := trainSmall(t, m, Resident{}, 3, true)
	for l := range m.layers {
		for k, p := range [][]float32{init[l].w, init[l].b} {
			got := want.params[2*l+k]
			moved := !slices.Equal(got, p)
			if frozen := slices.Contains(m.frozen, l); moved == frozen {
				t.Errorf("layer %d parameter %d: moved %v, frozen %v", l, k, moved, frozen)
			}
		}
	}
	for _, pl := range []Placement{
		Paged{Cache: cache.Config{Policy: cache.Window, Window: 1}},
		Paged{Cache: cache.Config{Policy: cache.Window, Window: 2}},
		Paged{Cache: cache.Config{Policy: cache.WindowPaged, Window: 1}},
		Paged{Cache: cache.Config{Policy: cache.Auto, Window: 1}},
		Paged{Cache: cache.Config{Policy: cache.Auto, Window: 2, OptimizerOnHost: true}},
		Paged{Cache: cache.Config{Policy: cache.Auto, Window: 1, OptimizerOnHost: true}},
	} {
		t.Run(fmt.Sprintf("%s-%d/host-optimizer=%v", cacheOf(pl).Policy, cacheOf(pl).Window, cacheOf(pl).OptimizerOnHost), func(t *testing.T) {
			got := trainSmall(t, m, pl, 3, true)
			if !slices.Equal(got.losses, want.losses) {
				t.Errorf("losses %v, resident %v", got.losses, want.losses)
			}
			for i := range want.params {
				if !slices.Equal(got.params[i], want.params[i]) {
					t.Fatalf("parameter %d: %v, resident %v", i, got.params[i], want.params[i])
				}
			}
		})
	}
}

// TestFrozenPassesTheGradient checks that a frozen layer passes the
// gradient to the layers before it: with layers 1 and 2 frozen, the first
// step's gradients of layers 0 and 3 are those of the same model with
// nothing frozen, bit for bit, and a frozen parameter has none.
func TestFrozenPassesTheGradient(t *testing.T) {
	grads := func(m smallLinear) ([][]float32, *Program, []*gorgonia.Node) {
		init := m.init(newInitRNG())
		x, target, ws, bs, prog := m.loadTraining(t, true)
		data := make([]float32, m.batch*m.dim)
		for i := range data {
			data[i] = float32(i%7) / 7
		}
		for _, in := range []*gorgonia.Node{x, target} {
			if err := prog.SetInput(in, data); err != nil {
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
		if _, err := prog.Run(); err != nil {
			t.Fatal(err)
		}
		var out [][]float32
		for _, l := range []int{0, 3} {
			for _, n := range []*gorgonia.Node{ws[l], bs[l]} {
				g, err := prog.Gradient(n)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, g)
			}
		}
		return out, prog, ws
	}
	full, _, _ := grads(smallLinear{batch: 2, dim: 5, layers: 4, perBlock: 2})
	frozen, prog, ws := grads(smallLinear{batch: 2, dim: 5, layers: 4, perBlock: 2, frozen: []int{1, 2}})
	for i := range full {
		if !slices.Equal(frozen[i], full[i]) {
			t.Errorf("gradient %d: %v with layers 1 and 2 frozen, %v without", i, frozen[i], full[i])
		}
	}
	if _, err := prog.Gradient(ws[1]); err == nil {
		t.Error("a frozen weight's gradient read without error")
	}
}

// newInitRNG is the random stream trainSmall draws the initial
// parameters from.
func newInitRNG() *rand.Rand { return rand.New(rand.NewPCG(21, 22)) }

// TestFrozenNeverWrittenBack counts, by hand, what freezing saves the
// window policy: 3 blocks of 2 layers Linear(5→5) at batch 2 in a window
// of 1, over three Runs. Each Run evicts block 1 twice with write-back (at
// F2 and at B0: F0 loads 0; F1 evicts 0, loads 1; F2 evicts 1, loads 2;
// B2 hits; B1 evicts 2, loads 1; B0 evicts 1, loads 0). An activation is
// 10 floats (40 B); a layer's parameters 30 (120 B). Layer l computes
// z_l = Linear(h_{l−1}), h_l = LeakyReLU(z_l); h_{l−1} is saved only for
// layer l's weight gradient, which a frozen layer has none of.
//
//   - Block 1 wholly frozen (layers 2 and 3), read-only: neither
//     write-back copies its 240 B of parameters (2·240 per Run), and h1
//     and h2 are not saved: h1's staged download when block 0 computes it
//     (40), h1 and h2's write-back at F2 (80), and their uploads with the
//     block at F1 (h1, 40) and B1 (80) are gone: 600 B down, 120 up per
//     Run.
//   - Layer 3 frozen, layer 2 trained: block 1 is still written back, but
//     without layer 3's 120 B (2·120 per Run), and h2 is not saved: its
//     write-back at F2 (40) and its upload at B1 (40) are gone: 280 B
//     down, 40 up per Run.
func TestFrozenNeverWrittenBack(t *testing.T) {
	pl := Paged{Cache: cache.Config{Policy: cache.Window, Window: 1}}
	trained := trainSmall(t, smallLinear{batch: 2, dim: 5, layers: 6, perBlock: 2}, pl, 3, true)
	for _, tc := range []struct {
		frozen   []int
		down, up int64
	}{
		{frozen: []int{2, 3}, down: 3 * 600, up: 3 * 120},
		{frozen: []int{3}, down: 3 * 280, up: 3 * 40},
	} {
		t.Run(fmt.Sprint(tc.frozen), func(t *testing.T) {
			frozen := trainSmall(t, smallLinear{batch: 2, dim: 5, layers: 6, perBlock: 2, frozen: tc.frozen}, pl, 3, true)
			if d := trained.downloads - frozen.downloads; d != tc.down {
				t.Errorf("downloads %d trained, %d frozen: %d B saved, want %d", trained.downloads, frozen.downloads, d, tc.down)
			}
			if d := trained.uploads - frozen.uploads; d != tc.up {
				t.Errorf("uploads %d trained, %d frozen: %d B saved, want %d", trained.uploads, frozen.uploads, d, tc.up)
			}
		})
	}
}
