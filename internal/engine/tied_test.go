package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/ops"
)

// tiedModel is a hand-sized decoder with tied embeddings, as GPT-2's: the
// embedding's table (6×4, block embed) is also the output head's weight,
// the logits the final norm's output times its transpose (a Linear with a
// zero bias fed as data: the head has no parameter of its own). Blocks:
// embed (0), layer (1: a Linear(4→4) with its LeakyReLU), norm (2: a
// LayerNorm's gain and shift). The weight belongs to embed, the first
// block that reads it; the head's product, after norm's step, reads it
// again and so needs embed resident.
var tiedModel = handModel{"tied", func() ([]*gorgonia.Node, []Block, *gorgonia.Node) {
	g := gorgonia.NewGraph()
	ids := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(1, batch), gorgonia.WithName("ids"))
	target := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(1, batch), gorgonia.WithName("target"))
	positions := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(batch, dim), gorgonia.WithName("positions"))
	noBias := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(vocab), gorgonia.WithName("head.nobias"))
	embedW := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(vocab, dim), gorgonia.WithName("embed.w"))
	gamma := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(dim), gorgonia.WithName("norm.gamma"))
	beta := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(dim), gorgonia.WithName("norm.beta"))
	blocks := []Block{{Name: "embed", Params: []*gorgonia.Node{embedW}}}
	x := gorgonia.Must(ops.Apply(ops.Embedding{}, ids, embedW, positions))
	x = layer(g, &blocks, "layer")(x)
	blocks = append(blocks, Block{Name: "norm", Params: []*gorgonia.Node{gamma, beta}})
	x = gorgonia.Must(ops.Apply(ops.LayerNorm{Eps: ops.DefaultLayerNormEps}, x, gamma, beta))
	logits := gorgonia.Must(ops.Apply(ops.Linear{}, x, embedW, noBias))
	return []*gorgonia.Node{ids, target, positions, noBias}, blocks, gorgonia.Must(ops.Apply(ops.SoftmaxCrossEntropy{}, logits, target))
}}

// passes writes a schedule's needs and updates as a cache sees the
// blocks: "F0" a forward run of steps needing block 0, "B2" a backward
// run needing block 2, "U1" block 1's update; steps that need no block
// are left out and a block needed by consecutive steps is written once.
func passes(p *Schedule) string {
	var out []string
	prev := ""
	for si, s := range p.steps {
		for _, b := range p.needs[si] {
			name := fmt.Sprintf("F%d", b)
			if s.backward {
				name = fmt.Sprintf("B%d", b)
			}
			if name != prev {
				out = append(out, name)
			}
			prev = name
		}
		for _, u := range p.updates {
			if u.after == si {
				out = append(out, fmt.Sprintf("U%d", u.block))
				prev = ""
			}
		}
	}
	return strings.Join(out, " ")
}

