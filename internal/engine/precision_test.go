package engine

import (
	"math"
	"slices"
	"testing"

	"gpuz/internal/device"
	"gpuz/internal/half"
	"gpuz/internal/levers"
)

// compilePrecision compiles a hand model for training at a precision.
func compilePrecision(t *testing.T, m handModel, prec levers.Precision) *Schedule {
	return compileTrain(t, m, Spec{Precision: prec})
}

// TestAssignPrecisionByHand checks which values of the hand attention
// model bf16 stores in 16 bits, as autocast's rules say, and the bytes
// that follow. The head's and the layers' weights and biases are read
// only by Linear: 16-bit. The embedding table is read by the lookup, which
// autocast leaves alone: float32, as are the inputs and the loss. The
// products' results are 16-bit, and so is the LeakyReLU of a 16-bit value;
// the weights' gradients come from products (16-bit), the biases' from a
// sum (float32).
func TestAssignPrecisionByHand(t *testing.T) {
	sc := compilePrecision(t, handModels[2], levers.BF16)
	want := map[string]bool{"head.w": true, "head.b": true, "layer1.w": true, "layer1.b": true, "embed.w": false, "ids": false, "target": false, "positions": false}
	for _, v := range sc.values {
		if w, ok := want[v.node.Name()]; ok && v.store.narrow() != w {
			t.Errorf("%s: 16-bit %v, want %v", v.node.Name(), v.store.narrow(), w)
		}
	}
	if v := sc.values[sc.output]; v.store.narrow() {
		t.Error("the loss is stored in 16 bits")
	}
	for _, s := range sc.steps {
		out := sc.values[s.out]
		switch s.op.String() {
		case "Linear", "LinearWeightGrad", "LinearInputGrad":
			if !out.store.narrow() {
				t.Errorf("%v's result is float32", s.op)
			}
		case "LinearBiasGrad", "SoftmaxCrossEntropy", "SoftmaxCrossEntropyGrad", "Embedding", "EmbeddingGrad":
			if out.store.narrow() {
				t.Errorf("%v's result is 16-bit", s.op)
			}
		}
	}
	// head 6×4 + 6 and two layers of 4×4 + 4: 70 values in 16 bits, 35
	// words; the embedding's 6×4 in float32.
	b := sc.Bytes()
	if want := int64(4 * (35 + 24)); b.Parameters != want {
		t.Errorf("parameters: %d bytes, want %d", b.Parameters, want)
	}
	// Adam's moments of all 94 and the float32 masters of the 70.
	if want := int64(4 * (2*94 + 70)); b.Optimizer != want {
		t.Errorf("optimizer state: %d bytes, want %d", b.Optimizer, want)
	}
}

// TestLossScaleMoves follows GradScaler's rules: a skipped step halves the
// scale and restarts the count of good steps, 2000 good steps in a row
// double it.
func TestLossScaleMoves(t *testing.T) {
	for _, tc := range []struct {
		name          string
		overflows     []bool
		scale         float64
		skipped, good int
	}{
		{"one skip", []bool{true}, 32768, 1, 0},
		{"skip then good", []bool{true, false, false}, 32768, 1, 2},
		{"1999 good", slices.Repeat([]bool{false}, 1999), 65536, 0, 1999},
		{"2000 good", slices.Repeat([]bool{false}, 2000), 131072, 0, 0},
		{"a skip restarts the count", append(slices.Repeat([]bool{false}, 1999), true, false), 32768, 1, 1},
	} {
		s := newLossScale()
		for _, o := range tc.overflows {
			s.endStep(o)
		}
		if s.Scale != tc.scale || s.Skipped != tc.skipped || s.good != tc.good {
			t.Errorf("%s: scale %v, skipped %d, good %d; want %v, %d, %d", tc.name, s.Scale, s.Skipped, s.good, tc.scale, tc.skipped, tc.good)
		}
	}
}

