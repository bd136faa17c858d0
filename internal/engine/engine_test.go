package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/ops"
)

// smallLinear is a stack of Linear+LeakyReLU layers in two blocks, small
// enough for gorgonia's TapeMachine.
type smallLinear struct {
	batch, dim, layers, perBlock int
	// frozen lists the layers whose weight and bias are frozen
	// (Block.Frozen).
	frozen []int
}

// layerParams holds one layer's initial weights [out, in] and bias.
type layerParams struct{ w, b []float32 }

func (m smallLinear) init(rng *rand.Rand) []layerParams {
	params := make([]layerParams, m.layers)
	bound := 1 / math.Sqrt(float64(m.dim))
	for l := range params {
		params[l].w = make([]float32, m.dim*m.dim)
		params[l].b = make([]float32, m.dim)
		for i := range params[l].w {
			params[l].w[i] = float32((rng.Float64()*2 - 1) * bound)
		}
		for i := range params[l].b {
			params[l].b[i] = float32((rng.Float64()*2 - 1) * bound)
		}
	}
	return params
}

// buildProject builds the model from project ops for the engine.
func (m smallLinear) buildProject() (g *gorgonia.ExprGraph, x, target, loss *gorgonia.Node, blocks []Block, ws, bs []*gorgonia.Node) {
	g = gorgonia.NewGraph()
	x = gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(m.batch, m.dim), gorgonia.WithName("x"))
	target = gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(m.batch, m.dim), gorgonia.WithName("target"))
	h := x
	for l := range m.layers {
		w := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(m.dim, m.dim), gorgonia.WithName(fmt.Sprint("w", l)))
		b := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(m.dim), gorgonia.WithName(fmt.Sprint("b", l)))
		ws, bs = append(ws, w), append(bs, b)
		if l%m.perBlock == 0 {
			blocks = append(blocks, Block{Name: fmt.Sprint("block", l/m.perBlock)})
		}
		if blk := &blocks[len(blocks)-1]; slices.Contains(m.frozen, l) {
			blk.Frozen = append(blk.Frozen, w, b)
		} else {
			blk.Params = append(blk.Params, w, b)
		}
		h = gorgonia.Must(ops.Apply(ops.Linear{}, h, w, b))
		h = gorgonia.Must(ops.Apply(ops.LeakyReLU{Slope: ops.DefaultLeakySlope}, h))
	}
	loss = gorgonia.Must(ops.Apply(ops.MSE{Dims: 2}, h, target))
	return
}

// oracle is the same model from gorgonia's built-in ops, run on the
// TapeMachine. Weights are fed transposed ([in, out]) so that no Transpose
// op is needed.
type oracle struct {
	g               *gorgonia.ExprGraph
	x, target, loss *gorgonia.Node
	wts, bs         []*gorgonia.Node
	lossValue       gorgonia.Value
	gradW, gradB    []gorgonia.Value
}

func (m smallLinear) buildOracle(t *testing.T) *oracle {
	o := &oracle{g: gorgonia.NewGraph()}
	o.x = gorgonia.NewMatrix(o.g, tensor.Float32, gorgonia.WithShape(m.batch, m.dim), gorgonia.WithName("x"))
	o.target = gorgonia.NewMatrix(o.g, tensor.Float32, gorgonia.WithShape(m.batch, m.dim), gorgonia.WithName("target"))
	h := o.x
	var params gorgonia.Nodes
	for l := range m.layers {
		wt := gorgonia.NewMatrix(o.g, tensor.Float32, gorgonia.WithShape(m.dim, m.dim), gorgonia.WithName(fmt.Sprint("wt", l)))
		b := gorgonia.NewVector(o.g, tensor.Float32, gorgonia.WithShape(m.dim), gorgonia.WithName(fmt.Sprint("b", l)))
		o.wts, o.bs = append(o.wts, wt), append(o.bs, b)
		params = append(params, wt, b)
		h = gorgonia.Must(gorgonia.BroadcastAdd(gorgonia.Must(gorgonia.Mul(h, wt)), b, nil, []byte{0}))
		h = gorgonia.Must(gorgonia.LeakyRelu(h, ops.DefaultLeakySlope))
	}
	o.loss = gorgonia.Must(gorgonia.Mean(gorgonia.Must(gorgonia.Square(gorgonia.Must(gorgonia.Sub(h, o.target))))))
	grads, err := gorgonia.Grad(o.loss, params...)
	if err != nil {
		t.Fatalf("oracle gradients: %v", err)
	}
	gorgonia.Read(o.loss, &o.lossValue)
	o.gradW = make([]gorgonia.Value, m.layers)
	o.gradB = make([]gorgonia.Value, m.layers)
	for l := range m.layers {
		gorgonia.Read(grads[2*l], &o.gradW[l])
		gorgonia.Read(grads[2*l+1], &o.gradB[l])
	}
	return o
}