// TestTiedWeightSchedule checks where the schedule puts a weight two
// blocks' steps read. Forward: embed's lookup, the layer, the norm, and
// embed again for the head's product (which also keeps the norm's output
// and the logits with embed, the first block whose parameters a step
// reads them with). Backward: embed first (the loss's and the head's
// gradients read the logits, the weight and the norm's output), the norm,
// the layer; the embedding's own gradient reads only the ids and the
// gradient sum nothing of a block, so embed's update, after the sum of
// its two gradients (the head product's and the lookup's), is the last
// need of the pass. Each pass's order lists first needs: forward embed,
// layer, norm; backward embed, norm, layer.
func TestTiedWeightSchedule(t *testing.T) {
	for _, tc := range []struct {
		train  bool
		passes string
		order  [2][]int
	}{
		{true, "F0 F1 F2 F0 B0 B2 U2 B1 U1 U0", [2][]int{{0, 1, 2}, {0, 2, 1}}},
		{false, "F0 F1 F2 F0", [2][]int{{0, 1, 2}, nil}},
	} {
		t.Run(fmt.Sprintf("train=%v", tc.train), func(t *testing.T) {
			p := compileHand(t, tiedModel, tc.train)
			defer func() {
				if t.Failed() {
					t.Logf("structure:\n%s\nupdates %+v", describe(p), p.updates)
				}
			}()
			if got := passes(p); got != tc.passes {
				t.Errorf("passes %q, want %q", got, tc.passes)
			}
			if !slices.Equal(p.order[0], tc.order[0]) || !slices.Equal(p.order[1], tc.order[1]) {
				t.Errorf("orders %v, want %v", p.order, tc.order)
			}
			w := p.params[0] // embed.w, the tied weight
			var readers []int
			for si, s := range p.steps {
				if slices.Contains(s.args, w) {
					readers = append(readers, si)
					if !slices.Contains(p.needs[si], 0) {
						t.Errorf("step %d reads the tied weight and needs %v, not embed", si, p.needs[si])
					}
				}
			}
			// Read by the lookup and the head's product forward, and by the
			// head's input gradient backward.
			if want := 2 + btoi(tc.train); len(readers) != want {
				t.Fatalf("%d steps read the tied weight, want %d", len(readers), want)
			}
			if head := readers[1]; !slices.ContainsFunc(p.needs[:head], func(n []int) bool { return slices.Contains(n, 2) }) {
				t.Errorf("the head's product (step %d) runs before a step needs norm", head)
			}
			if !tc.train {
				return
			}
			var ups []update
			for _, u := range p.updates {
				if u.block == 0 {
					ups = append(ups, u)
				}
			}
			grad := p.values[p.grads[0]]
			if len(ups) != 1 || ups[0].after != grad.produced {
				t.Fatalf("embed's updates %+v, want one after step %d, which sums its gradients", ups, grad.produced)
			}
			// The sum's terms, the head product's weight gradient and the
			// lookup's, both come before it, as does every step that needs
			// embed.
			sum := p.steps[grad.produced]
			if !isGradientSum(sum.op) {
				t.Fatalf("embed's gradient is computed by %v, not gorgonia's gradient sum", sum.op)
			}
			for _, a := range sum.args {
				if p.values[a].produced >= ups[0].after {
					t.Errorf("a term of embed's gradient is computed at step %d, after the update", p.values[a].produced)
				}
			}
			for si := ups[0].after + 1; si < len(p.steps); si++ {
				if slices.Contains(p.needs[si], 0) {
					t.Errorf("step %d needs embed after its update", si)
				}
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// tiedRun is what two epochs of two batches of the tied model leave: each
// batch's loss, the final parameters, the bytes the device copied in the
// second epoch and those Schedule.Copies counts for it, and the device's
// peak with the footprint's device bytes (the device holds exactly them).
type tiedRun struct {
	losses         []float32
	params         [][]float32
	up, down       int64
	dryUp, dryDown int64
	overlap        int64
	peak, need     int64
}

// runTied trains or evaluates the tied model on a simulated device under
// pl for two epochs of two batches (the ids and targets fed each batch,
// the positions and the head's zero bias set once).
func runTied(t *testing.T, train bool, pl Placement) tiedRun {
	t.Helper()
	inputs, blocks, loss := tiedModel.build()
	p, err := Compile(Spec{Inputs: inputs, Blocks: blocks, Output: loss, Train: train, Optimizer: hostmath.DefaultAdam(), ClipNorm: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := tiedRun{need: p.Footprint(pl, 1<<40).Device}
	dev := device.NewSim(r.need, nil)
	defer dev.Close()
	prog, err := p.Load(dev, pl)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	set := func(n *gorgonia.Node, data []float32) {
		if err := prog.SetInput(n, data); err != nil {
			t.Fatal(err)
		}
	}
	random := func(n *gorgonia.Node, mean float64) {
		data := make([]float32, n.Shape().TotalSize())
		for i := range data {
			data[i] = float32(mean + rng.Float64() - 0.5)
		}
		set(n, data)
	}
	random(inputs[2], 0)                                          // positions
	set(inputs[3], make([]float32, vocab))                        // the head's zero bias
	random(blocks[0].Params[0], 0)                                // the tied weight
	random(blocks[1].Params[0], 0)                                // the layer's weight
	random(blocks[1].Params[1], 0)                                // and bias
	random(blocks[2].Params[0], 1)                                // the norm's gain
	random(blocks[2].Params[1], 0)                                // and shift
	batches := [][2][]float32{{{1, 4}, {2, 5}}, {{3, 0}, {1, 1}}} // ids, targets
	var before device.Stats
	for epoch := range 2 {
		before = dev.Stats()
		for _, b := range batches {
			set(inputs[0], b[0])
			set(inputs[1], b[1])
			v, err := prog.Run()
			if err != nil {
				t.Fatalf("epoch %d: %v", epoch+1, err)
			}
			r.losses = append(r.losses, v)
		}
	}
	after := dev.Stats()
	r.up, r.down, r.peak = after.UploadBytes-before.UploadBytes, after.DownloadBytes-before.DownloadBytes, after.PeakBytes
	c, err := p.Copies(pl, prog.Window(), len(batches), inputs[:2])
	if err != nil {
		t.Fatal(err)
	}
	r.dryUp, r.dryDown, r.overlap = c.UploadBytes, c.DownloadBytes, c.OverlapBytes
	for _, blk := range blocks {
		for _, n := range blk.Params {
			v, err := prog.Read(n)
			if err != nil {
				t.Fatal(err)
			}
			r.params = append(r.params, v)
		}
	}
	return r
}

// TestTiedWeightPagedMatchesResident trains and evaluates the tied model
// resident and paged under every policy: the copies the second epoch
// makes must be those Schedule.Copies counts, and the losses and final
// weights bit-identical to the resident run's (embed's one update, on the
// sum of its two gradients, after the last step that needs it).
func TestTiedWeightPagedMatchesResident(t *testing.T) {
	for _, train := range []bool{true, false} {
		want := runTied(t, train, Resident{})
		for _, pl := range []Placement{
			Resident{},
			Paged{Cache: cache.Config{Policy: cache.Window, Window: 1}},
			Paged{Cache: cache.Config{Policy: cache.Window, Window: 2}},
			Paged{Cache: cache.Config{Policy: cache.WindowPaged, Window: 1}},
			Paged{Cache: cache.Config{Policy: cache.WindowPaged, Window: 2}},
			Paged{Cache: cache.Config{Policy: cache.Auto}},
			Paged{Cache: cache.Config{Policy: cache.Auto, Window: 1}},
			Paged{Cache: cache.Config{Policy: cache.Auto, Window: 2}},
			Paged{Cache: cache.Config{Policy: cache.Auto, Window: 1, OptimizerOnHost: true}},
			Paged{Cache: cache.Config{Policy: cache.Auto, Window: 2, OptimizerOnHost: true}},
		} {
			if !train && cacheOf(pl).OptimizerOnHost {
				continue
			}
			t.Run(fmt.Sprintf("train=%v/paged=%v-%s-%d-host=%v", train, isPaged(pl), cacheOf(pl).Policy, cacheOf(pl).Window, cacheOf(pl).OptimizerOnHost), func(t *testing.T) {
				got := runTied(t, train, pl)
				if got.up != got.dryUp || got.down != got.dryDown {
					t.Errorf("the run copied %d B up, %d down; the dry run counts %d up, %d down", got.up, got.down, got.dryUp, got.dryDown)
				}
				if cacheOf(pl).Policy != cache.Auto && got.overlap != 0 {
					t.Errorf("%d B overlap without the auto policy's prefetch", got.overlap)
				}
				if got.peak != got.need {
					t.Errorf("peak %d B, footprint %d B", got.peak, got.need)
				}
				// A window smaller than the 3 blocks pages every batch.
				if isPaged(pl) && cacheOf(pl).Window > 0 && cacheOf(pl).Window < 3 && got.up <= want.up {
					t.Errorf("paged, %d B up, no more than resident's %d", got.up, want.up)
				}
				if !slices.Equal(got.losses, want.losses) {
					t.Errorf("losses %v, resident %v", got.losses, want.losses)
				}
				for i := range want.params {
					if !slices.Equal(got.params[i], want.params[i]) {
						t.Errorf("parameter %d: %v, resident %v", i, got.params[i], want.params[i])
					}
				}
			})
		}
	}
}

// TestUnevenBlocksSlots: the staging buffer is sized by the saved values
// a step can write while their block is out; the tied model's blocks
// differ in size, so a
// window over them keeps a slot of each block's size where that takes
// less than a window of the largest (a slot of each size for every block
// of it the window can hold), and a window of all three keeps exactly
// their areas; the runs of TestTiedWeightPagedMatchesResident then peak at
// that footprint, on a device holding no more.
func TestUnevenBlocksSlots(t *testing.T) {
	for _, train := range []bool{true, false} {
		inputs, blocks, loss := tiedModel.build()
		sc, err := Compile(Spec{Inputs: inputs, Blocks: blocks, Output: loss, Train: train, Optimizer: hostmath.DefaultAdam(), ClipNorm: 1})
		if err != nil {
			t.Fatal(err)
		}
		// The staging buffer holds the largest saved value written while
		// its block may be out: the layer's input e (2×4), which the
		// embedding step computes without the layer; not the logits (2×6),
		// which embed keeps and computes with embed resident.
		if got, want := sc.largestStaged(everyBlock), btoi(train)*batch*dim; got != want { // evaluation saves nothing
			t.Errorf("train=%v: staging of %d elements, want %d", train, got, want)
		}
		for _, c := range cache.Choices(1, train) {
			bd, err := Paged{Cache: c}.bind(sc)
			if err != nil {
				t.Fatal(err)
			}
			bp := bd.(*blockPlan)
			var own []int
			largest := 0
			for _, l := range bp.ls {
				own = append(own, l.elems)
				largest = max(largest, l.elems)
			}
			slices.SortFunc(own, func(a, b int) int { return b - a })
			if own[0] == own[len(own)-1] {
				t.Fatalf("the tied model's areas are equal (%v): no uneven blocks to test", own)
			}
			if got, uniform := bp.slotAreas(3); uniform || !slices.Equal(got, own) {
				t.Errorf("train=%v %s: a window of 3 keeps slots %v (uniform %v), want the areas %v", train, c.Policy, got, uniform, own)
			}
			if got, _ := bp.slotAreas(1); !slices.Equal(got, []int{largest}) {
				t.Errorf("train=%v %s: a window of 1 keeps slots %v, want one of the largest area %d", train, c.Policy, got, largest)
			}
			if bp.slotBytes(2) > 2*4*int64(largest) {
				t.Errorf("train=%v %s: a window of 2 takes %d B, more than two of the largest area's %d B", train, c.Policy, bp.slotBytes(2), 4*largest)
			}
		}
	}
}

// Tied (handModels[3], tiedModel): E is embed's 96 B table, W the layer's
// 80 B, N the norm's 32 B; a saved activation is 32 B (a), the logits 48
// B. Saved: embed keeps the norm's output n (steps 3-8) and the logits
// (4-6), both read by the head's gradients; layer keeps the embedding e
// (0-14) and its Linear's output z (1-12); norm keeps its input h (2-10).
// Steps' needs: forward embed (0), layer (1-2), norm (3), embed (4-5);
// backward embed (6-8), norm (9-10), nothing (11, then U2), layer
// (12-14), nothing (15, then U1; 16, the embedding's gradient; 17, the
// sum; then U0, whose load the window rule does not observe). Staged
// when their block is out: e, h, n.
var tiedCases = []scheduleCase{
	// Train, window 1 (a miss loads the missed block alone). b1: embed in
	// (E), e staged; miss layer: embed back (E), layer in (W, e a); h
	// staged; miss norm: layer back (W, e z 2a off), norm in (N, h a); n
	// staged; miss embed: norm back (N, h a off), embed in (E, n a);
	// logits computed there. Backward: embed hits to step 8; miss norm:
	// embed back (E, n and logits dead: 80 B dropped), norm in (N, h a);
	// U2; miss layer: norm back (N, h a dropped), layer in (W, e z 2a);
	// U1; U0 misses: layer back (W, 2a dropped), embed in (E), staying
	// for the next batch. b1: 7 W loads (3E + 2W + 2N = 512 B), 5 saved
	// loads (6a = 192 B), 6 write-backs (2E + 2W + 2N = 416 B), 2
	// offloads (3a), 3 stages (3a), 3 drops (80 + 32 + 64 = 176 B). Later
	// batches: embed hits at step 0: 6 W loads (416 B).
	{3, true, 1, [2]tally{
		{loadWeights: {13, 928}, loadSaved: {10, 384}, writeBack: {12, 832}, offload: {4, 192}, stage: {6, 192}, drop: {6, 352}},
		{loadWeights: {12, 832}, loadSaved: {10, 384}, writeBack: {12, 832}, offload: {4, 192}, stage: {6, 192}, drop: {6, 352}},
	}},
	// Train, window 2. b1: embed, layer and norm miss as with window 1,
	// learning forward embed→layer→norm; the head's miss on embed, which
	// has learned layer, writes back norm (N, h a off) and loads embed (E,
	// n a) with layer (W, e z 2a), learning norm→embed. Backward: the
	// pass's chain starts anew at embed; miss norm (no successor yet):
	// embed (E, 80 B dropped) and layer (W, e z 2a off) back, norm in (N,
	// h a), learning embed→norm; U2; miss layer: norm back (N, h a
	// dropped), layer in (W, e z 2a), learning norm→layer; U1; U0 misses,
	// embed having learned norm: layer back (W, 2a dropped), embed (E)
	// and norm (N) in. b1: 9 W loads (3E + 3W + 3N = 624 B), 6 saved
	// loads (8a = 256 B), 7 write-backs (2E + 3W + 2N = 496 B), 3
	// offloads (5a = 160 B), 3 stages, 3 drops (176 B). b2 starts with
	// embed and norm: embed hits, learning layer→embed (a forward pass
	// does not reset the chain, and layer was the backward pass's last
	// need), e staged; miss layer, which has learned embed: embed (E) and
	// norm (N) back, layer (W, e a) and embed (E) in; h staged; miss
	// norm, which has learned embed: layer (W, e z 2a off) and embed (E)
	// back, norm (N, h a) and embed (E) in, learning layer→norm again; n
	// is computed with embed resident (no stage) and the head's product
	// hits. Backward: embed and norm hit to U2; miss layer, no backward
	// successor: norm (N, h a dropped) and embed (E, n and logits 80 B
	// dropped) back, layer in (W, e z 2a); U0 as in b1. Per batch: 7 W
	// loads (3E + 2W + 2N = 512 B), 3 saved loads (4a), 7 write-backs
	// (3E + 2W + 2N = 512 B), 1 offload (2a), 2 stages, 3 drops (176 B).
	{3, true, 2, [2]tally{
		{loadWeights: {16, 1136}, loadSaved: {9, 384}, writeBack: {14, 1008}, offload: {4, 224}, stage: {5, 160}, drop: {6, 352}},
		{loadWeights: {14, 1024}, loadSaved: {6, 256}, writeBack: {14, 1024}, offload: {2, 128}, stage: {4, 128}, drop: {6, 352}},
	}},
	// Eval, window 1: nothing saved. b1 loads embed, layer, norm, embed
	// (2E + W + N = 304 B) and writes back embed, layer, norm (208 B) at
	// the misses; later batches find embed resident: 3 loads (208 B), 3
	// write-backs.
	{3, false, 1, [2]tally{
		{loadWeights: {7, 512}, writeBack: {6, 416}},
		{loadWeights: {6, 416}, writeBack: {6, 416}},
	}},
	// Eval, window 2, as the cache's trace "window, a tied weight in
	// eval": b1 misses on embed, layer and norm alone (E + W + N in, E + W
	// back), learning embed→layer→norm, and the head's miss on embed
	// writes back norm (N) and loads embed with layer (E + W), learning
	// norm→embed. b2: embed and layer hit; miss norm: embed and layer back
	// (E + W), norm and embed in (N + E); the head hits. b3: embed hits;
	// miss layer, which has learned norm: norm and embed back (N + E),
	// layer and norm in (W + N); norm hits; miss embed: layer and norm
	// back (W + N), embed and layer in (E + W). b4 = b2.
	{3, false, 2, [2]tally{
		{loadWeights: {7, 512}, writeBack: {5, 384}},
		{loadWeights: {6, 416}, writeBack: {6, 416}},
	}},
}

func TestDictCacheScheduleTied(t *testing.T) {
	for _, tc := range tiedCases {
		checkSchedule(t, tc)
	}
}

// TestRecomputeTiedRerunsOwnSteps compiles the tied model with recompute:
// the tied weight reaches the whole model through the embedding, yet each
// block re-runs only its own forward steps. The layer re-runs its Linear
// (the LeakyReLU's input); the norm nothing (its LayerNorm's input is its
// block's input); the embedding's block only the head's product, whose
// logits the loss's gradient reads and which reads the tied weight, from
// the final norm's output that it keeps. Before reachedFrom stopped at
// values saved for other blocks, the embedding's block also re-ran the
// embedding, the layer and the norm, as its weight reaches them all.
func TestRecomputeTiedRerunsOwnSteps(t *testing.T) {
	inputs, blocks, loss := tiedModel.build()
	sc, err := Compile(Spec{Inputs: inputs, Blocks: blocks, Output: loss, Train: true, Optimizer: hostmath.DefaultAdam(),
		ClipNorm: 1, Recompute: levers.RecomputeBlocks})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sc.steps {
		if s.rerun {
			got = append(got, fmt.Sprintf("%s%v", s.op, s.reads))
		}
	}
	want := []string{"Linear[0]", "Linear[1]"}
	if !slices.Equal(got, want) {
		t.Errorf("re-run steps %v, want %v (the head's product, then the layer's Linear, in backward order)", got, want)
	}
}