// TestFP16OverflowSkipsTheStep trains the hand linear model in fp16 with a
// loss scale that overflows fp16's range: every block skips its update,
// the weights stay as they were, the step counts as skipped and the scale
// halves; at a scale that fits, the next step updates them.
func TestFP16OverflowSkipsTheStep(t *testing.T) {
	sc := compilePrecision(t, handModels[0], levers.FP16)
	prog, err := sc.Load(device.NewHost(), Resident{})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	for i, v := range sc.values {
		if v.kind == kindInput || v.kind == kindParam {
			data := make([]float32, sc.count(i))
			for j := range data {
				data[j] = float32(math.Sin(float64(i*31 + j)))
			}
			if err := prog.SetInput(v.node, data); err != nil {
				t.Fatal(err)
			}
		}
	}
	weights := func() [][]float32 {
		var w [][]float32
		for _, pv := range sc.params {
			d, err := prog.Read(sc.values[pv].node)
			if err != nil {
				t.Fatal(err)
			}
			w = append(w, d)
		}
		return w
	}
	before := weights()
	prog.loss.Scale = 0x1p60
	if _, err := prog.Run(); err != nil {
		t.Fatal(err)
	}
	if got := prog.LossScale(); got.Skipped != 1 || got.Scale != 0x1p59 {
		t.Fatalf("after an overflow: %d skipped at scale %v, want 1 at 2^59", got.Skipped, got.Scale)
	}
	for i, w := range weights() {
		if !slices.Equal(w, before[i]) {
			t.Fatalf("parameter %d changed in a skipped step", i)
		}
	}
	prog.loss.Scale = 1024
	if _, err := prog.Run(); err != nil {
		t.Fatal(err)
	}
	if got := prog.LossScale(); got.Skipped != 1 {
		t.Fatalf("%d steps skipped at a scale that fits, want 1", got.Skipped)
	}
	for i, w := range weights() {
		if slices.Equal(w, before[i]) {
			t.Errorf("parameter %d did not change in a step that was not skipped", i)
		}
	}
}

// TestWork16ByHand counts the work of the hand linear model's evaluation
// in bf16 (three Linear(4→4) with a LeakyReLU each at batch 2, then MSE):
// each Linear reads x (8 values) and W (16) in 16 bits as stored, 48
// bytes less than float32's, and its FLOPs are 16-bit products. The
// conversions, at 6 bytes a value (2 read and 4 written, or 4 and 2):
// the first Linear rounds the float32 input (8) and each widens its bias
// (4) and rounds its result (8); each LeakyReLU widens its input (8) and
// rounds its result (8); MSE widens its prediction (8): 14 launches over
// 20 + 2·12 + 3·16 + 8 = 100 values.
func TestWork16ByHand(t *testing.T) {
	compile := func(prec levers.Precision) Work {
		inputs, blocks, loss := handModels[0].build()
		sc, err := Compile(Spec{Inputs: inputs, Blocks: blocks, Output: loss, Precision: prec})
		if err != nil {
			t.Fatal(err)
		}
		return sc.Work()
	}
	kernel := func(w Work, name string) KernelWork {
		for _, k := range w.Kernels {
			if k.Name == name {
				return k
			}
		}
		return KernelWork{}
	}
	fp32, bf16 := compile(levers.FP32), compile(levers.BF16)
	l32, l16 := kernel(fp32, "Linear"), kernel(bf16, "Linear")
	if !l16.Half || l32.Half {
		t.Errorf("Linear's FLOPs 16-bit products: %v in bf16, %v in fp32", l16.Half, l32.Half)
	}
	if l16.Bytes != l32.Bytes-3*48 || l16.FLOPs != l32.FLOPs {
		t.Errorf("Linear in bf16: %d bytes, %d FLOPs; fp32 %d bytes, %d FLOPs: want 144 bytes fewer, the same FLOPs", l16.Bytes, l16.FLOPs, l32.Bytes, l32.FLOPs)
	}
	if c := kernel(bf16, KernelConvert); c.Launches != 14 || c.Bytes != 6*100 || c.FLOPs != 100 {
		t.Errorf("conversions: %d launches, %d bytes, %d FLOPs; want 14, 600, 100", c.Launches, c.Bytes, c.FLOPs)
	}
	if c := kernel(fp32, KernelConvert); c.Launches != 0 {
		t.Errorf("fp32 converts: %+v", c)
	}
}

