package engine

import (
	"fmt"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/cache"
	"gpuz/internal/hostmath"
	"gpuz/internal/ops"
)

// copyKind is what one block copy of the window policy moves.
type copyKind int

const (
	loadWeights copyKind = iota // a block's parameters, host → device
	loadSaved                   // a block's live saved activations, host → device
	writeBack                   // a block's parameters, device → host
	offload                     // a block's live saved activations, device → host, at eviction
	stage                       // a saved activation computed while its block is out, device → host
	drop                        // a block's dead saved activations, let go at eviction without a copy
	kinds
)

var kindNames = [kinds]string{"load weights", "load saved", "write back", "offload", "stage", "drop"}

// tally is the count and the bytes of each kind of copy.
type tally [kinds][2]int64

func (t tally) String() string {
	var parts []string
	for k, n := range t {
		if n[0] != 0 {
			parts = append(parts, fmt.Sprintf("%s %d×/%d B", kindNames[k], n[0], n[1]))
		}
	}
	return strings.Join(parts, ", ")
}

// copyRecorder is a mover and stepper for the dry walk that records every
// block copy by kind: one entry per block and kind per copy (a block's
// parameters are one load or write-back, its live saved activations one
// load or offload). It tracks which saved activations are on the device
// so that an eviction can tell what it drops. Moving one of Adam's
// moments is an error: under the window policy they never move.
type copyRecorder struct {
	*pager
	t        *testing.T
	n        tally
	onDevice map[int][]int // per resident block, its saved values on the device
	log      []string
}

func (r *copyRecorder) add(k copyKind, b int, bytes int64) {
	if bytes == 0 {
		return
	}
	r.n[k][0]++
	r.n[k][1] += bytes
	r.log = append(r.log, fmt.Sprintf("%s %s %d", kindNames[k], r.sched.spec.Blocks[b].Name, bytes))
}

func (r *copyRecorder) Load(b, _ int, _ bool) error {
	var weights, saved int64
	r.onDevice[b] = nil
	err := r.moves(b, true, true, func(_, n int, m member) error {
		switch {
		case m.saved >= 0:
			saved += 4 * int64(n)
			r.onDevice[b] = append(r.onDevice[b], m.saved)
		case m.moment >= 0:
			r.t.Errorf("block %d: Adam's moment of parameter %d loaded", b, m.param)
		default:
			weights += 4 * int64(n)
		}
		return nil
	})
	r.add(loadWeights, b, weights)
	r.add(loadSaved, b, saved)
	return err
}

func (r *copyRecorder) Evict(b int, writeParams bool) error {
	var weights, saved, dropped int64
	err := r.moves(b, writeParams, false, func(_, n int, m member) error {
		switch {
		case m.saved >= 0:
			saved += 4 * int64(n)
		case m.moment >= 0:
			r.t.Errorf("block %d: Adam's moment of parameter %d written back", b, m.param)
		default:
			weights += 4 * int64(n)
		}
		return nil
	})
	for _, v := range r.onDevice[b] {
		if !r.live(v) {
			dropped += 4 * int64(r.sched.values[v].elems)
		}
	}
	delete(r.onDevice, b)
	r.add(writeBack, b, weights)
	r.add(offload, b, saved)
	r.add(drop, b, dropped)
	return err
}

func (r *copyRecorder) execute(si int, staged bool) error {
	out := r.sched.steps[si].out
	v := r.sched.values[out]
	switch {
	case staged:
		r.add(stage, v.block, 4*int64(v.elems))
	case v.kind == kindSaved:
		r.onDevice[v.block] = append(r.onDevice[v.block], out)
	}
	return nil
}

func (r *copyRecorder) update(int) error { return nil }

func (r *copyRecorder) hostUpdate(int) error {
	r.t.Error("an update on the host under the window policy")
	return nil
}

// recordEpochs walks epochs × batches Runs of the schedule under the window
// policy with the given window and returns each epoch's tally.
func recordEpochs(t *testing.T, sc *Schedule, window, epochs, batches int) ([]tally, []string) {
	t.Helper()
	pl := Paged{Cache: cache.Config{Policy: cache.Window, Window: window}}
	r := &copyRecorder{t: t, onDevice: map[int][]int{}}
	bd, err := pl.bind(sc)
	if err != nil {
		t.Fatal(err)
	}
	if r.pager, err = bd.(*blockPlan).newPager(min(max(window, sc.MinWindow()), sc.Blocks()), r, r.hostUpdate); err != nil {
		t.Fatal(err)
	}
	var out []tally
	for range epochs {
		r.n = tally{}
		for range batches {
			if err := sc.walk(r.pager, r); err != nil {
				t.Fatal(err)
			}
			r.log = append(r.log, "--")
		}
		out = append(out, r.n)
	}
	return out, r.log
}

