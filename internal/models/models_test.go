package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/engine"
	"gpuz/internal/hostmath"
	"gpuz/internal/ops"
)

// The attention workload.

func TestAttentionData(t *testing.T) {
	c, _ := AttentionPreset(ScaleSmall)
	d := c.Data(3)
	if d.Samples != c.Samples || d.RowLen != c.SeqLen || len(d.Values) != c.Samples*c.SeqLen {
		t.Fatalf("data is %d × %d (%d values), want %d × %d", d.Samples, d.RowLen, len(d.Values), c.Samples, c.SeqLen)
	}
	seen := map[float32]bool{}
	for _, v := range d.Values {
		if v != float32(int(v)) || v < 0 || int(v) >= c.Vocab {
			t.Fatalf("id %v is not an integer in [0, %d)", v, c.Vocab)
		}
		seen[v] = true
	}
	// 256 uniform draws from 64 ids leave, on average, 1.1 ids unseen.
	if len(seen) < c.Vocab-10 {
		t.Errorf("only %d of %d ids drawn", len(seen), c.Vocab)
	}
	if again := c.Data(3); fmt.Sprint(again.Values) != fmt.Sprint(d.Values) {
		t.Error("the same seed gave different data")
	}
}

// TestSinusoidalPositions compares the table with values printed by the
// peer's sinusoidal_encoding(6, 8) under torch 1.13 (float32): they must
// agree to 1 ulp, as torch's float32 exp, sin and cos (SLEEF, 1 ulp) may
// round differently from correctly rounded ones. (At full scale, 512 × 512,
// 25 of torch's 256 frequencies are 1 ulp off the correctly rounded exp;
// times positions up to 511 that moves the largest arguments by an ulp of
// theirs, 3e-5, and the table by up to 1.5e-5.)
func TestSinusoidalPositions(t *testing.T) {
	want := map[[2]int]float32{
		{0, 0}: 0, {0, 1}: 1, {0, 6}: 0, {0, 7}: 1,
		{1, 0}: 0.84147096, {1, 1}: 0.5403023, {1, 2}: 0.099833414, {1, 3}: 0.9950042,
		{5, 0}: -0.9589243, {5, 1}: 0.2836622, {5, 4}: 0.04997917, {5, 6}: 0.0049999794, {5, 7}: 0.9999875,
	}
	pe := SinusoidalPositions(6, 8)
	for at, w := range want {
		got := pe[at[0]*8+at[1]]
		if ulps := math.Abs(float64(math.Float32bits(got)) - float64(math.Float32bits(w))); ulps > 1 {
			t.Errorf("positions[%d][%d] = %v, want %v", at[0], at[1], got, w)
		}
	}
}

