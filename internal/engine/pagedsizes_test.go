package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/ops"
)

// oneLargeManySmall is a hand model of one large block and twelve small
// ones: an embedding table of 50 rows of dim (block embed, 200 elements)
// looked up for batch ids, then twelve Linear(dim→dim) layers with their
// LeakyReLU (blocks L0…L11, 20 parameters each) and a mean squared error.
// Evaluated, an area holds its block's parameters alone (nothing is
// saved for a backward pass).
var oneLargeManySmall = handModel{"one large, many small", func() ([]*gorgonia.Node, []Block, *gorgonia.Node) {
	g := gorgonia.NewGraph()
	ids := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(1, batch), gorgonia.WithName("ids"))
	target := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(batch, dim), gorgonia.WithName("target"))
	positions := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(batch, dim), gorgonia.WithName("positions"))
	table := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(50, dim), gorgonia.WithName("embed.w"))
	blocks := []Block{{Name: "embed", Params: []*gorgonia.Node{table}}}
	h := gorgonia.Must(ops.Apply(ops.Embedding{}, ids, table, positions))
	for i := range 12 {
		h = layer(g, &blocks, fmt.Sprint("L", i))(h)
	}
	return []*gorgonia.Node{ids, target, positions}, blocks, gorgonia.Must(ops.Apply(ops.MSE{Dims: 2}, h, target))
}}

// TestSlotsCountOnlyWhatAWindowHolds pins the slots of a window over one
// large block and many small ones (issue 44 item 18): a size of area
// gets as many slots as blocks of it the window can hold at once, the
// window or fewer, never one per block of that size; where that takes
// as much as a window of the largest, every slot is the largest. The
// figures are by hand: areas of 200 and 20 elements (TestUnevenBlocksSlots
// has one block of each size, where a slot per block and a slot per
// block the window holds agree).
func TestSlotsCountOnlyWhatAWindowHolds(t *testing.T) {
	sc := compileHand(t, oneLargeManySmall, false)
	bd, err := Paged{Cache: cache.Config{Policy: cache.Window, Window: 1}}.bind(sc)
	if err != nil {
		t.Fatal(err)
	}
	bp := bd.(*blockPlan)
	small := slices.Repeat([]int{20}, 12)
	if got := bp.ls; len(got) != 13 || got[0].elems != 200 || got[1].elems != 20 {
		t.Fatalf("areas %+v, want one of 200 elements and twelve of 20", got)
	}
	for _, tt := range []struct {
		window  int
		slots   []int
		uniform bool
	}{
		{1, []int{200}, true},                              // 200 + 20 > 200: one slot of the largest
		{2, []int{200, 20, 20}, false},                     // 240 < 400; counting all twelve small ones, 440 ≥ 400 made it uniform
		{3, []int{200, 20, 20, 20}, false},                 // 260 < 600
		{12, append([]int{200}, small...), false},          // 440 < 2400
		{13, append([]int{200}, small...), false},          // the small ones are twelve: no thirteenth slot
		{20, append([]int{200}, small...), false},          // a window past the blocks holds no more
		{4, slices.Concat([]int{200}, small[:4]), false},   // 280 < 800
		{11, slices.Concat([]int{200}, small[:11]), false}, // 420 < 2200
	} {
		slots, uniform := bp.slotAreas(tt.window)
		if !slices.Equal(slots, tt.slots) || uniform != tt.uniform {
			t.Errorf("a window of %d: slots %v (uniform %v), want %v (uniform %v)", tt.window, slots, uniform, tt.slots, tt.uniform)
		}
		var bytes int64
		for _, n := range tt.slots {
			bytes += 4 * int64(n)
		}
		if got := bp.slotBytes(tt.window); got != bytes {
			t.Errorf("a window of %d: slots of %d B, want %d", tt.window, got, bytes)
		}
	}
}