func dense(data []float32, shape ...int) *tensor.Dense {
	return tensor.New(tensor.WithBacking(append([]float32(nil), data...)), tensor.WithShape(shape...))
}

func transpose(w []float32, n int) []float32 {
	out := make([]float32, len(w))
	for i := range n {
		for j := range n {
			out[j*n+i] = w[i*n+j]
		}
	}
	return out
}

// relErr is ‖got − want‖ / ‖want‖.
func relErr(got, want []float32) float64 {
	var d, n float64
	for i := range want {
		d += float64(got[i]-want[i]) * float64(got[i]-want[i])
		n += float64(want[i]) * float64(want[i])
	}
	return math.Sqrt(d / max(n, 1e-30))
}

// loadTraining compiles the project-op model for training, every gradient
// kept when retain is set, and loads it resident on the host; the program is
// closed when the test ends.
func (m smallLinear) loadTraining(t *testing.T, retain bool) (x, target *gorgonia.Node, ws, bs []*gorgonia.Node, prog *Program) {
	t.Helper()
	_, x, target, loss, blocks, ws, bs := m.buildProject()
	sched, err := Compile(Spec{Inputs: []*gorgonia.Node{x, target}, Blocks: blocks, Output: loss, Train: true,
		Optimizer: hostmath.DefaultAdam(), ClipNorm: 1, RetainGradients: retain})
	if err != nil {
		t.Fatal(err)
	}
	prog, err = sched.Load(device.NewHost(), Resident{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prog.Close)
	return x, target, ws, bs, prog
}

// TestEngineMatchesTapeMachine trains the same model with the engine and
// with gorgonia's TapeMachine on built-in ops for three steps. Each step the
// loss and every gradient must agree within 1e-5 relative (float32 sums in a
// different order differ by about 1e-7); the oracle's parameters are updated
// with the same clip and Adam as the engine's blocks.
func TestEngineMatchesTapeMachine(t *testing.T) {
	m := smallLinear{batch: 3, dim: 8, layers: 4, perBlock: 2}
	rng := rand.New(rand.NewPCG(3, 4))
	init := m.init(rng)
	xData := make([]float32, m.batch*m.dim)
	for i := range xData {
		xData[i] = rng.Float32()
	}

	x, target, ws, bs, prog := m.loadTraining(t, true)
	mustSet := func(n *gorgonia.Node, data []float32) {
		if err := prog.SetInput(n, data); err != nil {
			t.Fatal(err)
		}
	}
	mustSet(x, xData)
	mustSet(target, xData)
	for l := range m.layers {
		mustSet(ws[l], init[l].w)
		mustSet(bs[l], init[l].b)
	}

	o := m.buildOracle(t)
	oracleW := make([][]float32, m.layers) // [out, in] like the engine's
	oracleB := make([][]float32, m.layers)
	moments := make([][4][]float32, m.layers) // m and v of w and b
	for l := range m.layers {
		oracleW[l] = append([]float32(nil), init[l].w...)
		oracleB[l] = append([]float32(nil), init[l].b...)
		for j := range moments[l] {
			moments[l][j] = make([]float32, len(init[l].w))[:map[bool]int{true: m.dim * m.dim, false: m.dim}[j < 2]]
		}
	}

	for step := 1; step <= 3; step++ {
		got, err := prog.Run()
		if err != nil {
			t.Fatal(err)
		}
		vm := gorgonia.NewTapeMachine(o.g)
		gorgonia.Let(o.x, dense(xData, m.batch, m.dim))
		gorgonia.Let(o.target, dense(xData, m.batch, m.dim))
		for l := range m.layers {
			gorgonia.Let(o.wts[l], dense(transpose(oracleW[l], m.dim), m.dim, m.dim))
			gorgonia.Let(o.bs[l], dense(oracleB[l], m.dim))
		}
		if err := vm.RunAll(); err != nil {
			t.Fatalf("TapeMachine: %v", err)
		}
		vm.Close()
		want := o.lossValue.Data().(float32)
		if e := math.Abs(float64(got-want)) / math.Abs(float64(want)); e > 1e-5 {
			t.Errorf("step %d: loss %g, oracle %g (relative error %.2g)", step, got, want, e)
		}
		for l := range m.layers {
			wantW := transpose(o.gradW[l].Data().([]float32), m.dim)
			wantB := append([]float32(nil), o.gradB[l].Data().([]float32)...)
			gotW, _ := prog.Gradient(ws[l])
			gotB, _ := prog.Gradient(bs[l])
			if e := relErr(gotW, wantW); e > 1e-5 {
				t.Errorf("step %d: layer %d weight gradient differs by %.2g relative", step, l, e)
			}
			if e := relErr(gotB, wantB); e > 1e-5 {
				t.Errorf("step %d: layer %d bias gradient differs by %.2g relative", step, l, e)
			}
			// Stash the oracle's gradients for its block's update below.
			o.gradW[l] = dense(wantW, m.dim, m.dim)
			o.gradB[l] = dense(wantB, m.dim)
		}
		for b := range m.layers / m.perBlock {
			layers := []int{2 * b, 2*b + 1}
			sumSquares := 0.0
			for _, l := range layers {
				sumSquares += hostmath.SumSquares(o.gradW[l].Data().([]float32)) + hostmath.SumSquares(o.gradB[l].Data().([]float32))
			}
			scale := hostmath.ClipScale(sumSquares, 1)
			for _, l := range layers {
				hostmath.AdamStep(hostmath.DefaultAdam(), oracleW[l], o.gradW[l].Data().([]float32), moments[l][0], moments[l][1], scale, step)
				hostmath.AdamStep(hostmath.DefaultAdam(), oracleB[l], o.gradB[l].Data().([]float32), moments[l][2], moments[l][3], scale, step)
			}
		}
	}
	for l := range m.layers {
		gotW, _ := prog.Read(ws[l])
		if e := relErr(gotW, oracleW[l]); e > 1e-5 {
			t.Errorf("after 3 steps: layer %d weights differ by %.2g relative", l, e)
		}
	}
}

// TestLivenessKeepsResults trains the same model twice, once keeping every
// gradient and once letting the schedule reuse gradient memory after each
// block's update: the parameters must be bit-identical after three steps.
func TestLivenessKeepsResults(t *testing.T) {
	m := smallLinear{batch: 2, dim: 6, layers: 6, perBlock: 2}
	init := m.init(rand.New(rand.NewPCG(5, 6)))
	xData := make([]float32, m.batch*m.dim)
	for i := range xData {
		xData[i] = float32(i%5) / 5
	}
	final := make([][][]float32, 2)
	for run, retain := range []bool{true, false} {
		x, target, ws, bs, prog := m.loadTraining(t, retain)
		prog.SetInput(x, xData)
		prog.SetInput(target, xData)
		for l := range m.layers {
			prog.SetInput(ws[l], init[l].w)
			prog.SetInput(bs[l], init[l].b)
		}
		for range 3 {
			if _, err := prog.Run(); err != nil {
				t.Fatal(err)
			}
		}
		for l := range m.layers {
			w, _ := prog.Read(ws[l])
			final[run] = append(final[run], w)
		}
	}
	for l := range final[0] {
		for i := range final[0][l] {
			if final[0][l][i] != final[1][l][i] {
				t.Fatalf("layer %d weight %d: %g with gradients kept, %g with memory reused", l, i, final[0][l][i], final[1][l][i])
			}
		}
	}
}
