package bench

import (
	"fmt"
	"math"
	"testing"

	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
)

// TestGradAccumMatchesOneBatch trains every small workload for three
// steps with --grad-accum 2 and without: a step of two micro-batches
// must leave the losses and the weights of one batch of both, to
// float32 rounding. Adam's ε is 1 and the clip off, so that the update
// follows the gradient's size (with ε 1e-8 and a clip Adam's step hardly
// depends on it): a gradient that forgot the 1/K of the mean, or a
// micro-batch that overwrote the other's instead of adding to it, moves
// the weights apart by the size of a step.
func TestGradAccumMatchesOneBatch(t *testing.T) {
	for name, opts := range smallWorkloads(t) {
		t.Run(name, func(t *testing.T) {
			opts.Adam, opts.ClipNorm = hostmath.Adam{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1}, 1e30
			start := trainOn(t, opts, TaskTrain, engine.Resident{}, 0)
			want := trainOn(t, opts, TaskTrain, engine.Resident{}, 3)
			opts.GradAccum = 2
			got := trainOn(t, opts, TaskTrain, engine.Resident{}, 3)
			for i := range want.losses {
				if d := math.Abs(float64(got.losses[i] - want.losses[i])); d > 1e-5*math.Abs(float64(want.losses[i])) {
					t.Errorf("step %d: loss %v with two micro-batches, %v with one batch", i, got.losses[i], want.losses[i])
				}
			}
			// The weights' distance apart, against the distance the three
			// steps moved them.
			var apart, moved float64
			for i := range want.params {
				for j := range want.params[i] {
					apart += sq(float64(got.params[i][j] - want.params[i][j]))
					moved += sq(float64(want.params[i][j] - start.params[i][j]))
				}
			}
			if moved == 0 || math.Sqrt(apart/moved) > 1e-3 {
				t.Errorf("weights %.3g apart after moving %.3g (relative %.3g), want within float32 rounding", math.Sqrt(apart), math.Sqrt(moved), math.Sqrt(apart/moved))
			}
		})
	}
}

func sq(x float64) float64 { return x * x }

// TestGradAccumIsBitIdenticalAcrossModes trains every small workload with
// --grad-accum 2 in every placement and on the host (cpu mode), in fp32,
// bf16 and fp16 (its loss scale kept over a step's micro-batches): the
// accumulators are added in the same order everywhere, so
// the losses and the weights must be bit-identical to every block
// resident's, and the measured peak must be the plan's.
func TestGradAccumIsBitIdenticalAcrossModes(t *testing.T) {
	for name, opts := range smallWorkloads(t) {
		opts.GradAccum = 2
		for _, p := range []levers.Precision{levers.FP32, levers.BF16, levers.FP16} {
			opts.Precision = p
			want := trainOn(t, opts, TaskTrain, engine.Resident{}, 3)
			for pname, pl := range leverPlacements(t, opts) {
				t.Run(fmt.Sprintf("%s/%s/%s", name, p, pname), func(t *testing.T) {
					dev := device.Device(device.NewSim(64<<20, nil))
					if pname == "cpu" {
						dev = device.NewHost()
					}
					got := trainOnDevice(t, opts, TaskTrain, pl, 3, dev)
					got.checkSame(t, want, "every block resident", "every block resident's")
					if pname != "cpu" && got.peak != got.plan.Device {
						t.Errorf("measured peak %d, plan %d", got.peak, got.plan.Device)
					}
				})
			}
		}
	}
}
