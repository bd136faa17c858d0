package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/hostmath"
)

// TestClipEngagesAgainstTapeMachine trains with a clip norm (1e-5) far below the
// gradients' norms, resident and paged (both policies, and the optimizer on
// the host), against gorgonia's TapeMachine with the clip and Adam applied
// by the test: the gradients and, after every step, every block's
// parameters must agree within 1e-5 relative. The oracle computes the clip
// factor itself (PyTorch's min(1, c/(‖g‖+1e-6)) per block) and checks that
// every block's norm exceeded the clip norm, so the clip did engage. Adam's
// ε is large against the clipped gradients so that its update scales with
// the gradient: an unclipped, or globally clipped, update moves the
// parameters far more.
func TestClipEngagesAgainstTapeMachine(t *testing.T) {
	const clip = 1e-5
	adam := hostmath.Adam{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-3}
	m := smallLinear{batch: 3, dim: 8, layers: 4, perBlock: 2}
	for _, pl := range []Placement{
		Resident{},
		Paged{Cache: cache.Config{Policy: cache.Window, Window: 1}},
		Paged{Cache: cache.Config{Policy: cache.Auto, Window: 1}},
		Paged{Cache: cache.Config{Policy: cache.Auto, OptimizerOnHost: true}},
	} {
		t.Run(fmt.Sprintf("paged=%v/%s-%d/host-optimizer=%v", isPaged(pl), cacheOf(pl).Policy, cacheOf(pl).Window, cacheOf(pl).OptimizerOnHost), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			init := m.init(rng)
			xData := make([]float32, m.batch*m.dim)
			for i := range xData {
				xData[i] = rng.Float32()
			}
			_, x, target, loss, blocks, ws, bs := m.buildProject()
			sched, err := Compile(Spec{Inputs: []*gorgonia.Node{x, target}, Blocks: blocks, Output: loss, Train: true,
				Optimizer: adam, ClipNorm: clip, RetainGradients: true})
			if err != nil {
				t.Fatal(err)
			}
			prog, err := sched.Load(device.NewHost(), pl)
			if err != nil {
				t.Fatal(err)
			}
			defer prog.Close()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(prog.SetInput(x, xData))
			must(prog.SetInput(target, xData))
			for l := range m.layers {
				must(prog.SetInput(ws[l], init[l].w))
				must(prog.SetInput(bs[l], init[l].b))
			}

			o := m.buildOracle(t)
			oracleW := make([][]float32, m.layers)
			oracleB := make([][]float32, m.layers)
			moments := make([][4][]float32, m.layers)
			for l := range m.layers {
				oracleW[l] = append([]float32(nil), init[l].w...)
				oracleB[l] = append([]float32(nil), init[l].b...)
				moments[l] = [4][]float32{make([]float32, m.dim*m.dim), make([]float32, m.dim*m.dim), make([]float32, m.dim), make([]float32, m.dim)}
			}
			for step := 1; step <= 3; step++ {
				got, err := prog.Run()
				must(err)
				vm := gorgonia.NewTapeMachine(o.g)
				must(gorgonia.Let(o.x, dense(xData, m.batch, m.dim)))
				must(gorgonia.Let(o.target, dense(xData, m.batch, m.dim)))
				for l := range m.layers {
					must(gorgonia.Let(o.wts[l], dense(transpose(oracleW[l], m.dim), m.dim, m.dim)))
					must(gorgonia.Let(o.bs[l], dense(oracleB[l], m.dim)))
				}
				must(vm.RunAll())
				vm.Close()
				want := o.lossValue.Data().(float32)
				if e := math.Abs(float64(got-want)) / math.Abs(float64(want)); e > 1e-5 {
					t.Errorf("step %d: loss %g, oracle %g", step, got, want)
				}
				gradW := make([][]float32, m.layers)
				gradB := make([][]float32, m.layers)
				for l := range m.layers {
					gradW[l] = transpose(o.gradW[l].Data().([]float32), m.dim)
					gradB[l] = append([]float32(nil), o.gradB[l].Data().([]float32)...)
					gotW, err := prog.Gradient(ws[l])
					must(err)
					gotB, err := prog.Gradient(bs[l])
					must(err)
					if e := relErr(gotW, gradW[l]); e > 1e-5 {
						t.Errorf("step %d: layer %d weight gradient differs by %.2g relative", step, l, e)
					}
					if e := relErr(gotB, gradB[l]); e > 1e-5 {
						t.Errorf("step %d: layer %d bias gradient differs by %.2g relative", step, l, e)
					}
				}
				for b := range m.layers / m.perBlock {
					var sumSquares float64
					for l := b * m.perBlock; l < (b+1)*m.perBlock; l++ {
						for _, g := range append(append([]float32(nil), gradW[l]...), gradB[l]...) {
							sumSquares += float64(g) * float64(g)
						}
					}
					norm := math.Sqrt(sumSquares)
					if norm <= 100*clip {
						t.Fatalf("step %d block %d: gradient norm %g is not far above the clip norm %g: the clip would not engage", step, b, norm, clip)
					}
					scale := min(1, clip/(norm+1e-6))
					for l := b * m.perBlock; l < (b+1)*m.perBlock; l++ {
						hostmath.AdamStep(adam, oracleW[l], gradW[l], moments[l][0], moments[l][1], scale, step)
						hostmath.AdamStep(adam, oracleB[l], gradB[l], moments[l][2], moments[l][3], scale, step)
					}
				}
				for l := range m.layers {
					gotW, err := prog.Read(ws[l])
					must(err)
					gotB, err := prog.Read(bs[l])
					must(err)
					if e := relErr(gotW, oracleW[l]); e > 1e-5 {
						t.Errorf("step %d: block %d layer %d weights differ by %.2g relative", step, l/m.perBlock, l, e)
					}
					if e := relErr(gotB, oracleB[l]); e > 1e-5 {
						t.Errorf("step %d: block %d layer %d biases differ by %.2g relative", step, l/m.perBlock, l, e)
					}
				}
			}
		})
	}
}
