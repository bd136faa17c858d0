package engine_test

import (
	"testing"

	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/models"
)

// compileModel compiles a workload's graph for training or evaluation, as
// bench does; nothing is allocated.
func compileModel(t *testing.T, c models.Config, train bool) (*models.Model, *engine.Schedule) {
	t.Helper()
	return compileLever(t, c, train, levers.RecomputeNone)
}

// compileLever compiles a workload as compileModel does, with recompute
// setting r.
func compileLever(t *testing.T, c models.Config, train bool, r levers.Recompute) (*models.Model, *engine.Schedule) {
	t.Helper()
	m, err := c.Build()
	if err != nil {
		t.Fatal(err)
	}
	out := m.OutputMean
	if train {
		out = m.Loss
	}
	s, err := engine.Compile(engine.Spec{Inputs: m.Inputs(), Blocks: m.Blocks, Output: out, Train: train,
		Optimizer: hostmath.DefaultAdam(), ClipNorm: 1, Recompute: r})
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// loadModel compiles c for training or evaluation, loads it on dev under
// pl and draws its initial parameters. The caller closes the program.
func loadModel(t *testing.T, c models.Config, train bool, dev device.Device, pl engine.Placement) (*models.Model, *engine.Schedule, *engine.Program) {
	t.Helper()
	m, s := compileModel(t, c, train)
	prog, err := s.Load(dev, pl)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitParams(1, prog.SetInput); err != nil {
		prog.Close()
		t.Fatal(err)
	}
	return m, s, prog
}

// kernel returns the work of kernel name in w.
func kernel(w engine.Work, name string) engine.KernelWork {
	for _, k := range w.Kernels {
		if k.Name == name {
			return k
		}
	}
	return engine.KernelWork{Name: name}
}

// TestLinearWorkByHand checks Work for the full-scale linear workload
// (12 blocks × 10 Linear(2000→2000), batch 30, 60 samples) against figures
// derived by hand, from the graph alone: Compile makes no tensor, so this
// stays fast.
func TestLinearWorkByHand(t *testing.T) {
	c, err := models.LinearPreset("full")
	if err != nil {
		t.Fatal(err)
	}
	_, s := compileModel(t, &c, true)
	const layers, batch, dims, batches = 120, 30, 2000, 2
	product := int64(2 * batch * dims * dims) // one layer's GEMM, 2mnk
	w := s.Work()
	for _, tt := range []struct {
		name            string
		launches, flops int64
	}{
		// Each forward GEMM and its bias pass.
		{"Linear", layers, layers * (product + batch*dims)},
		// The first layer's input is data: its gradient is not computed.
		{"LinearInputGrad", layers - 1, (layers - 1) * product},
		{"LinearWeightGrad", layers, layers * product},
		{"LinearBiasGrad", layers, layers * batch * dims},
		{engine.KernelSumSquares, 2 * layers, 2 * layers * (dims*dims + dims)},
		{engine.KernelAdam, 2 * layers, 14 * layers * (dims*dims + dims)},
	} {
		if k := kernel(w, tt.name); k.Launches != tt.launches || k.FLOPs != tt.flops {
			t.Errorf("%s: %d launches, %d FLOPs; want %d, %d", tt.name, k.Launches, k.FLOPs, tt.launches, tt.flops)
		}
	}
	// The products per epoch: 57.6 GFLOP forward, twice that backward but
	// for the first layer's input gradient (0.24 GFLOP a batch, 0.48 an
	// epoch): 172.8 − 0.48 GFLOP.
	gemm := batches * (kernel(w, "Linear").FLOPs - layers*batch*dims + kernel(w, "LinearInputGrad").FLOPs + kernel(w, "LinearWeightGrad").FLOPs)
	if want := int64(172_800_000_000 - 480_000_000); gemm != want {
		t.Errorf("GEMM FLOPs per epoch = %d, want %d", gemm, want)
	}
	var sum engine.KernelWork
	for _, k := range w.Kernels {
		sum.Launches += k.Launches
		sum.FLOPs += k.FLOPs
		sum.Bytes += k.Bytes
	}
	if sum.Launches != w.Launches || sum.FLOPs != w.FLOPs || sum.Bytes != w.Bytes {
		t.Errorf("totals %d launches, %d FLOPs, %d bytes; the kernels sum to %+v", w.Launches, w.FLOPs, w.Bytes, sum)
	}
	// Evaluation is the forward pass alone.
	_, eval := compileModel(t, &c, false)
	if k := kernel(eval.Work(), "Linear"); k.FLOPs != layers*(product+batch*dims) {
		t.Errorf("eval Linear FLOPs = %d", k.FLOPs)
	}
	if k := kernel(eval.Work(), engine.KernelAdam); k.Launches != 0 {
		t.Errorf("eval runs %d Adam updates", k.Launches)
	}
}