// TestFewSlotsRunAsResident runs the model of one large block and many
// small ones, trained and evaluated, under each policy with a window of 2
// (slots of 200, 20 and 20 elements evaluated: a window that holds the
// large block and a small one, or two small ones) on a device of exactly
// its footprint: the losses are bit-identical to the resident run's, and
// the device peaks at the footprint.
func TestFewSlotsRunAsResident(t *testing.T) {
	for _, train := range []bool{false, true} {
		var want []float32
		for _, pl := range []Placement{
			Resident{},
			Paged{Cache: cache.Config{Policy: cache.Window, Window: 2}},
			Paged{Cache: cache.Config{Policy: cache.WindowPaged, Window: 2}},
			Paged{Cache: cache.Config{Policy: cache.Auto, Window: 2}},
		} {
			inputs, blocks, loss := oneLargeManySmall.build()
			sc, err := Compile(Spec{Inputs: inputs, Blocks: blocks, Output: loss, Train: train, Optimizer: hostmath.DefaultAdam(), ClipNorm: 1})
			if err != nil {
				t.Fatal(err)
			}
			need := sc.Footprint(pl, 1<<40).Device
			dev := device.NewSim(need, nil)
			prog, err := sc.Load(dev, pl)
			if err != nil {
				t.Fatalf("train=%v %+v: %v", train, pl, err)
			}
			rng := rand.New(rand.NewPCG(7, 8))
			set := func(n *gorgonia.Node, data []float32) {
				if err := prog.SetInput(n, data); err != nil {
					t.Fatal(err)
				}
			}
			random := func(n *gorgonia.Node) {
				data := make([]float32, n.Shape().TotalSize())
				for i := range data {
					data[i] = float32(rng.Float64() - 0.5)
				}
				set(n, data)
			}
			random(inputs[1]) // the target
			random(inputs[2]) // the positions
			for _, b := range blocks {
				for _, p := range b.Params {
					random(p)
				}
			}
			var losses []float32
			for _, ids := range [][]float32{{3, 41}, {49, 0}, {7, 7}} {
				set(inputs[0], ids)
				v, err := prog.Run()
				if err != nil {
					t.Fatalf("train=%v %+v: %v", train, pl, err)
				}
				losses = append(losses, v)
			}
			if peak := dev.Stats().PeakBytes; peak != need {
				t.Errorf("train=%v %+v: peak %d B, footprint %d B", train, pl, peak, need)
			}
			prog.Close()
			dev.Close()
			if want == nil {
				want = losses
			} else if !slices.Equal(losses, want) {
				t.Errorf("train=%v %+v: losses %v, resident %v", train, pl, losses, want)
			}
		}
	}
}

// TestPagedHostFootprint pins the host memory of each paged placement of
// a trained model (issue 44 item 19): the paged blocks' masters, and
// Adam's state where the placement keeps it there, counted once. The
// model is smallLinear{batch 2, dim 5, 6 layers, 2 a block}: three blocks
// of 60 parameters and 40 saved floats (each layer keeps its input and
// its Linear's output, 2×5 each), Adam's two moments 120 floats a block.
//
//   - window: the moments stay on the device; the host holds the three
//     areas of 100 floats: 1200 B.
//   - window-paged, auto: the moments travel in the area (220 floats):
//     2640 B.
//   - auto with the optimizer on the host: the areas of 100 floats and
//     the moments apart, 1200 + 3·120·4 = 2640 B, where leaving the state
//     out gave 1200 and counting it again 4080.
//
// The figure is also what a Program's residency allocates in host memory,
// measured.
func TestPagedHostFootprint(t *testing.T) {
	m := smallLinear{batch: 2, dim: 5, layers: 6, perBlock: 2}
	for _, tt := range []struct {
		cache cache.Config
		host  int64
	}{
		{cache.Config{Policy: cache.Window, Window: 1}, 1200},
		{cache.Config{Policy: cache.WindowPaged, Window: 1}, 2640},
		{cache.Config{Policy: cache.Auto, Window: 1}, 2640},
		{cache.Config{Policy: cache.Auto}, 2640},
		{cache.Config{Policy: cache.Auto, OptimizerOnHost: true}, 2640},
		{cache.Config{Policy: cache.Auto, Window: 2, OptimizerOnHost: true}, 2640},
	} {
		_, x, target, loss, blocks, _, _ := m.buildProject()
		sc, err := Compile(Spec{Inputs: []*gorgonia.Node{x, target}, Blocks: blocks, Output: loss, Train: true,
			Optimizer: hostmath.DefaultAdam(), ClipNorm: 1})
		if err != nil {
			t.Fatal(err)
		}
		pl := Paged{Cache: tt.cache}
		dev := device.NewSim(1<<20, nil)
		free, _, _ := dev.MemInfo()
		fp := sc.Footprint(pl, free)
		if fp.Host != tt.host {
			t.Errorf("%+v: footprint's host %d B, want %d", tt.cache, fp.Host, tt.host)
		}
		prog, err := sc.Load(dev, pl)
		if err != nil {
			t.Fatal(err)
		}
		var held int64
		for _, f := range prog.placed.(*residency).masters {
			held += 4 * int64(len(f.Data))
		}
		if held != fp.Host {
			t.Errorf("%+v: the residency holds %d B of host memory, the footprint counts %d", tt.cache, held, fp.Host)
		}
		prog.Close()
	}
}