// describe lists, for a failure message, each block's saved values and
// each step's needs.
func describe(sc *Schedule) string {
	var sb strings.Builder
	for b, blk := range sc.spec.Blocks {
		fmt.Fprintf(&sb, "block %d %s: saved", b, blk.Name)
		for _, v := range sc.saved[b] {
			fmt.Fprintf(&sb, " %s(%d, steps %d-%d)", sc.values[v].node.Name(), sc.values[v].elems, sc.values[v].produced, sc.values[v].lastUse)
		}
		sb.WriteString("\n")
	}
	for si, s := range sc.steps {
		fmt.Fprintf(&sb, "step %d backward=%v %s needs %v\n", si, s.backward, sc.values[s.out].node.Name(), sc.needs[si])
	}
	return sb.String()
}

// handModel is a hand-sized graph with its blocks, compiled for training
// or evaluation.
type handModel struct {
	name  string
	build func() (inputs []*gorgonia.Node, blocks []Block, loss *gorgonia.Node)
}

// The hand models are made of one kind of block, a Linear(4→4) with its
// LeakyReLU at batch 2 (the head of the attention model excepted): 16 + 4
// parameters, 80 B; its input and its Linear's output are saved for the
// backward pass, 8 floats (32 B) each.
const (
	dim   = 4
	batch = 2
	vocab = 6
)

// layer makes a block of one Linear(dim→dim) and returns a function that
// applies it and its LeakyReLU to h.
func layer(g *gorgonia.ExprGraph, blocks *[]Block, name string) func(h *gorgonia.Node) *gorgonia.Node {
	w := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(dim, dim), gorgonia.WithName(name+".w"))
	b := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(dim), gorgonia.WithName(name+".b"))
	*blocks = append(*blocks, Block{Name: name, Params: []*gorgonia.Node{w, b}})
	return func(h *gorgonia.Node) *gorgonia.Node {
		z := gorgonia.Must(ops.Apply(ops.Linear{}, h, w, b))
		return gorgonia.Must(ops.Apply(ops.LeakyReLU{Slope: ops.DefaultLeakySlope}, z))
	}
}

var handModels = []handModel{
	{"linear", func() ([]*gorgonia.Node, []Block, *gorgonia.Node) {
		g := gorgonia.NewGraph()
		x := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(batch, dim), gorgonia.WithName("x"))
		target := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(batch, dim), gorgonia.WithName("target"))
		var blocks []Block
		h := x
		for i := range 3 {
			h = layer(g, &blocks, fmt.Sprint("L", i))(h)
		}
		return []*gorgonia.Node{x, target}, blocks, gorgonia.Must(ops.Apply(ops.MSE{Dims: 2}, h, target))
	}},
	{"resnet", func() ([]*gorgonia.Node, []Block, *gorgonia.Node) {
		g := gorgonia.NewGraph()
		x := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(batch, dim), gorgonia.WithName("x"))
		target := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(batch, dim), gorgonia.WithName("target"))
		// As models.ResnetConfig.Build: blocks listed a1, b1, a2, b2; level
		// l is x + b_l(level l−1(a_l(x))), level 1 having no inner level.
		var blocks []Block
		var a, b [2]func(*gorgonia.Node) *gorgonia.Node
		for l := range 2 {
			a[l] = layer(g, &blocks, fmt.Sprint("a", l+1))
			b[l] = layer(g, &blocks, fmt.Sprint("b", l+1))
		}
		var level func(l int, x *gorgonia.Node) *gorgonia.Node
		level = func(l int, x *gorgonia.Node) *gorgonia.Node {
			h := a[l](x)
			if l > 0 {
				h = level(l-1, h)
			}
			return gorgonia.Must(ops.Apply(ops.Add{}, x, b[l](h)))
		}
		out := level(1, x)
		return []*gorgonia.Node{x, target}, blocks, gorgonia.Must(ops.Apply(ops.MSE{Dims: 2}, out, target))
	}},
	{"attention", func() ([]*gorgonia.Node, []Block, *gorgonia.Node) {
		g := gorgonia.NewGraph()
		ids := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(1, batch), gorgonia.WithName("ids"))
		target := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(1, batch), gorgonia.WithName("target"))
		positions := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(batch, dim), gorgonia.WithName("positions"))
		headW := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(vocab, dim), gorgonia.WithName("head.w"))
		headB := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(vocab), gorgonia.WithName("head.b"))
		embedW := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(vocab, dim), gorgonia.WithName("embed.w"))
		blocks := []Block{{Name: "head", Params: []*gorgonia.Node{headW, headB}}, {Name: "embed", Params: []*gorgonia.Node{embedW}}}
		x := gorgonia.Must(ops.Apply(ops.Embedding{}, ids, embedW, positions))
		for l := 1; l <= 2; l++ {
			x = layer(g, &blocks, fmt.Sprint("layer", l))(x)
		}
		logits := gorgonia.Must(ops.Apply(ops.Linear{}, x, headW, headB))
		return []*gorgonia.Node{ids, target, positions}, blocks, gorgonia.Must(ops.Apply(ops.SoftmaxCrossEntropy{}, logits, target))
	}},
	tiedModel, // tied_test.go
}

