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
	"gpuz/internal/hfconfig"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/ops"
)

// loraCase is a workload's small config and a LoRA setting for it.
type loraCase struct {
	name string
	c    Config
	lora levers.LoRA
}

// loraCases covers every workload LoRA applies to, with the default
// targets and with every linear layer, at α/R = 1 and at another scale;
// the Llama family's parts of its packed layers (q, k, v of qkv_proj,
// gate and up of gate_up_proj) and GPT-2's Conv1D layers among them.
func loraCases(t *testing.T) []loraCase {
	lin, err := LinearPreset(ScaleSmall)
	if err != nil {
		t.Fatal(err)
	}
	lin.Blocks, lin.LayersPerBlock, lin.Dims, lin.Batch, lin.Samples = 2, 2, 12, 3, 3
	att, err := AttentionPreset(ScaleSmall)
	if err != nil {
		t.Fatal(err)
	}
	att.Layers, att.SeqLen, att.Batch, att.Samples, att.DModel, att.Heads, att.Vocab = 2, 6, 2, 2, 16, 2, 23
	llama := tinyLLM(t, tinyLLMs[0].config, 5, 2)
	gpt2 := tinyLLM(t, tinyLLMs[3].config, 5, 2)
	var out []loraCase
	for _, w := range []struct {
		name string
		c    Config
	}{{"linear", &lin}, {"attention", &att}, {"llama", &llama}, {"gpt2", &gpt2}} {
		for _, l := range []levers.LoRA{{Rank: 4}, {Rank: 3, Alpha: 12, Targets: levers.AllLinear}} {
			c, err := Apply(w.c, levers.Set{LoRA: l})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, loraCase{fmt.Sprintf("%s/%s", w.name, l), c, l})
		}
	}
	return out
}

// loraRun is what trainParams leaves: the losses, and every parameter's
// values before and after training, by name.
type loraRun struct {
	losses        []float32
	init, final   map[string][]float32
	trained, base []string // parameter names: the blocks' Params and Frozen
}

// trainParams trains c's model on its first batch for steps steps on the
// host and returns the run.
func trainParams(t *testing.T, c Config, steps int) loraRun {
	t.Helper()
	m, err := c.Build()
	if err != nil {
		t.Fatal(err)
	}
	adam := hostmath.DefaultAdam()
	adam.LR = 1e-2
	prog := loadOnHost(t, engine.Spec{Inputs: m.Inputs(), Blocks: m.Blocks, Output: m.Loss, Train: true, Optimizer: adam, ClipNorm: 1})
	if err := m.InitParams(1, prog.SetInput); err != nil {
		t.Fatal(err)
	}
	data, batch := c.Data(1), FeedOf(c).Batch
	if err := prog.SetInput(m.Input, data.Batch(0, batch)); err != nil {
		t.Fatal(err)
	}
	if err := prog.SetInput(m.Target, data.TargetBatch(0, batch)); err != nil {
		t.Fatal(err)
	}
	r := loraRun{init: map[string][]float32{}, final: map[string][]float32{}}
	read := func(into map[string][]float32) {
		for _, b := range m.Blocks {
			for _, p := range slices.Concat(b.Params, b.Frozen) {
				v, err := prog.Read(p)
				if err != nil {
					t.Fatal(err)
				}
				into[p.Name()] = v
			}
		}
	}
	for _, b := range m.Blocks {
		for _, p := range b.Params {
			r.trained = append(r.trained, p.Name())
		}
		for _, p := range b.Frozen {
			r.base = append(r.base, p.Name())
		}
	}
	read(r.init)
	for range steps {
		loss, err := prog.Run()
		if err != nil {
			t.Fatal(err)
		}
		r.losses = append(r.losses, loss)
	}
	read(r.final)
	return r
}

