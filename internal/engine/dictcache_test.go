package engine

import (
	"fmt"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

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
	*cache
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
	r.log = append(r.log, fmt.Sprintf("%s %s %d", kindNames[k], r.plan.spec.Blocks[b].Name, bytes))
}

func (r *copyRecorder) copyIn(b, _ int) error {
	var weights, saved int64
	r.onDevice[b] = nil
	err := r.moves(b, true, func(_, n int, m member) error {
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

func (r *copyRecorder) copyOut(b int, writeParams bool) error {
	var weights, saved, dropped int64
	err := r.moves(b, writeParams, func(_, n int, m member) error {
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
			dropped += 4 * int64(r.plan.values[v].elems)
		}
	}
	delete(r.onDevice, b)
	r.add(writeBack, b, weights)
	r.add(offload, b, saved)
	r.add(drop, b, dropped)
	return err
}

func (r *copyRecorder) execute(si int, staged bool) error {
	out := r.plan.steps[si].out
	v := r.plan.values[out]
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
func recordEpochs(t *testing.T, p *Schedule, window, epochs, batches int) ([]tally, []string) {
	t.Helper()
	pl := Placement{Paged: true, Policy: PolicyWindow, Window: window}
	r := &copyRecorder{t: t, onDevice: map[int][]int{}}
	r.cache = newCache(p, pl, p.layouts(pl.momentsInArea()), min(max(window, p.MinWindow()), p.Blocks()), r)
	var out []tally
	for range epochs {
		r.n = tally{}
		for range batches {
			if err := p.walk(r.cache, r); err != nil {
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
func describe(p *Schedule) string {
	var sb strings.Builder
	for b, blk := range p.spec.Blocks {
		fmt.Fprintf(&sb, "block %d %s: saved", b, blk.Name)
		for _, v := range p.saved[b] {
			fmt.Fprintf(&sb, " %s(%d, steps %d-%d)", p.values[v].node.Name(), p.values[v].elems, p.values[v].produced, p.values[v].lastUse)
		}
		sb.WriteString("\n")
	}
	for si, s := range p.steps {
		fmt.Fprintf(&sb, "step %d backward=%v %s needs %v\n", si, s.backward, p.values[s.out].node.Name(), p.needs[si])
	}
	return sb.String()
}

// handModel is a hand-sized graph with its blocks, compiled for training
// or evaluation.
type handModel struct {
	name   string
	build  func() (inputs []*gorgonia.Node, blocks []Block, loss *gorgonia.Node)
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
}

// compileHand compiles a hand model for training or evaluation.
func compileHand(t *testing.T, m handModel, train bool) *Schedule {
	t.Helper()
	inputs, blocks, loss := m.build()
	p, err := Compile(Spec{Inputs: inputs, Blocks: blocks, Output: loss, Train: train, Optimizer: hostmath.DefaultAdam, ClipNorm: 1})
	if err != nil {
		t.Fatal(err)
	}
	return p
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
		p := compileHand(t, m, tc.train)
		got, log := recordEpochs(t, p, tc.window, 2, 2)
		for e := range got {
			if got[e] != tc.epochs[e] {
				t.Errorf("epoch %d:\n got  %v\n want %v", e+1, got[e], tc.epochs[e])
			}
		}
		if t.Failed() {
			t.Logf("structure:\n%s\ncopies, batch by batch:\n%s", describe(p), strings.Join(log, "\n"))
		}
		c, err := p.Copies(Placement{Paged: true, Policy: PolicyWindow, Window: tc.window}, tc.window, 2, []*gorgonia.Node{})
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