// compileHand compiles a hand model for training or evaluation.
func compileHand(t *testing.T, m handModel, train bool) *Schedule {
	t.Helper()
	inputs, blocks, loss := m.build()
	sc, err := Compile(Spec{Inputs: inputs, Blocks: blocks, Output: loss, Train: train, Optimizer: hostmath.DefaultAdam(), ClipNorm: 1})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// scheduleCase is one hand-derived copy schedule: two epochs of two
// batches (as the demos: 60 samples in batches of 30).
type scheduleCase struct {
	model  int // index into handModels
	train  bool
	window int
	epochs [2]tally
}

// checkSchedule records the window policy's copies over two epochs of two
// batches and compares each epoch's tally with the hand-derived one; the
// second epoch's bytes must also be those Schedule.Copies counts, less the
// inputs and outputs.
func checkSchedule(t *testing.T, tc scheduleCase) {
	m := handModels[tc.model]
	t.Run(fmt.Sprintf("%s/train=%v/window=%d", m.name, tc.train, tc.window), func(t *testing.T) {
		sc := compileHand(t, m, tc.train)
		got, log := recordEpochs(t, sc, tc.window, 2, 2)
		for e := range got {
			if got[e] != tc.epochs[e] {
				t.Errorf("epoch %d:\n got  %v\n want %v", e+1, got[e], tc.epochs[e])
			}
		}
		if t.Failed() {
			t.Logf("structure:\n%s\ncopies, batch by batch:\n%s", describe(sc), strings.Join(log, "\n"))
		}
		c, err := sc.Copies(Paged{Cache: cache.Config{Policy: cache.Window, Window: tc.window}}, tc.window, 2, []*gorgonia.Node{})
		if err != nil {
			t.Fatal(err)
		}
		e := got[1]
		up := e[loadWeights][1] + e[loadSaved][1]
		down := e[writeBack][1] + e[offload][1] + e[stage][1] + 2*4 // and each batch's output
		if c.UploadBytes != up || c.DownloadBytes != down {
			t.Errorf("Schedule.Copies counts %d B up, %d down; the recorder %d up, %d down", c.UploadBytes, c.DownloadBytes, up, down)
		}
	})
}

// In the derivations W is a layer block's 80 B of parameters and a one
// saved activation's 32 B; "b1" and "b2" are an epoch's first and second
// batch. Adam's moments never move (the recorder fails a test that moves
// one).
//
// Linear: blocks L0 → L1 → L2. Each block's saved activations are those its
// Linear reads and those computed in it that no later Linear reads: L0
// keeps z0 (x is an input), L1 keeps h0 and z1, L2 keeps h1, z2, h2 (h2 is
// read by the loss's gradient). Forward needs L0 L1 L2, backward L2 L1 L0.
// A saved activation computed while its block is out (h0 while L0 runs,
// h1 while L1 runs, when L1 and L2 are out) is staged to the host.
var linearCases = []scheduleCase{
	// Train, window 1. First batch: load L0 (W). h0 staged (a). Miss on
	// L1: L0 written back (W) with z0 offloaded (a); L1 loaded (W) with
	// h0 (a). h1 staged (a). Miss on L2: L1 written back (W), h0 and z1
	// offloaded (2a); L2 loaded (W) with h1 (a); z2, h2 computed there.
	// Backward: L2 hits; miss on L1: L2 written back (W), its h1, z2, h2
	// dead and dropped (3a); L1 loaded (W) with h0, z1 (2a). Miss on L0:
	// L1 written back (W), h0 and z1 dropped (2a); L0 loaded (W) with z0
	// (a), and stays for the next batch. So b1: 5 weight loads (400 B),
	// 4 saved loads (a + a + 2a + a = 160 B), 4 write-backs (320 B), 2
	// offloads (a + 2a = 96 B), 2 stages (64 B), 2 drops (3a + 2a = 160
	// B). b2 the same but L0 hits: 4 weight loads (320 B). Epoch 1 = b1 +
	// b2, epoch 2 = 2 × b2.
	{0, true, 1, [2]tally{
		{loadWeights: {9, 720}, loadSaved: {8, 320}, writeBack: {8, 640}, offload: {4, 192}, stage: {4, 128}, drop: {4, 320}},
		{loadWeights: {8, 640}, loadSaved: {8, 320}, writeBack: {8, 640}, offload: {4, 192}, stage: {4, 128}, drop: {4, 320}},
	}},
	// Train, window 3. b1 of epoch 1 knows no order: every miss loads
	// only the missed block, as window 1 (5 W loads, 4 saved loads of
	// 160 B, 4 write-backs, 2 offloads of 96 B, 2 stages, 2 drops of
	// 160 B). It learns forward L0→L1→L2 (L2 has no forward successor:
	// the backward pass resets the chain) and backward L2→L1→L0. Then
	// each batch: L0 hits (left by the backward pass); h0 staged (a);
	// miss on L1: L0 written back (W), z0 offloaded (a); L1 loaded (W)
	// with h0 (a) and its successor L2 (W; nothing of L2's is live yet);
	// h1 is computed with L2 resident: no stage. L2 and L1 hit, forward
	// and backward. Miss on L0: L1 (W, drop 2a) and L2 (W, drop 3a)
	// written back; L0 loaded (W) with z0 (a); it has no backward
	// successor. Per batch: 3 W loads (240 B), 2 saved loads (64 B), 3
	// write-backs (240 B), 1 offload (32 B), 1 stage (32 B), 2 drops
	// (160 B).
	{0, true, 3, [2]tally{
		{loadWeights: {8, 640}, loadSaved: {6, 224}, writeBack: {7, 560}, offload: {3, 128}, stage: {3, 96}, drop: {4, 320}},
		{loadWeights: {6, 480}, loadSaved: {4, 128}, writeBack: {6, 480}, offload: {2, 64}, stage: {2, 64}, drop: {4, 320}},
	}},
	// Eval, window 1: nothing is saved. b1 loads L0, L1, L2 and writes
	// back L0 and L1 at the misses; every later batch misses on L0 too,
	// writing back L2 first: 3 loads, 3 write-backs, unchanged weights
	// copied back all the same.
	{0, false, 1, [2]tally{
		{loadWeights: {6, 480}, writeBack: {5, 400}},
		{loadWeights: {6, 480}, writeBack: {6, 480}},
	}},
	// Eval, window 3: b1 as window 1 (3 loads, 2 write-backs), learning
	// L0→L1→L2. b2 misses on L0: L2 written back, L0 loaded with its
	// successors L1 and L2 (3 loads, 1 write-back), and learns L2→L0
	// (eval never resets the chain). The model now fits the window:
	// epoch 2 copies nothing.
	{0, false, 3, [2]tally{
		{loadWeights: {6, 480}, writeBack: {3, 240}},
		{},
	}},
}

func TestDictCacheScheduleLinear(t *testing.T) {
	for _, tc := range linearCases {
		checkSchedule(t, tc)
	}
}

// Resnet: two nested levels, as models.ResnetConfig.Build (blocks listed
// a1, b1, a2, b2; level 2 is x + b2(level 1(a2(x))), level 1 is
// y + b1(a1(y))), each block one Linear + LeakyReLU. Saved: a2 keeps
// z_a2; a1 keeps y = a2's output (its Linear reads it first) and z_a1; b1
// keeps a1's output and z_b1; b2 keeps s1 = level 1's sum, z_b2 and the
// model's output s2 (the loss's gradient reads it). The inner residual
// sum reads y, which travels with a1: the forward pass needs a2 a1 b1 a1
// b2, the backward b2 b1 a1 a2. Staged when their block is out: y (at
// a2), a1's output (at a1), s1 (at the inner sum).
var resnetCases = []scheduleCase{
	// Train, window 1. b1: load a2 (W); y staged (a). Miss a1: a2 back
	// (W, z_a2 offloaded a); a1 in (W, y a). a1's output staged (a). Miss
	// b1: a1 back (W, 2a off); b1 in (W, a). Miss a1 (the sum): b1 back
	// (W, 2a off); a1 in (W, 2a: y and z_a1 both live). s1 staged (a).
	// Miss b2: a1 back (W, 2a off); b2 in (W, s1 a). Backward: b2 hits;
	// miss b1: b2 back (W, 3a dropped), b1 in (W, 2a); miss a1: b1 back
	// (W, 2a dropped), a1 in (W, 2a); miss a2: a1 back (W, 2a dropped),
	// a2 in (W, a). b1: 8 W loads, 7 saved loads of 10a = 320 B, 7
	// write-backs, 4 offloads of 7a = 224 B, 3 stages, 3 drops of 7a. b2
	// the same less the first load (a2 stays from the backward pass).
	{1, true, 1, [2]tally{
		{loadWeights: {15, 1200}, loadSaved: {14, 640}, writeBack: {14, 1120}, offload: {8, 448}, stage: {6, 192}, drop: {6, 448}},
		{loadWeights: {14, 1120}, loadSaved: {14, 640}, writeBack: {14, 1120}, offload: {8, 448}, stage: {6, 192}, drop: {6, 448}},
	}},
	// Train, window 3. b1 learns as it goes: at the second miss on a1
	// (the sum) it has learned a1→b1 two steps before, so it loads a1
	// (W, 2a) and b1 (W, its 2a live); b2's miss then writes back a1 and
	// b1 (2 W, 4a offloaded) and loads b2 (W, a). Otherwise as window 1:
	// b1 has 9 W loads, 8 saved loads of 12a, 8 write-backs, 5 offloads
	// of 9a, 3 stages, 3 drops of 7a. Learned: forward a2→a1, a1→b2 (the
	// last time the walk left a1), b1→a1, b2 none; backward b2→b1→a1→a2.
	// Each later batch: a2 hits, y staged (a); miss a1: a2 back (W, a
	// off); a1 (W, y a) and its successor b2 (W) in; a1's output staged
	// (a, b1 is out); miss b1: a1 (W, 2a off) and b2 (W, nothing on it)
	// back; b1 (W, a) with b1→a1 (W, 2a) and a1→b2 (W) in. Then
	// everything hits until a2: b1, a1, b2 back (3 W, 2a + 2a + 3a
	// dropped), a2 in (W, a). Per batch: 6 W loads, 4 saved loads of 5a,
	// 6 write-backs, 2 offloads of 3a, 2 stages, 3 drops of 7a.
	{1, true, 3, [2]tally{
		{loadWeights: {15, 1200}, loadSaved: {12, 544}, writeBack: {14, 1120}, offload: {7, 384}, stage: {5, 160}, drop: {6, 448}},
		{loadWeights: {12, 960}, loadSaved: {8, 320}, writeBack: {12, 960}, offload: {4, 192}, stage: {4, 128}, drop: {6, 448}},
	}},
	// Eval, window 1: nothing saved, so the sums need no block: a2 a1 b1
	// b2. b1: 4 loads, 3 write-backs; later batches 4 and 4.
	{1, false, 1, [2]tally{
		{loadWeights: {8, 640}, writeBack: {7, 560}},
		{loadWeights: {8, 640}, writeBack: {8, 640}},
	}},
	// Eval, window 3, 4 blocks: b1 as window 1 (4, 3), learning
	// a2→a1→b1→b2. b2: miss a2: b2 back, a2 a1 b1 in (learns b2→a2);
	// miss b2: 3 back, b2 a2 a1 in: 6 loads, 4 write-backs. Epoch 2: b3
	// hits a2, a1, misses b1: 3 back, b1 b2 a2 in; b4 hits a2, misses a1:
	// 3 back, a1 b1 b2 in: 6 and 6.
	{1, false, 3, [2]tally{
		{loadWeights: {10, 800}, writeBack: {7, 560}},
		{loadWeights: {6, 480}, writeBack: {6, 480}},
	}},
}

func TestDictCacheScheduleResnet(t *testing.T) {
	for _, tc := range resnetCases {
		checkSchedule(t, tc)
	}
}

// Attention: blocks listed head, embed, layer1, layer2 as
// models.AttentionConfig.Build, the decoder layers one Linear + LeakyReLU
// each; head is Linear(4→6), 120 B (H), embed a 6×4 table, 96 B (E),
// a layer W. Saved: layer1 keeps the embedding e and z1; layer2 h1 and
// z2; head h2 and the logits (48 B), 80 B together; embed nothing (the
// ids are an input). Forward needs embed L1 L2 head, backward head L2 L1
// and then embed for its update. The update's load is not observed as a
// step's need, so the learned backward order stops at L1, and the next
// forward pass, which does not reset the chain, learns L1→embed. Staged
// when their block is out: e, h1, h2.
var attentionCases = []scheduleCase{
	// Train, window 1. b1: embed in (E); e staged; miss L1: embed back
	// (E), L1 in (W, e a); h1 staged; miss L2: L1 back (W, 2a off), L2
	// in (W, a); h2 staged; miss head: L2 back (W, 2a off), head in (H,
	// h2 a). Backward: head hits; miss L2: head back (H, 80 B dropped),
	// L2 in (W, 2a); miss L1: L2 back (W, 2a dropped), L1 in (W, 2a);
	// embed's update: L1 back (W, 2a dropped), embed in (E). b1: 7 W
	// loads (2E + 4W + H = 632 B), 5 saved loads (7a), 6 write-backs
	// (E + 4W + H = 536 B), 2 offloads (4a), 3 stages, 3 drops (80 + 64
	// + 64 B). Later batches: embed hits, 6 loads (536 B).
	{2, true, 1, [2]tally{
		{loadWeights: {13, 1168}, loadSaved: {10, 448}, writeBack: {12, 1072}, offload: {4, 256}, stage: {6, 192}, drop: {6, 416}},
		{loadWeights: {12, 1072}, loadSaved: {10, 448}, writeBack: {12, 1072}, offload: {4, 256}, stage: {6, 192}, drop: {6, 416}},
	}},
	// Train, window 3. b1 repeats no block in a pass: as window 1. It
	// learns embed→L1→L2→head forward and head→L2→L1 backward; b2's first
	// step then learns L1→embed. Each later batch: embed hits, e staged;
	// miss L1: embed back (E); L1 (W, e a) and its successor embed (E)
	// in (embed→L1 closes the chain); h1 staged (L2 is out); miss L2: L1
	// (W, 2a off) and embed (E) back; L2 (W, a) and head (H) in; h2
	// computed on the device. Everything hits to L1: L2 (W, 2a dropped)
	// and head (H, 80 B dropped) back, L1 in (W, 2a), no backward
	// successor; embed's update: L1 back (W, 2a dropped), embed in (E).
	// Per batch: 6 W loads (3W + 2E + H = 552 B), 3 saved loads (4a), 6
	// write-backs (552 B), 1 offload (2a), 2 stages, 3 drops (208 B).
	{2, true, 3, [2]tally{
		{loadWeights: {13, 1184}, loadSaved: {8, 352}, writeBack: {12, 1088}, offload: {3, 192}, stage: {5, 160}, drop: {6, 416}},
		{loadWeights: {12, 1104}, loadSaved: {6, 256}, writeBack: {12, 1104}, offload: {2, 128}, stage: {4, 128}, drop: {6, 416}},
	}},
	// Eval, window 1: b1 loads embed L1 L2 head (376 B), writes back
	// embed L1 L2 (256 B); later batches write back head first too.
	{2, false, 1, [2]tally{
		{loadWeights: {8, 752}, writeBack: {7, 632}},
		{loadWeights: {8, 752}, writeBack: {8, 752}},
	}},
	// Eval, window 3, 4 blocks: b1 as window 1. b2: miss embed: head back
	// (H), embed L1 L2 in (256 B), learning head→embed; miss head: embed
	// L1 L2 back (256 B), head embed L1 in (296 B). Epoch 2: b3 misses
	// L2: head embed L1 back (296 B), L2 head embed in (296 B); b4 misses
	// L1: L2 head embed back (296 B), L1 L2 head in (280 B).
	{2, false, 3, [2]tally{
		{loadWeights: {10, 928}, writeBack: {7, 632}},
		{loadWeights: {6, 576}, writeBack: {6, 592}},
	}},
}

func TestDictCacheScheduleAttention(t *testing.T) {
	for _, tc := range attentionCases {
		checkSchedule(t, tc)
	}
}
