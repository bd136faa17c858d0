package engine

import (
	"fmt"
	"math"
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
	"gpuz/internal/quant"
)

// quantChain is a chain of bias-free projections h ← LeakyReLU(h·Wᵀ),
// one block per weight, with an MSE loss: the last frozen layers' weights
// are frozen, the ones before them trained, so that the gradient flows
// back through the frozen ones (as through LoRA's base). Layer l's weight is [out(l), in(l)], the
// odd layers' inputs twice as wide as dim, so that no product is square.
type quantChain struct {
	batch, dim, layers, frozen int
}

// isFrozen reports whether layer l's weight is frozen: the last frozen.
func (m quantChain) isFrozen(l int) bool { return l >= m.layers-m.frozen }

// in is layer l's input width: dim, twice that for an odd layer.
func (m quantChain) in(l int) int { return m.dim * (1 + l%2) }

// out is layer l's output width: the next layer's input, dim for the last.
func (m quantChain) out(l int) int {
	if l+1 < m.layers {
		return m.in(l + 1)
	}
	return m.dim
}

func (m quantChain) build() (x, target, loss *gorgonia.Node, blocks []Block, ws []*gorgonia.Node) {
	g := gorgonia.NewGraph()
	x = gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(m.batch, m.dim), gorgonia.WithName("x"))
	target = gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(m.batch, m.dim), gorgonia.WithName("target"))
	h := x
	for l := range m.layers {
		w := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(m.out(l), m.in(l)), gorgonia.WithName(fmt.Sprint("w", l)))
		ws = append(ws, w)
		b := Block{Name: fmt.Sprint("block", l)}
		if m.isFrozen(l) {
			b.Frozen = []*gorgonia.Node{w}
		} else {
			b.Params = []*gorgonia.Node{w}
		}
		blocks = append(blocks, b)
		h = gorgonia.Must(ops.Apply(ops.Projection{}, h, w))
		h = gorgonia.Must(ops.Apply(ops.LeakyReLU{Slope: ops.DefaultLeakySlope}, h))
	}
	loss = gorgonia.Must(ops.Apply(ops.MSE{Dims: 2}, h, target))
	return
}

// quantRun is what one run of a quantChain gives: its losses, and each
// weight's first-step gradient (nil for a frozen one) and final value.
type quantRun struct {
	losses []float32
	grads  [][]float32
	params [][]float32
}

// run compiles the chain with its frozen weights stored in kind
// (quant.F32: float32 weights), loads it on dev under pl, sets the
// weights to init and runs steps steps.
func (m quantChain) run(t *testing.T, kind quant.Kind, precision levers.Precision, train bool, dev device.Device, pl Placement, init [][]float32, steps int) quantRun {
	t.Helper()
	x, target, loss, blocks, ws := m.build()
	spec := Spec{Inputs: []*gorgonia.Node{x, target}, Blocks: blocks, Output: loss, Train: train,
		Optimizer: hostmath.DefaultAdam(), ClipNorm: 1, RetainGradients: train, Precision: precision}
	if kind.Quantized() {
		spec.Weights = map[*gorgonia.Node]quant.Kind{}
		for l, w := range ws {
			if m.isFrozen(l) {
				spec.Weights[w] = kind
			}
		}
	}
	sc, err := Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := sc.Load(dev, pl)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	data := make([]float32, m.batch*m.dim)
	for i := range data {
		data[i] = float32(i%11)/11 - 0.4
	}
	for _, in := range []*gorgonia.Node{x, target} {
		if err := prog.SetInput(in, data); err != nil {
			t.Fatal(err)
		}
	}
	for l, w := range ws {
		if err := prog.SetInput(w, init[l]); err != nil {
			t.Fatal(err)
		}
	}
	var r quantRun
	for s := range steps {
		v, err := prog.Run()
		if err != nil {
			t.Fatal(err)
		}
		r.losses = append(r.losses, v)
		if s == 0 && train {
			for _, w := range ws[:m.layers-m.frozen] {
				g, err := prog.Gradient(w)
				if err != nil {
					t.Fatal(err)
				}
				r.grads = append(r.grads, g)
			}
		}
	}
	for _, w := range ws {
		p, err := prog.Read(w)
		if err != nil {
			t.Fatal(err)
		}
		r.params = append(r.params, p)
	}
	return r
}

// init draws the chain's weights, N(0, 1/dim).
func (m quantChain) init() [][]float32 {
	rng := rand.New(rand.NewPCG(7, 8))
	out := make([][]float32, m.layers)
	for l := range out {
		out[l] = make([]float32, m.out(l)*m.in(l))
		for i := range out[l] {
			out[l][i] = float32(rng.NormFloat64() / math.Sqrt(float64(m.in(l))))
		}
	}
	return out
}

// roundTrip returns w quantized into kind and dequantized: the weights a
// quantized program computes with.
func roundTrip(t *testing.T, kind quant.Kind, w []float32, rows, cols int) []float32 {
	t.Helper()
	b := make([]byte, kind.Bytes(rows, cols))
	if err := quant.Quantize(kind, b, w, rows, cols); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(w))
	if err := quant.Dequantize(kind, out, b, rows, cols); err != nil {
		t.Fatal(err)
	}
	return out
}

// closeTo reports whether got and want agree within tol relative to
// want's largest magnitude.
func closeTo(got, want []float32, tol float64) bool {
	var scale float64
	for _, v := range want {
		scale = max(scale, math.Abs(float64(v)))
	}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > tol*max(scale, 1e-30) {
			return false
		}
	}
	return len(got) == len(want)
}

