package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/engine"
	"gpuz/internal/hostmath"
	"gpuz/internal/ops"
)

// TestResnetPresets pins the presets to the PyTorch peer's (peer.py
// CONFIGS["resnet"]) and checks what Validate refuses.
func TestResnetPresets(t *testing.T) {
	full, err := ResnetPreset(ScaleFull)
	if err != nil {
		t.Fatal(err)
	}
	if want := (ResnetConfig{Levels: 12, Channels: 10, MidChannels: 30, ImageSize: 512, Kernel: 5, Feed: Feed{Samples: 6, Batch: 2, Epochs: 10}}); full != want {
		t.Errorf("full preset %+v, want %+v", full, want)
	}
	small, err := ResnetPreset(ScaleSmall)
	if err != nil {
		t.Fatal(err)
	}
	if want := (ResnetConfig{Levels: 3, Channels: 4, MidChannels: 8, ImageSize: 32, Kernel: 3, Feed: Feed{Samples: 6, Batch: 2, Epochs: 10}}); small != want {
		t.Errorf("small preset %+v, want %+v", small, want)
	}
	if _, err := ResnetPreset("huge"); err == nil {
		t.Error("an unknown scale was accepted")
	}
	for _, tc := range []struct {
		name string
		edit func(*ResnetConfig)
		want string
	}{
		{"even kernel", func(c *ResnetConfig) { c.Kernel = 4 }, "--kernel must be odd"},
		{"zero kernel", func(c *ResnetConfig) { c.Kernel = 0 }, "--kernel must be positive"},
		{"zero levels", func(c *ResnetConfig) { c.Levels = 0 }, "--levels must be positive"},
		{"negative channels", func(c *ResnetConfig) { c.Channels = -1 }, "--channels must be positive"},
		{"batch does not divide", func(c *ResnetConfig) { c.Batch = 4 }, "multiple of --batch"},
		{"huge images", func(c *ResnetConfig) { c.ImageSize = 1 << 20 }, "too large"},
		{"kernel beyond the image", func(c *ResnetConfig) { c.ImageSize, c.Kernel = 4, 9 }, "--kernel (9) must be at most 2 × --image-size − 1 (7)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := small
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if err := small.Validate(); err != nil {
		t.Errorf("the small preset is invalid: %v", err)
	}
}

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
	g := gorgonia.NewGraph()
	m := &Model{Graph: g, init: map[*gorgonia.Node]func(*rand.Rand, []float32){}}
	shape := []int{c.Batch, c.Channels, height, width}
	x := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(shape...), gorgonia.WithName("x"))
	target := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(shape...), gorgonia.WithName("target"))
	cm := c.newConvModel(g, m, "block")
	out, err := c.apply(cm, x)
	if err != nil {
		t.Fatal(err)
	}
	loss := gorgonia.Must(ops.Apply(ops.MSE{Dims: 4}, out, target))
	prog := loadOnHost(t, engine.Spec{Inputs: []*gorgonia.Node{x, target}, Blocks: []engine.Block{cm.block},
		Output: loss, Train: true, Optimizer: hostmath.DefaultAdam, ClipNorm: 1, RetainGradients: true})

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
		output := m.OutputMean
		if train {
			output = m.Loss
		}
		prog := loadOnHost(t, engine.Spec{Inputs: []*gorgonia.Node{m.Input, m.Target}, Blocks: m.Blocks, Output: output,
			Train: train, Optimizer: hostmath.DefaultAdam, ClipNorm: 1})
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

// TestResnetLossFalls trains the small preset on one batch for a few steps
// with the reference optimiser: the loss must fall step after step.
func TestResnetLossFalls(t *testing.T) {
	c, err := ResnetPreset(ScaleSmall)
	if err != nil {
		t.Fatal(err)
	}
	losses := trainFirstBatch(t, &c, hostmath.DefaultAdam.LR, 5)
	for i := 1; i < len(losses); i++ {
		if !(losses[i] < losses[i-1]) {
			t.Fatalf("losses %v do not fall", losses)
		}
	}
}