// TestAttentionModel checks the blocks, in the peer's order, the
// parameters' shapes, and that each starts as PyTorch initialises it.
func TestAttentionModel(t *testing.T) {
	c := AttentionConfig{Vocab: 50, DModel: 16, Heads: 2, Layers: 3, SeqLen: 8, Feed: Feed{Samples: 4, Batch: 2, Epochs: 2}}
	m, err := c.Build()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range m.Blocks {
		names = append(names, b.Name)
	}
	if got := strings.Join(names, " "); got != "head embed layer1 layer2 layer3" {
		t.Errorf("blocks %q", got)
	}
	d := c.DModel
	// PyTorch: 5d² + 9d per layer (in_proj 3d² + 3d, out_proj d² + d, ff
	// d² + d, two LayerNorms 4d), Embedding vocab·d, head vocab·d + vocab.
	if want := int64(c.Layers*(5*d*d+9*d) + 2*c.Vocab*d + c.Vocab); m.ParamCount() != want {
		t.Errorf("%d parameters, want %d", m.ParamCount(), want)
	}
	values := map[string][]float32{}
	if err := m.InitParams(1, func(n *gorgonia.Node, v []float32) error {
		values[n.Name()] = append([]float32(nil), v...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Each check: the values' bound (all within ±bound) or, for bound 0,
	// constant equal to mean; for N(0, 1), the mean and spread.
	xavier := math.Sqrt(6 / float64(d+3*d))
	linear := 1 / math.Sqrt(float64(d))
	for _, tc := range []struct {
		name  string
		shape []int
		bound float64 // U(±bound); 0: every value equals value
		value float32
	}{
		{"head.weight", []int{c.Vocab, d}, linear, 0},
		{"head.bias", []int{c.Vocab}, linear, 0},
		{"layer2.attn.in_proj_weight", []int{3 * d, d}, xavier, 0},
		{"layer2.attn.in_proj_bias", []int{3 * d}, 0, 0},
		{"layer2.attn.out_proj.weight", []int{d, d}, linear, 0},
		{"layer2.attn.out_proj.bias", []int{d}, 0, 0},
		{"layer2.norm1.weight", []int{d}, 0, 1},
		{"layer2.norm1.bias", []int{d}, 0, 0},
		{"layer2.ff.weight", []int{d, d}, linear, 0},
		{"layer2.ff.bias", []int{d}, linear, 0},
		{"layer2.norm2.weight", []int{d}, 0, 1},
		{"layer2.norm2.bias", []int{d}, 0, 0},
	} {
		v, ok := values[tc.name]
		if !ok {
			t.Errorf("no parameter %s", tc.name)
			continue
		}
		if n := tensor.Shape(tc.shape).TotalSize(); len(v) != n {
			t.Errorf("%s has %d values, want %d", tc.name, len(v), n)
			continue
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, x := range v {
			lo, hi = min(lo, float64(x)), max(hi, float64(x))
		}
		if tc.bound == 0 {
			if lo != float64(tc.value) || hi != float64(tc.value) {
				t.Errorf("%s spans [%g, %g], want every value %g", tc.name, lo, hi, tc.value)
			}
			continue
		}
		// The extremes of ≥ 16 uniform draws lie within the outer 30% of
		// the range except with probability 0.7¹⁶ ≈ 0.3%; the seed is fixed.
		if lo < -tc.bound || hi > tc.bound || lo > -0.7*tc.bound || hi < 0.7*tc.bound {
			t.Errorf("%s spans [%g, %g], want U(±%g)", tc.name, lo, hi, tc.bound)
		}
	}
	emb := values["embed.weight"]
	mean, sq := 0.0, 0.0
	for _, x := range emb {
		mean += float64(x) / float64(len(emb))
		sq += float64(x) * float64(x) / float64(len(emb))
	}
	// 800 draws of N(0, 1): the mean's standard error is 0.035, the
	// variance's 0.05; five of each bound the test.
	if math.Abs(mean) > 0.18 || math.Abs(sq-mean*mean-1) > 0.25 {
		t.Errorf("embed.weight has mean %.3f and variance %.3f, want N(0, 1)", mean, sq-mean*mean)
	}
}

// The resnet workload.

// TestResnetStructure checks the block list and parameter shapes: two
// ConvModels per level in the peer's order, four convolutions each.
func TestResnetStructure(t *testing.T) {
	c := ResnetConfig{Levels: 3, Channels: 2, MidChannels: 5, ImageSize: 6, Kernel: 3, Feed: Feed{Samples: 2, Batch: 1, Epochs: 2}}
	m, err := c.Build()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Blocks) != 6 {
		t.Fatalf("%d blocks, want 6", len(m.Blocks))
	}
	for i, b := range m.Blocks {
		if want := fmt.Sprintf("level%d.%s", i/2+1, []string{"a", "b"}[i%2]); b.Name != want {
			t.Errorf("block %d is %s, want %s", i, b.Name, want)
		}
		if len(b.Params) != 8 {
			t.Fatalf("block %s has %d parameters, want 8", b.Name, len(b.Params))
		}
		for j, want := range []tensor.Shape{{5, 2, 3, 3}, {5}, {2, 5, 3, 3}, {2}, {5, 2, 3, 3}, {5}, {2, 5, 3, 3}, {2}} {
			if got := b.Params[j].Shape(); !got.Eq(want) {
				t.Errorf("block %s parameter %d has shape %v, want %v", b.Name, j, got, want)
			}
		}
	}
	// 6 blocks × (2·(5·2·9 + 5) + 2·(2·5·9 + 2)) parameters.
	if got, want := m.ParamCount(), int64(6*(2*(90+5)+2*(90+2))); got != want {
		t.Errorf("%d parameters, want %d", got, want)
	}
}

// TestInitParamsInParallel checks that drawing the parameters in
// parallel batches changes nothing: every parameter, in the model's order,
// holds the values of its own stream drawn alone, whatever the batch size.
func TestInitParamsInParallel(t *testing.T) {
	c := LinearConfig{Blocks: 3, LayersPerBlock: 2, Dims: 5, Feed: Feed{Samples: 2, Batch: 1, Epochs: 2}}
	m, err := c.Build()
	if err != nil {
		t.Fatal(err)
	}
	var want [][]float32
	var names []string
	index := uint64(0)
	for _, b := range m.Blocks {
		for _, p := range b.Params {
			v := make([]float32, p.Shape().TotalSize())
			m.init[p](rand.New(rand.NewPCG(7, index)), v)
			index++
			want, names = append(want, v), append(names, p.Name())
		}
	}
	for _, batch := range []int{1, 5, 31, 64, initBatch(25)} {
		i := 0
		err := m.initParams(7, batch, func(p *gorgonia.Node, v []float32) error {
			if i >= len(names) || p.Name() != names[i] || !slices.Equal(v, want[i]) {
				return fmt.Errorf("set %d: %s, not %s with its own stream's values", i, p.Name(), names[min(i, len(names)-1)])
			}
			i++
			return nil
		})
		if err != nil || i != len(names) {
			t.Errorf("batches of %d values: %v (%d of %d parameters set)", batch, err, i, len(names))
		}
	}
}

// TestResnetInit checks PyTorch's Conv2d initialisation: every weight and
// bias within ±1/√(in·k²), and spread over that range.
func TestResnetInit(t *testing.T) {
	c := ResnetConfig{Levels: 1, Channels: 3, MidChannels: 7, ImageSize: 4, Kernel: 5, Feed: Feed{Samples: 1, Batch: 1, Epochs: 2}}
	m, err := c.Build()
	if err != nil {
		t.Fatal(err)
	}
	err = m.InitParams(1, func(p *gorgonia.Node, v []float32) error {
		in := 3
		if strings.Contains(p.Name(), "conv1") || strings.Contains(p.Name(), "conv3") {
			in = 7
		}
		bound := 1 / math.Sqrt(float64(in*25))
		lo, hi := 0.0, 0.0
		for _, x := range v {
			lo, hi = min(lo, float64(x)), max(hi, float64(x))
		}
		if lo < -bound || hi > bound {
			t.Errorf("%s: values in [%g, %g], want within ±%g", p.Name(), lo, hi, bound)
		}
		// With at least 7 values, the range covers more than a third of
		// the interval but for a chance below 1e-3.
		if len(v) >= 7 && hi-lo < 2*bound/3 {
			t.Errorf("%s: values in [%g, %g] cover little of ±%g", p.Name(), lo, hi, bound)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestResnetNesting checks the nested residual wiring on a two-level
// model: the engine's loss against a target and its output mean must equal
// those of x + b₂(level₁(a₂(x))), level₁(z) = z + b₁(a₁(z)), evaluated by
// hand in float64 from the same parameters. A differently nested model
// (x + b₂(a₂(level₁(x)))) must not match, so that the check can fail.
func TestResnetNesting(t *testing.T) {
	c := ResnetConfig{Levels: 2, Channels: 2, MidChannels: 3, ImageSize: 6, Kernel: 3, Feed: Feed{Samples: 1, Batch: 1, Epochs: 2}}
	data := c.Data(3).Values
	target := make([]float32, len(data))
	for i := range target {
		target[i] = float32(i%7) / 7
	}
	params := map[string][]float64{}
	var engineLoss, engineMean float32
	for _, train := range []bool{true, false} {
		m, err := c.Build()
		if err != nil {
			t.Fatal(err)
		}
		prog := loadOnHost(t, engine.Spec{Inputs: []*gorgonia.Node{m.Input, m.Target}, Blocks: m.Blocks, Output: m.Objective(train),
			Train: train, Optimizer: hostmath.DefaultAdam(), ClipNorm: 1})
		// Weights three times PyTorch's defaults, so that every block
		// changes the output by more than rounding and the nesting shows.
		err = m.InitParams(5, func(p *gorgonia.Node, v []float32) error {
			for i := range v {
				v[i] *= 3
			}
			params[p.Name()] = toFloat64(v)
			return prog.SetInput(p, v)
		})
		if err != nil {
			t.Fatal(err)
		}
		prog.SetInput(m.Input, data)
		prog.SetInput(m.Target, target)
		v, err := prog.Run()
		if err != nil {
			t.Fatal(err)
		}
		if train {
			engineLoss = v
		} else {
			engineMean = v
		}
	}

	s := hostmath.ConvShape{Batch: 1, InH: c.ImageSize, InW: c.ImageSize, OutH: c.ImageSize, OutW: c.ImageSize, Kernel: c.Kernel, Pad: c.Kernel / 2}
	conv := func(x []float64, name string, in, out int) []float64 {
		y := make([]float64, out*c.ImageSize*c.ImageSize)
		s.InC, s.OutC = in, out
		hostmath.Conv2d(y, x, params[name+".weight"], params[name+".bias"], s)
		return y
	}
	block := func(name string, x []float64) []float64 {
		h := x
		for half := range 2 {
			h = conv(h, fmt.Sprintf("%s.conv%d", name, 2*half), c.Channels, c.MidChannels)
			h = conv(h, fmt.Sprintf("%s.conv%d", name, 2*half+1), c.MidChannels, c.Channels)
			for i, v := range h {
				if v <= 0 {
					h[i] = ops.DefaultLeakySlope * v
				}
			}
		}
		return h
	}
	add := func(a, b []float64) []float64 {
		out := make([]float64, len(a))
		for i := range a {
			out[i] = a[i] + b[i]
		}
		return out
	}
	x := toFloat64(data)
	level1 := func(z []float64) []float64 { return add(z, block("level1.b", block("level1.a", z))) }
	want := add(x, block("level2.b", level1(block("level2.a", x))))
	wrong := add(x, block("level2.b", block("level2.a", level1(x))))

	stats := func(out []float64) (loss, mean float64) {
		for i, v := range out {
			d := v - float64(target[i])
			loss += d * d
			mean += v
		}
		return loss / float64(len(out)), mean / float64(len(out))
	}
	// float32 against float64 over a few hundred terms: 1e-5 relative.
	wantLoss, wantMean := stats(want)
	if e := math.Abs(float64(engineLoss)-wantLoss) / wantLoss; e > 1e-5 {
		t.Errorf("loss %g, by hand %g (relative error %.2g)", engineLoss, wantLoss, e)
	}
	if e := math.Abs(float64(engineMean)-wantMean) / math.Abs(wantMean); e > 1e-5 {
		t.Errorf("output mean %g, by hand %g (relative error %.2g)", engineMean, wantMean, e)
	}
	wrongLoss, _ := stats(wrong)
	t.Logf("loss %g by hand, %g by the engine, %g when nested differently", wantLoss, engineLoss, wrongLoss)
	if math.Abs(wrongLoss-wantLoss)/wantLoss < 1e-2 {
		t.Errorf("the check cannot tell the nesting apart: %g and %g", wantLoss, wrongLoss)
	}
}

func toFloat64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// Training: the loss of each workload must fall.

// TestAttentionLossFalls trains the small preset's model on one batch for
// a few steps: the cross-entropy must fall, and start near ln(vocab), as
// an untrained model's near-uniform predictions give.
func TestAttentionLossFalls(t *testing.T) {
	c, _ := AttentionPreset(ScaleSmall)
	losses := trainFirstBatch(t, &c, 1e-3, 8)
	if first := losses[0]; math.Abs(first-math.Log(float64(c.Vocab))) > 1 {
		t.Errorf("first loss %.3f, want about ln(%d) = %.3f", first, c.Vocab, math.Log(float64(c.Vocab)))
	}
	for i := 1; i < len(losses); i++ {
		if !(losses[i] < losses[i-1]) {
			t.Errorf("loss did not fall at step %d: %.4f", i, losses)
		}
	}
}

// TestResnetLossFalls trains the small preset on one batch for a few steps
// with the reference optimiser: the loss must fall step after step.
func TestResnetLossFalls(t *testing.T) {
	c, err := ResnetPreset(ScaleSmall)
	if err != nil {
		t.Fatal(err)
	}
	losses := trainFirstBatch(t, &c, hostmath.DefaultLR, 5)
	for i := 1; i < len(losses); i++ {
		if !(losses[i] < losses[i-1]) {
			t.Fatalf("losses %v do not fall", losses)
		}
	}
}

// The checks of the models' blocks against the same blocks built from
// gorgonia's built-in ops and run on its TapeMachine in float64.

// relErr is ‖got − want‖ / ‖want‖.
func relErr(got []float32, want []float64) float64 {
	var d, n float64
	for i := range want {
		d += (float64(got[i]) - want[i]) * (float64(got[i]) - want[i])
		n += want[i] * want[i]
	}
	return math.Sqrt(d / max(n, 1e-300))
}

// TestConvModelMatchesTapeMachine trains one ConvModel block for a step
// with the engine and computes the same loss and gradients with gorgonia's
// TapeMachine on built-in ops in float64: gorgonia.Conv2d (im2col, no cuDNN
// needed), a bias fed already shaped [1, M, 1, 1] and broadcast (no
// Reshape of ours, which gorgonia's view-sharing Reshape could corrupt),
// LeakyRelu and Mean(Square(Sub)). The loss and every gradient must agree
// within 1e-5 relative: the engine runs in float32, whose rounding of sums
// of a few hundred terms is about 1e-6.
func TestConvModelMatchesTapeMachine(t *testing.T) {
	c := ResnetConfig{Levels: 1, Channels: 3, MidChannels: 4, ImageSize: 7, Kernel: 3, Feed: Feed{Samples: 2, Batch: 2, Epochs: 2}}
	const height, width = 7, 9 // non-square images
	m := &Model{Graph: gorgonia.NewGraph(), init: map[*gorgonia.Node]func(*rand.Rand, []float32){}}
	shape := []int{c.Batch, c.Channels, height, width}
	x, target := m.tensor("x", shape...), m.tensor("target", shape...)
	cm := c.newConvModel(m, "block")
	out, err := c.apply(cm, x)
	if err != nil {
		t.Fatal(err)
	}
	loss := gorgonia.Must(ops.Apply(ops.MSE{Dims: 4}, out, target))
	prog := loadOnHost(t, engine.Spec{Inputs: []*gorgonia.Node{x, target}, Blocks: []engine.Block{cm.block},
		Output: loss, Train: true, Optimizer: hostmath.DefaultAdam(), ClipNorm: 1, RetainGradients: true})

	rng := rand.New(rand.NewPCG(9, 9))
	random := func(n int, scale float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32((rng.Float64()*2 - 1) * scale)
		}
		return v
	}
	xData := random(c.Batch*c.Channels*height*width, 1)
	targetData := random(len(xData), 1)
	params := map[*gorgonia.Node][]float32{}
	for _, p := range cm.block.Params {
		// Weights larger than PyTorch's defaults, so that the LeakyReLU's
		// negative side and every layer matter to the gradients.
		params[p] = random(p.Shape().TotalSize(), 0.5)
		if err := prog.SetInput(p, params[p]); err != nil {
			t.Fatal(err)
		}
	}
	prog.SetInput(x, xData)
	prog.SetInput(target, targetData)
	gotLoss, err := prog.Run()
	if err != nil {
		t.Fatal(err)
	}

	// The oracle.
	og := gorgonia.NewGraph()
	input := func(name string, data []float32, shape ...int) *gorgonia.Node {
		v := make([]float64, len(data))
		for i, d := range data {
			v[i] = float64(d)
		}
		return gorgonia.NewTensor(og, tensor.Float64, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name),
			gorgonia.WithValue(tensor.New(tensor.WithBacking(v), tensor.WithShape(shape...))))
	}
	h := input("x", xData, shape...)
	var oracleParams gorgonia.Nodes
	for i := 0; i < len(cm.block.Params); i += 2 {
		w, b := cm.block.Params[i], cm.block.Params[i+1]
		ws := w.Shape()
		ow := input(w.Name(), params[w], ws...)
		ob := input(b.Name(), params[b], 1, ws[0], 1, 1)
		oracleParams = append(oracleParams, ow, ob)
		h = gorgonia.Must(gorgonia.Conv2d(h, ow, tensor.Shape{c.Kernel, c.Kernel}, []int{c.Kernel / 2, c.Kernel / 2}, []int{1, 1}, nil))
		h = gorgonia.Must(gorgonia.BroadcastAdd(h, ob, nil, []byte{0, 2, 3}))
		if i%4 == 2 {
			h = gorgonia.Must(gorgonia.LeakyRelu(h, ops.DefaultLeakySlope))
		}
	}
	oloss := gorgonia.Must(gorgonia.Mean(gorgonia.Must(gorgonia.Square(gorgonia.Must(gorgonia.Sub(h, input("target", targetData, shape...)))))))
	grads, err := gorgonia.Grad(oloss, oracleParams...)
	if err != nil {
		t.Fatalf("oracle gradients: %v", err)
	}
	var wantLoss gorgonia.Value
	gorgonia.Read(oloss, &wantLoss)
	wantGrads := make([]gorgonia.Value, len(grads))
	for i, gn := range grads {
		gorgonia.Read(gn, &wantGrads[i])
	}
	vm := gorgonia.NewTapeMachine(og)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatalf("TapeMachine: %v", err)
	}

	if e := math.Abs(float64(gotLoss)-wantLoss.Data().(float64)) / wantLoss.Data().(float64); e > 1e-5 {
		t.Errorf("loss %g, oracle %g (relative error %.2g)", gotLoss, wantLoss.Data().(float64), e)
	}
	for i, p := range cm.block.Params {
		got, err := prog.Gradient(p)
		if err != nil {
			t.Fatal(err)
		}
		if e := relErr(got, wantGrads[i].Data().([]float64)); e > 1e-5 {
			t.Errorf("%s: gradient differs from the oracle's by %.2g relative", p.Name(), e)
		}
	}
}

// layerParams names one decoder layer's parameters as decoderLayer does,
// in its order, with their shapes for width d.
func layerParams(d int) []struct {
	name  string
	shape []int
} {
	return []struct {
		name  string
		shape []int
	}{
		{"attn.in_proj_weight", []int{3 * d, d}}, {"attn.in_proj_bias", []int{3 * d}},
		{"attn.out_proj.weight", []int{d, d}}, {"attn.out_proj.bias", []int{d}},
		{"norm1.weight", []int{d}}, {"norm1.bias", []int{d}},
		{"ff.weight", []int{d, d}}, {"ff.bias", []int{d}},
		{"norm2.weight", []int{d}}, {"norm2.bias", []int{d}},
	}
}

// layerOracle runs one decoder layer followed by an MSE loss, built from
// gorgonia's built-in ops, on the TapeMachine in float64, and returns the
// loss and its gradients with respect to x and every parameter (named as
// in layerParams, weights [out, in]).
//
// It avoids the built-ins that misbehave (gorgonia-notes.md): no Reshape,
// Slice, Concat or Transpose (views, or results written over their input),
// no InverseSqrt (1/√ is Inverse(Sqrt)), no constants (the mask, ε, the
// scale and the selection matrices are named input nodes), and values are
// read with gorgonia.Read. Sequences and heads are cut out and put back by
// products with 0/1 selection matrices. Weights are fed transposed, and
// the keys are computed already transposed from a second, transposed copy
// of x and of in_proj; the gradients of the two copies are added.
func layerOracle(t *testing.T, c AttentionConfig, x, target []float32, params map[string][]float32) (float64, map[string][]float64) {
	t.Helper()
	g := gorgonia.NewGraph()
	must := func(n *gorgonia.Node, err error) *gorgonia.Node {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// in adds a named float64 input node holding data (row-major, shape).
	in := func(name string, data []float64, shape ...int) *gorgonia.Node {
		if len(shape) == 0 {
			return gorgonia.NewScalar(g, tensor.Float64, gorgonia.WithName(name), gorgonia.WithValue(data[0]))
		}
		v := tensor.New(tensor.WithBacking(data), tensor.WithShape(shape...))
		return gorgonia.NewTensor(g, tensor.Float64, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name), gorgonia.WithValue(v))
	}
	f64 := func(v []float32) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	// transposed returns the rows × cols matrix m transposed.
	transposed := func(m []float64, rows, cols int) []float64 {
		out := make([]float64, len(m))
		for r := range rows {
			for c := range cols {
				out[c*rows+r] = m[r*cols+c]
			}
		}
		return out
	}
	// selection returns a rows × cols 0/1 matrix with ones at (i, at(i)).
	selection := func(rows, cols int, at func(i int) int) []float64 {
		m := make([]float64, rows*cols)
		for i := range rows {
			m[i*cols+at(i)] = 1
		}
		return m
	}
	d, seq, heads := c.DModel, c.SeqLen, c.Heads
	tokens, dh := c.Batch*seq, d/heads

	xs := f64(x)
	inW := f64(params["attn.in_proj_weight"])
	xN, xTN := in("x", xs, tokens, d), in("xT", transposed(xs, tokens, d), d, tokens)
	inWTN, inWN := in("inWT", transposed(inW, 3*d, d), d, 3*d), in("inW", inW, 3*d, d)
	inBN, inBColN := in("inB", f64(params["attn.in_proj_bias"]), 3*d), in("inBcol", f64(params["attn.in_proj_bias"]), 3*d, 1)
	outWTN := in("outWT", transposed(f64(params["attn.out_proj.weight"]), d, d), d, d)
	outBN := in("outB", f64(params["attn.out_proj.bias"]), d)
	ffWTN := in("ffWT", transposed(f64(params["ff.weight"]), d, d), d, d)
	ffBN := in("ffB", f64(params["ff.bias"]), d)
	norm := map[string]*gorgonia.Node{}
	for _, n := range []string{"norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"} {
		norm[n] = in(n, f64(params[n]), d)
	}
	mask := make([]float64, seq*seq)
	for s := range seq {
		for u := s + 1; u < seq; u++ {
			mask[s*seq+u] = -1e9 // exp underflows to exactly 0
		}
	}
	maskN := in("mask", mask, seq, seq)
	scaleN := in("scale", []float64{1 / math.Sqrt(float64(dh))})
	epsN := in("eps", []float64{ops.DefaultLayerNormEps})
	ones := make([]float64, tokens) // inBcol·ones repeats the bias over columns
	for i := range ones {
		ones[i] = 1
	}
	onesN := in("ones", ones, 1, tokens)

	qkv := must(gorgonia.BroadcastAdd(must(gorgonia.Mul(xN, inWTN)), inBN, nil, []byte{0}))
	qkvT := must(gorgonia.Add(must(gorgonia.Mul(inWN, xTN)), must(gorgonia.Mul(inBColN, onesN))))
	var mixed *gorgonia.Node
	for b := range c.Batch {
		rows := selection(seq, tokens, func(i int) int { return b*seq + i })
		rowsN, rowsTN := in(fmt.Sprint("rows", b), rows, seq, tokens), in(fmt.Sprint("rowsT", b), transposed(rows, seq, tokens), tokens, seq)
		qkvB := must(gorgonia.Mul(rowsN, qkv))
		qkvBT := must(gorgonia.Mul(qkvT, rowsTN))
		var merged *gorgonia.Node
		for h := range heads {
			pick := func(part int) []float64 { // [3d, dh]: columns of Q, K or V of head h
				return selection(dh, 3*d, func(j int) int { return part*d + h*dh + j })
			}
			name := fmt.Sprintf("%d.%d", b, h)
			q := must(gorgonia.Mul(qkvB, in("q"+name, transposed(pick(0), dh, 3*d), 3*d, dh)))
			kT := must(gorgonia.Mul(in("kT"+name, pick(1), dh, 3*d), qkvBT))
			v := must(gorgonia.Mul(qkvB, in("v"+name, transposed(pick(2), dh, 3*d), 3*d, dh)))
			scores := must(gorgonia.Add(must(gorgonia.Mul(must(gorgonia.Mul(q, kT)), scaleN)), maskN))
			e := must(gorgonia.Exp(scores))
			p := must(gorgonia.BroadcastHadamardDiv(e, must(gorgonia.Sum(e, 1)), nil, []byte{1}))
			place := selection(dh, d, func(j int) int { return h*dh + j })
			head := must(gorgonia.Mul(must(gorgonia.Mul(p, v)), in("merge"+name, place, dh, d)))
			if merged == nil {
				merged = head
			} else {
				merged = must(gorgonia.Add(merged, head))
			}
		}
		placed := must(gorgonia.Mul(rowsTN, merged))
		if mixed == nil {
			mixed = placed
		} else {
			mixed = must(gorgonia.Add(mixed, placed))
		}
	}
	layerNorm := func(r *gorgonia.Node, prefix string) *gorgonia.Node {
		centred := must(gorgonia.BroadcastSub(r, must(gorgonia.Mean(r, 1)), nil, []byte{1}))
		variance := must(gorgonia.Mean(must(gorgonia.Square(centred)), 1))
		rstd := must(gorgonia.Inverse(must(gorgonia.Sqrt(must(gorgonia.Add(variance, epsN))))))
		xh := must(gorgonia.BroadcastHadamardProd(centred, rstd, nil, []byte{1}))
		scaled := must(gorgonia.BroadcastHadamardProd(xh, norm[prefix+".weight"], nil, []byte{0}))
		return must(gorgonia.BroadcastAdd(scaled, norm[prefix+".bias"], nil, []byte{0}))
	}
	a := must(gorgonia.BroadcastAdd(must(gorgonia.Mul(mixed, outWTN)), outBN, nil, []byte{0}))
	h1 := layerNorm(must(gorgonia.Add(xN, a)), "norm1")
	f := must(gorgonia.BroadcastAdd(must(gorgonia.Mul(h1, ffWTN)), ffBN, nil, []byte{0}))
	h2 := layerNorm(must(gorgonia.Add(h1, f)), "norm2")
	targetN := in("target", f64(target), tokens, d)
	loss := must(gorgonia.Mean(must(gorgonia.Square(must(gorgonia.Sub(h2, targetN))))))

	wrt := gorgonia.Nodes{xN, xTN, inWTN, inWN, inBN, inBColN, outWTN, outBN, ffWTN, ffBN,
		norm["norm1.weight"], norm["norm1.bias"], norm["norm2.weight"], norm["norm2.bias"]}
	grads, err := gorgonia.Grad(loss, wrt...)
	if err != nil {
		t.Fatalf("oracle gradients: %v", err)
	}
	values := make([]gorgonia.Value, len(grads))
	for i, gn := range grads {
		gorgonia.Read(gn, &values[i])
	}
	var lossValue gorgonia.Value
	gorgonia.Read(loss, &lossValue)
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatalf("TapeMachine: %v", err)
	}
	gv := func(i int) []float64 { return values[i].Data().([]float64) }
	sum := func(a, b []float64) []float64 {
		out := make([]float64, len(a))
		for i := range a {
			out[i] = a[i] + b[i]
		}
		return out
	}
	return lossValue.Data().(float64), map[string][]float64{
		"x":                    sum(gv(0), transposed(gv(1), d, tokens)),
		"attn.in_proj_weight":  sum(transposed(gv(2), d, 3*d), gv(3)),
		"attn.in_proj_bias":    sum(gv(4), gv(5)),
		"attn.out_proj.weight": transposed(gv(6), d, d),
		"attn.out_proj.bias":   gv(7),
		"ff.weight":            transposed(gv(8), d, d),
		"ff.bias":              gv(9),
		"norm1.weight":         gv(10),
		"norm1.bias":           gv(11),
		"norm2.weight":         gv(12),
		"norm2.bias":           gv(13),
	}
}

// TestDecoderLayerMatchesTapeMachine builds one decoder layer from project
// ops, followed by an MSE loss, runs it on the engine, and compares the
// loss and the gradients of the input and of every parameter with the same
// layer built from gorgonia's built-in ops (layerOracle). Every parameter
// is random, biases and LayerNorm weights included, so that no gradient
// path is hidden behind a zero. Tolerance: the engine runs in float32, the
// oracle in float64; the relative error ‖got − want‖/‖want‖ of float32
// arithmetic through the layer measures about 2e-7, and 1e-5 leaves room
// without hiding a wrong formula, which shows as an error of order 1.
func TestDecoderLayerMatchesTapeMachine(t *testing.T) {
	// Two sequences of 5 tokens, two heads of 4.
	c := AttentionConfig{Vocab: 7, DModel: 8, Heads: 2, Layers: 1, SeqLen: 5, Feed: Feed{Samples: 2, Batch: 2, Epochs: 2}}
	tokens, d := c.Batch*c.SeqLen, c.DModel
	rng := rand.New(rand.NewPCG(12, 13))
	random := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.Float64()*2 - 1)
		}
		return v
	}

	g := gorgonia.NewGraph()
	m := &Model{Graph: g, init: map[*gorgonia.Node]func(*rand.Rand, []float32){}}
	inputBlock := engine.Block{Name: "input"}
	x := m.param(&inputBlock, "x", nil, tokens, d)
	layer := engine.Block{Name: "layer1"}
	h, err := c.decoderLayer(m, nil, &layer, x)
	if err != nil {
		t.Fatal(err)
	}
	target := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(tokens, d), gorgonia.WithName("target"))
	loss, err := ops.Apply(ops.MSE{Dims: 2}, h, target)
	if err != nil {
		t.Fatal(err)
	}
	prog := loadOnHost(t, engine.Spec{Inputs: []*gorgonia.Node{target}, Blocks: []engine.Block{inputBlock, layer},
		Output: loss, Train: true, Optimizer: hostmath.DefaultAdam(), ClipNorm: 1, RetainGradients: true})

	xData, targetData := random(tokens*d), random(tokens*d)
	params := map[string][]float32{}
	nodes := map[string]*gorgonia.Node{"x": x}
	for i, p := range layerParams(d) {
		node := layer.Params[i]
		if want := "layer1." + p.name; node.Name() != want {
			t.Fatalf("parameter %d is %s, want %s", i, node.Name(), want)
		}
		params[p.name] = random(tensor.Shape(p.shape).TotalSize())
		nodes[p.name] = node
	}
	for name, v := range map[*gorgonia.Node][]float32{x: xData, target: targetData} {
		if err := prog.SetInput(name, v); err != nil {
			t.Fatal(err)
		}
	}
	for name, v := range params {
		if err := prog.SetInput(nodes[name], v); err != nil {
			t.Fatal(err)
		}
	}
	got, err := prog.Run()
	if err != nil {
		t.Fatal(err)
	}

	wantLoss, wantGrads := layerOracle(t, c, xData, targetData, params)
	if e := math.Abs(float64(got)-wantLoss) / wantLoss; e > 1e-5 {
		t.Errorf("loss %g, oracle %g (relative error %.2g)", got, wantLoss, e)
	}
	for name, want := range wantGrads {
		grad, err := prog.Gradient(nodes[name])
		if err != nil {
			t.Fatal(err)
		}
		var diff, norm float64
		for i := range want {
			diff += (float64(grad[i]) - want[i]) * (float64(grad[i]) - want[i])
			norm += want[i] * want[i]
		}
		if e := math.Sqrt(diff / norm); e > 1e-5 || norm == 0 {
			t.Errorf("gradient of %s: relative error %.2g (norm %.3g)", name, e, math.Sqrt(norm))
		} else {
			t.Logf("gradient of %s: relative error %.2g", name, e)
		}
	}
}
