package models

import (
	"testing"

	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/hostmath"
)

// loadOnHost compiles spec and loads it on the host with every block
// resident; the program is closed when the test ends.
func loadOnHost(t *testing.T, spec engine.Spec) *engine.Program {
	t.Helper()
	plan, err := engine.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := plan.Load(device.NewHost(), engine.Resident{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	return prog
}

// trainFirstBatch trains c's model, initialised from seed 1, on the first
// batch of its data for steps steps with the reference Adam at rate lr,
// and returns the losses.
func trainFirstBatch(t *testing.T, c Config, lr float64, steps int) []float64 {
	t.Helper()
	m, err := c.Build()
	if err != nil {
		t.Fatal(err)
	}
	adam := hostmath.DefaultAdam()
	adam.LR = lr
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
	var losses []float64
	for range steps {
		loss, err := prog.Run()
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, float64(loss))
	}
	return losses
}