// TestQuantizedWeights runs a chain whose frozen weights are stored
// quantized, in evaluation and in training (LoRA's case: the trained
// layers after the frozen ones, the gradient flowing back through the
// quantized products' QuantGW), against the same chain in float32 whose
// frozen weights are the quantized ones dequantized: the losses and the
// trained weights' gradients agree to float32 rounding (the products sum
// in another order), the frozen weights read back as their dequantized
// values, and every placement gives the resident program's losses and
// weights bit for bit.
func TestQuantizedWeights(t *testing.T) {
	m := quantChain{batch: 3, dim: 256, layers: 3, frozen: 2}
	init := m.init()
	for _, kind := range []quant.Kind{quant.Q8_0, quant.Q4_0, quant.Q4_K, quant.Q6_K, quant.NF4} {
		deq := slices.Clone(init)
		for l := m.layers - m.frozen; l < m.layers; l++ {
			deq[l] = roundTrip(t, kind, init[l], m.out(l), m.in(l))
		}
		for _, train := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/train=%v", kind, train), func(t *testing.T) {
				want := m.run(t, quant.F32, levers.FP32, train, device.NewHost(), Resident{}, deq, 2)
				got := m.run(t, kind, levers.FP32, train, device.NewHost(), Resident{}, init, 2)
				if !closeTo(got.losses, want.losses, 1e-5) {
					t.Errorf("losses %v, float32 on the dequantized weights %v", got.losses, want.losses)
				}
				for i := range want.grads {
					if !closeTo(got.grads[i], want.grads[i], 1e-4) {
						t.Errorf("trained layer %d's gradient differs from float32's on the dequantized weights", i)
					}
				}
				for l := m.layers - m.frozen; l < m.layers; l++ {
					if !slices.Equal(got.params[l], deq[l]) {
						t.Errorf("frozen layer %d reads back other than its dequantized values", l)
					}
				}
				for _, pl := range []Placement{
					Paged{Cache: cache.Config{Policy: cache.Window, Window: 1}},
					Paged{Cache: cache.Config{Policy: cache.WindowPaged, Window: 1}},
					Hybrid{Blocks: []Where{OnHost, InCache, OnDevice}, Cache: cache.Config{Policy: cache.Window, Window: 1}},
				} {
					other := m.run(t, kind, levers.FP32, train, device.NewSim(1<<30, nil), pl, init, 2)
					if !slices.Equal(other.losses, got.losses) {
						t.Errorf("%T: losses %v, resident %v", pl, other.losses, got.losses)
					}
					for l := range got.params {
						if !slices.Equal(other.params[l], got.params[l]) {
							t.Errorf("%T: layer %d's weights differ from the resident program's", pl, l)
						}
					}
				}
			})
		}
	}
}

// TestQuantizedBytes checks the bytes a quantized weight is planned at:
// its kind's, in whole words, beside the trained float32 weight.
func TestQuantizedBytes(t *testing.T) {
	m := quantChain{batch: 1, dim: 256, layers: 2, frozen: 1}
	for _, kind := range []quant.Kind{quant.Q8_0, quant.Q4_0, quant.Q4_K, quant.Q6_K} {
		x, target, loss, blocks, ws := m.build()
		sc, err := Compile(Spec{Inputs: []*gorgonia.Node{x, target}, Blocks: blocks, Output: loss, Train: true,
			Optimizer: hostmath.DefaultAdam(), Weights: map[*gorgonia.Node]quant.Kind{ws[1]: kind}})
		if err != nil {
			t.Fatal(err)
		}
		b := sc.Bytes()
		if want := 4 * ((kind.Bytes(512, 256) + 3) / 4); b.Frozen != want {
			t.Errorf("%v: frozen bytes %d, want %d", kind, b.Frozen, want)
		}
		if want := int64(4 * 256 * 512); b.Parameters != want {
			t.Errorf("%v: trained bytes %d, want %d", kind, b.Parameters, want)
		}
	}
}

// TestQuantizedRefused checks what cannot be stored quantized, each with
// its reason: a trained weight, a float kind, a weight whose rows are not
// whole blocks, and a weight another op reads.
func TestQuantizedRefused(t *testing.T) {
	m := quantChain{batch: 1, dim: 32, layers: 2, frozen: 1}
	for _, tc := range []struct {
		name  string
		kind  quant.Kind
		layer int
		want  string
	}{
		{"trained", quant.Q8_0, 0, "trained"},
		{"float", quant.F16, 1, "not a quantized kind"},
		{"partial block", quant.Q4_K, 1, "multiple of 256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, target, loss, blocks, ws := m.build()
			_, err := Compile(Spec{Inputs: []*gorgonia.Node{x, target}, Blocks: blocks, Output: loss, Train: true,
				Optimizer: hostmath.DefaultAdam(), Weights: map[*gorgonia.Node]quant.Kind{ws[tc.layer]: tc.kind}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
	t.Run("other reader", func(t *testing.T) {
		g := gorgonia.NewGraph()
		x := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(32, 32), gorgonia.WithName("x"))
		w := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(32, 32), gorgonia.WithName("w"))
		y := gorgonia.Must(ops.Apply(ops.Add{}, x, w))
		out := gorgonia.Must(ops.Apply(ops.MSE{Dims: 2}, y, x))
		_, err := Compile(Spec{Inputs: []*gorgonia.Node{x}, Blocks: []Block{{Name: "b", Params: []*gorgonia.Node{w}}}, Output: out,
			Weights: map[*gorgonia.Node]quant.Kind{w: quant.Q8_0}})
		if err == nil || !strings.Contains(err.Error(), "cannot read") {
			t.Errorf("error %v, want one saying the op cannot read the weight", err)
		}
	})
}