// TestConverterRounds: a step's conversions give what package half's do:
// round gives the float32 value of the nearest 16-bit one, narrow the
// 16-bit patterns, widen their float32 values back.
func TestConverterRounds(t *testing.T) {
	src := []float32{1, 1 + 0x1p-9, 1 + 0x1p-8 + 0x1p-10, -3.14159, 65519, 65520, 1e-6, 0}
	for _, f := range []half.Format{half.BF16, half.FP16} {
		to, from := half.BF16FromFloat32, half.BF16ToFloat32
		if f == half.FP16 {
			to, from = half.FP16FromFloat32, half.FP16ToFloat32
		}
		h := device.NewHost()
		in, _ := h.Alloc(len(src))
		scratch, _ := h.Alloc(4 * len(src))
		if err := h.Upload(in, src); err != nil {
			t.Fatal(err)
		}
		c := converter{dev: h, k: h.Kernels(), f: f, buf: scratch}
		rounded := device.Floats(c.round(in, len(src)))
		packed := device.Halves(c.narrow(in, len(src)))
		for i, x := range src {
			if want := from(to(x)); math.Float32bits(rounded[i]) != math.Float32bits(want) {
				t.Errorf("%s: round(%v) = %v, want %v", f, x, rounded[i], want)
			}
			if packed[i] != to(x) {
				t.Errorf("%s: narrow(%v) = %#04x, want %#04x", f, x, packed[i], to(x))
			}
		}
	}
}

// TestOnlyFP16ScalesTheLoss trains the hand linear model one step at each
// precision and reads the gradient seed, which the loss scale multiplies:
// fp16 seeds its gradients with GradScaler's initial 2^16, and bf16, whose
// range is float32's, seeds them with 1, as fp32 does (PyTorch pairs a
// GradScaler with fp16 autocast only). Scaling is exact in powers of two,
// so a bf16 run that scaled and unscaled gave the same losses: issue 44
// item 26, a survivor of the planted bugs.
func TestOnlyFP16ScalesTheLoss(t *testing.T) {
	for _, tc := range []struct {
		prec levers.Precision
		seed float32
	}{{levers.FP32, 1}, {levers.BF16, 1}, {levers.FP16, lossScaleInit}} {
		t.Run(tc.prec.String(), func(t *testing.T) {
			sc := compilePrecision(t, handModels[0], tc.prec)
			prog, err := sc.Load(device.NewHost(), Resident{})
			if err != nil {
				t.Fatal(err)
			}
			defer prog.Close()
			for i, v := range sc.values {
				if v.kind == kindInput || v.kind == kindParam {
					data := make([]float32, sc.count(i))
					for j := range data {
						data[j] = float32(math.Sin(float64(i*31+j))) / 4
					}
					if err := prog.SetInput(v.node, data); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := prog.Run(); err != nil {
				t.Fatal(err)
			}
			seeds := 0
			for i, v := range sc.values {
				if v.kind != kindSeed {
					continue
				}
				seeds++
				if got := device.Floats(prog.buffers[i]); len(got) != 1 || got[0] != tc.seed {
					t.Errorf("the gradient seed holds %v, want [%v]", got, tc.seed)
				}
			}
			if seeds == 0 {
				t.Fatal("no gradient seed")
			}
			if got := prog.LossScale().Scale; (got != 0) != (tc.prec == levers.FP16) {
				t.Errorf("reported loss scale %v", got)
			}
		})
	}
}
