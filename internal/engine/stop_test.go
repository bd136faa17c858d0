package engine

import (
	"context"
	"errors"
	"testing"

	"gorgonia.org/gorgonia"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/hostmath"
)

// doneAfter is a context that is done after its first n calls of Err:
// the n+1-th check of whoever reads it finds it cancelled.
type doneAfter struct {
	context.Context
	n int
}

func (c *doneAfter) Err() error {
	if c.n <= 0 {
		return context.Canceled
	}
	c.n--
	return nil
}

// TestLoadContextStops cancels LoadContext's context at each of the
// load's checks in turn (issue 44 item 5: a full-depth load on sim faults
// gigabytes in for tens of seconds, deaf to a signal): the load stops
// there with the context's error and leaves nothing held on the device;
// once one check more lets it finish, Run stops before its first step
// with that error, moving nothing, and a context that ends after the
// first step stops Run at the second (a step of a large model is a
// fraction of a second, its whole batch a minute). Resident, paged (cache slots, host
// masters and the optimizer's host state) and hybrid placements.
func TestLoadContextStops(t *testing.T) {
	m := smallLinear{batch: 2, dim: 8, layers: 4, perBlock: 1}
	for _, tt := range []struct {
		name string
		pl   Placement
	}{
		{"resident", Resident{}},
		{"paged, optimizer on host", Paged{Cache: cache.Config{Policy: cache.Auto, Window: 2, OptimizerOnHost: true}}},
		{"hybrid", Hybrid{Blocks: []Where{OnHost, OnDevice, InCache, InCache}, Cache: cache.Config{Policy: cache.Window, Window: 1}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, x, target, loss, blocks, _, _ := m.buildProject()
			sched, err := Compile(Spec{Inputs: []*gorgonia.Node{x, target}, Blocks: blocks, Output: loss, Train: true,
				Optimizer: hostmath.DefaultAdam(), ClipNorm: 1})
			if err != nil {
				t.Fatal(err)
			}
			stops := 0
			for n := 0; ; n++ {
				dev := device.NewSim(1<<30, nil)
				ctx := &doneAfter{Context: context.Background(), n: n}
				prog, err := sched.LoadContext(ctx, dev, tt.pl)
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						t.Fatalf("stopped at check %d: %v, want the context's error", n, err)
					}
					if held := dev.Stats().AllocatedBytes; held != 0 {
						t.Errorf("stopped at check %d: %d bytes still held on the device", n, held)
					}
					stops++
					continue
				}
				if stops == 0 {
					t.Fatal("the load never checked its context")
				}
				ran := dev.Stats()
				_, err = prog.Run()
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Run after the context ended: %v, want the context's error", err)
				}
				if after := dev.Stats(); after.PeakBytes != ran.PeakBytes || after.UploadBytes != ran.UploadBytes {
					t.Errorf("Run after the context ended moved memory: %+v, then %+v", ran, after)
				}
				prog.Close()
				// The load's n checks, Run's own and its first step's:
				// the second step finds the context done.
				prog, err = sched.LoadContext(&doneAfter{Context: context.Background(), n: n + 2}, device.NewSim(1<<30, nil), tt.pl)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := prog.Run(); !errors.Is(err, context.Canceled) {
					t.Errorf("Run with the context ending after its first step: %v, want the context's error", err)
				}
				prog.Close()
				return
			}
		})
	}
}