// TestLoRAStartsAsTheModel checks, for every workload LoRA applies to,
// that a LoRA run's first loss is the same run's without LoRA bit for bit
// (B is zero, and the model's own weights are drawn as without LoRA), and
// that after three steps every weight of the model is bit-identical to its
// initial value while every adapter has moved.
func TestLoRAStartsAsTheModel(t *testing.T) {
	for _, tc := range loraCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			without := tc.c.clone()
			*without.leverFields().lora = levers.LoRA{}
			plain := trainParams(t, without, 1)
			got := trainParams(t, tc.c, 3)
			if math.Float32bits(got.losses[0]) != math.Float32bits(plain.losses[0]) {
				t.Errorf("first loss %v with LoRA, %v without", got.losses[0], plain.losses[0])
			}
			if len(got.trained) == 0 || !slices.Equal(got.base, plain.trained) {
				t.Fatalf("frozen %v, trained %v; the model without LoRA trains %v", got.base, got.trained, plain.trained)
			}
			for _, name := range got.base {
				if !slices.Equal(got.final[name], got.init[name]) {
					t.Errorf("frozen %s changed", name)
				}
				if !slices.Equal(got.init[name], plain.init[name]) {
					t.Errorf("%s starts from other values than without LoRA", name)
				}
			}
			for _, name := range got.trained {
				if slices.Equal(got.final[name], got.init[name]) {
					t.Errorf("adapter %s did not move", name)
				}
			}
			if !(got.losses[2] < got.losses[0]) {
				t.Errorf("losses %v: training the adapters did not lower the loss", got.losses)
			}
		})
	}
}

// TestLoRATrainedCount checks the trained parameters against the formula
// R·(in + out) summed over the targets: for Llama-3.2-1B at R = 16 on
// q_proj and v_proj, 16 layers × 16 × ((2048+2048) + (2048+512)) =
// 1,703,936; and the model's own parameters, frozen, are its published
// total.
func TestLoRATrainedCount(t *testing.T) {
	i := slices.IndexFunc(hfconfig.Presets(), func(p hfconfig.Preset) bool { return p.Name == "llama-3.2-1b" })
	if i < 0 {
		t.Fatal("no llama-3.2-1b preset")
	}
	p := hfconfig.Presets()[i]
	cfg := p.Config
	kv := cfg.KVHeads * cfg.HeadDim
	d, q, inter := cfg.Hidden, cfg.Heads*cfg.HeadDim, cfg.Intermediate
	for _, tc := range []struct {
		lora levers.LoRA
		want int64
	}{
		{levers.LoRA{Rank: 16}, 1_703_936},
		{levers.LoRA{Rank: 16, Targets: "q_proj,v_proj"}, 1_703_936},
		{levers.LoRA{Rank: 8, Targets: "o_proj"}, int64(cfg.Layers * 8 * (q + d))},
		{levers.LoRA{Rank: 2, Targets: levers.AllLinear}, int64(cfg.Layers * 2 * ((d + q) + 2*(d+kv) + (q + d) + 2*(d+inter) + (inter + d)))},
	} {
		t.Run(tc.lora.String(), func(t *testing.T) {
			c := LLMConfig{Model: hfconfig.Model{Config: cfg, Name: p.Name}, Layers: cfg.Layers, SeqLen: 8, LoRA: tc.lora,
				Feed: Feed{Samples: 1, Batch: 1, Epochs: 2}}
			m, err := c.Build()
			if err != nil {
				t.Fatal(err)
			}
			if got := m.TrainedCount(); got != tc.want {
				t.Errorf("%d trained parameters, want %d", got, tc.want)
			}
			if got := m.ParamCount() - m.TrainedCount(); got != p.Params {
				t.Errorf("%d frozen parameters, the published total is %d", got, p.Params)
			}
		})
	}
}

// TestLoRAGradients checks the adapters' gradients in float64 against
// central finite differences, through the graph adapters.adapt builds: a
// part of a packed layer (rows 1…3 of 5, placed by the constant P) at the
// scale α/R = 3, so that every piece (A, the scale, P·B, the sum) is on
// the path. The tolerance is the ops' gradient check's (gradcheck_test.go).
func TestLoRAGradients(t *testing.T) {
	const step, tolerance = 1e-6, 1e-6
	g := gorgonia.NewGraph()
	m := &Model{Graph: g, init: map[*gorgonia.Node]func(*rand.Rand, []float32){}, dtype: tensor.Float64}
	ad := &adapters{LoRA: levers.LoRA{Rank: 2, Alpha: 6}, targets: []string{"q"}, m: m, consts: map[string]*gorgonia.Node{}}
	x, w, target := m.tensor("x", 3, 4), m.tensor("w", 5, 4), m.tensor("target", 3, 5)
	block := engine.Block{Name: "b"}
	y, err := ad.adapt(&block, "layer", "q", x, gorgonia.Must(ops.Apply(ops.Projection{}, x, w)), 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	loss := gorgonia.Must(ops.Apply(ops.MSE{Dims: 2}, y, target))
	if len(block.Params) != 2 {
		t.Fatalf("%d adapters, want A and B", len(block.Params))
	}
	grads, err := gorgonia.Grad(loss, block.Params...)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	values := map[*gorgonia.Node][]float64{}
	for _, n := range append([]*gorgonia.Node{x, w, target}, block.Params...) { // B nonzero, so that A has a gradient
		v := make([]float64, n.Shape().TotalSize())
		for i := range v {
			v[i] = rng.Float64()*2 - 1
		}
		values[n] = v
	}
	for _, c := range m.Constants {
		values[c.Node] = toFloat64(c.Values())
	}
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	run := func() float64 {
		vm.Reset()
		for n, v := range values {
			if err := gorgonia.Let(n, tensor.New(tensor.WithBacking(slices.Clone(v)), tensor.WithShape(n.Shape()...))); err != nil {
				t.Fatal(err)
			}
		}
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		return loss.Value().Data().(float64)
	}
	run()
	for i, p := range block.Params {
		got := slices.Clone(grads[i].Value().Data().([]float64))
		v := values[p]
		worst, scale := 0.0, 0.0
		for j := range v {
			orig := v[j]
			v[j] = orig + step
			plus := run()
			v[j] = orig - step
			minus := run()
			v[j] = orig
			want := (plus - minus) / (2 * step)
			worst, scale = max(worst, math.Abs(got[j]-want)), max(scale, math.Abs(want))
		}
		if rel := worst / max(scale, 1e-12); rel > tolerance || scale == 0 {
			t.Errorf("%s: analytic and numerical gradients differ by %.3g relative (scale %.3g)", p.Name(), rel, scale)
		}
	}
}

// TestLoRABadTargets checks that a target the model lacks, and LoRA on
// resnet, are refused with a line naming what is wrong.
func TestLoRABadTargets(t *testing.T) {
	llama := tinyLLM(t, tinyLLMs[0].config, 5, 2)
	llama.LoRA = levers.LoRA{Rank: 4, Targets: "c_attn"}
	if err := llama.Validate(); err == nil {
		t.Error("c_attn accepted on a Llama model")
	}
	if err := Resnet.Check(levers.Set{LoRA: levers.LoRA{Rank: 4}}); err == nil {
		t.Error("LoRA accepted on resnet")
	}
	for _, l := range []levers.LoRA{{Rank: -1}, {Rank: 4, Alpha: -1}, {Alpha: 2}, {Rank: 4, Targets: "q_proj,,v_proj"}, {Rank: 4, Targets: "all-linear,q_proj"}} {
		if err := l.Validate(); err == nil {
			t.Errorf("%+v accepted", l)
		}
	}
}

// TestLoRAOutputByHand computes a layer with its adapter through the graph
// adapters.adapt builds, in float64, and by hand: y = x·Wᵀ plus
// (α/R)·(x·Aᵀ)·Bᵀ on the columns of the part (1…3 of 5) and nothing on
// the others, at scales below 1 (α < R, issue 44 item 20), 1 and above.
func TestLoRAOutputByHand(t *testing.T) {
	const rows, in, width, off, n = 3, 4, 5, 1, 3
	for _, l := range []levers.LoRA{{Rank: 2, Alpha: 1}, {Rank: 4, Alpha: 1}, {Rank: 2}, {Rank: 2, Alpha: 6}} {
		g := gorgonia.NewGraph()
		m := &Model{Graph: g, init: map[*gorgonia.Node]func(*rand.Rand, []float32){}, dtype: tensor.Float64}
		ad := &adapters{LoRA: l, targets: []string{"q"}, m: m, consts: map[string]*gorgonia.Node{}}
		x, w := m.tensor("x", rows, in), m.tensor("w", width, in)
		block := engine.Block{Name: "b"}
		y, err := ad.adapt(&block, "layer", "q", x, gorgonia.Must(ops.Apply(ops.Projection{}, x, w)), off, n)
		if err != nil {
			t.Fatal(err)
		}
		a, b := block.Params[0], block.Params[1] // A [R, in], B [n, R]
		rng := rand.New(rand.NewPCG(5, 6))
		values := map[*gorgonia.Node][]float64{}
		for _, p := range []*gorgonia.Node{x, w, a, b} {
			v := make([]float64, p.Shape().TotalSize())
			for i := range v {
				v[i] = rng.Float64()*2 - 1
			}
			values[p] = v
		}
		for _, c := range m.Constants {
			values[c.Node] = toFloat64(c.Values())
		}
		vm := gorgonia.NewTapeMachine(g)
		for p, v := range values {
			if err := gorgonia.Let(p, tensor.New(tensor.WithBacking(v), tensor.WithShape(p.Shape()...))); err != nil {
				t.Fatal(err)
			}
		}
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		got := y.Value().Data().([]float64)
		vm.Close()
		alpha := l.Alpha
		if alpha == 0 {
			alpha = float64(l.Rank) // α = R, the scale 1
		}
		scale := alpha / float64(l.Rank)
		X, W, A, B := values[x], values[w], values[a], values[b]
		for i := range rows {
			for j := range width {
				want := 0.0
				for k := range in {
					want += X[i*in+k] * W[j*in+k]
				}
				if j >= off && j < off+n {
					for r := range l.Rank {
						u := 0.0
						for k := range in {
							u += X[i*in+k] * A[r*in+k]
						}
						want += scale * u * B[(j-off)*l.Rank+r]
					}
				}
				if d := math.Abs(got[i*width+j] - want); d > 1e-12 {
					t.Errorf("%s: y[%d][%d] = %.15g, want %.15g (α/R = %g)", l, i, j, got[i*width+j], want, scale)
				}
			}
		}
	}
}

// peftTargets is PEFT's default target_modules per model_type
// (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING, peft/utils/constants.py),
// written here rather than read from gpuz so that a change to the family
// table fails.
var peftTargets = map[string][]string{
	"llama":   {"q_proj", "v_proj"},
	"mistral": {"q_proj", "v_proj"},
	"qwen2":   {"q_proj", "v_proj"},
	"gpt2":    {"c_attn"},
}

// TestLoRADefaultTargetsArePEFTs builds a tiny model of each model_type
// with LoRA and no --lora-targets (issue 44 item 20): the adapters are
// exactly PEFT's default targets in each layer, A and B for each, and
// LoRATargets names them. (q_proj with k_proj in place of v_proj passed
// every count: k and v have the same shape.)
func TestLoRADefaultTargetsArePEFTs(t *testing.T) {
	configs := map[string]string{
		"llama":   tinyLLMs[0].config,
		"mistral": strings.Replace(tinyLLMs[0].config, `"llama"`, `"mistral"`, 1),
		"qwen2":   tinyLLMs[2].config,
		"gpt2":    tinyLLMs[3].config,
	}
	for mt, targets := range peftTargets {
		c := tinyLLM(t, configs[mt], 5, 2)
		if c.Model.ModelType != mt {
			t.Fatalf("%s: the config is a %s", mt, c.Model.ModelType)
		}
		c.LoRA = levers.LoRA{Rank: 2}
		if got, err := c.LoRATargets(); err != nil || !slices.Equal(got, targets) {
			t.Errorf("%s: LoRATargets() = %v, %v; want PEFT's %v", mt, got, err, targets)
		}
		m, err := c.Build()
		if err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for _, b := range m.Blocks {
			for _, p := range b.Params {
				got = append(got, p.Name())
			}
		}
		modules := c.Model.Arch.LinearModules()
		for l := range c.Layers {
			for _, target := range targets {
				i := slices.IndexFunc(modules, func(m string) bool { return strings.HasSuffix(m, "."+target) })
				if i < 0 {
					t.Fatalf("%s: no module %s", mt, target)
				}
				prefix := fmt.Sprintf("%s%d.%s", c.Model.Arch.Modules.Layers, l, modules[i])
				want = append(want, prefix+".lora_A.weight", prefix+".lora_B.weight")
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: trained %v, want PEFT's default targets' adapters %v", mt, got, want)
		}
	}
}
