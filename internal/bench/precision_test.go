package bench

import (
	"fmt"
	"math"
	"testing"

	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/levers"
)

// TestPrecisionIsBitIdenticalAcrossModes trains and evaluates every
// workload at small scale in bf16 and fp16 in every placement, paged,
// hybrid and managed, and on the host: the 16-bit values are rounded by
// the same conversions and multiplied by the same kernels whatever the
// placement, so the losses and the final weights (the float32 masters)
// must be the resident run's bit for bit, and the measured peak the plan's.
func TestPrecisionIsBitIdenticalAcrossModes(t *testing.T) {
	for name, opts := range smallWorkloads(t) {
		placements := leverPlacements(t, opts)
		for _, prec := range []levers.Precision{levers.BF16, levers.FP16} {
			for _, task := range []Task{TaskTrain, TaskEval} {
				opts := opts
				opts.Precision = prec
				want := trainOnDevice(t, opts, task, engine.Resident{}, 3, device.NewSim(64<<20, nil))
				for pname, pl := range placements {
					t.Run(fmt.Sprintf("%s/%s/%s/%s", name, prec, task, pname), func(t *testing.T) {
						dev := device.Device(device.NewSim(64<<20, nil))
						if pname == "cpu" {
							dev = device.NewHost()
						}
						got := trainOnDevice(t, opts, task, pl, 3, dev)
						got.checkSame(t, want, "resident", "the resident run's")
						switch {
						case pname == "cpu":
						case pl.PageBytes() > 0 && got.peak > got.plan.Device:
							// Pages no kernel touches never migrate.
							t.Errorf("measured peak %d, over the plan's %d", got.peak, got.plan.Device)
						case pl.PageBytes() == 0 && got.peak != got.plan.Device:
							t.Errorf("measured peak %d, plan %d", got.peak, got.plan.Device)
						}
					})
				}
			}
		}
	}
}

// precisionTolerance is how far a 16-bit run's losses and evaluation
// outputs may be from float32's, relative to float32's. Every product's
// operands are rounded to 16 bits (a relative error of at most 2^-9 for
// bf16's 8 significant bits, 2^-12 for fp16's 11) and every product's
// and activation's result again; the errors of independent roundings
// mostly cancel in the sums, and over the workloads' depths (up to 14
// blocks) and 5 epochs the measured drift is at most 0.26% for bf16 and
// 0.04% for fp16. The bounds are about four times that. resnet's training
// loss is the mean square of a residual that training makes small (3e-5
// of a loss against outputs of order 1e-2): an error in the outputs is
// divided by the residual's smallness, and its measured drift is 2.1%
// and 0.39%: resnetTrainFactor times the bounds. A conversion that
// truncates instead of rounding, or reads the wrong format, moves the
// losses by far more.
var precisionTolerance = map[levers.Precision]float64{levers.BF16: 0.01, levers.FP16: 0.002}

// resnetTrainFactor widens precisionTolerance for resnet's training loss.
const resnetTrainFactor = 8

// TestPrecisionAgreesWithFP32 trains every workload for 5 epochs at small
// scale in bf16 and fp16, and evaluates it, on the host: each step's loss
// (the evaluation's output) must be within precisionTolerance of fp32's,
// and training must lower the loss as fp32's does.
func TestPrecisionAgreesWithFP32(t *testing.T) {
	for name, opts := range smallWorkloads(t) {
		steps := 5 * opts.Samples / opts.Batch
		for _, task := range []Task{TaskTrain, TaskEval} {
			want := trainOnDevice(t, opts, task, engine.Resident{}, steps, device.NewHost())
			for _, prec := range []levers.Precision{levers.BF16, levers.FP16} {
				t.Run(fmt.Sprintf("%s/%s/%s", name, task, prec), func(t *testing.T) {
					opts := opts
					opts.Precision = prec
					got := trainOnDevice(t, opts, task, engine.Resident{}, steps, device.NewHost())
					tol := precisionTolerance[prec]
					if name == "resnet" && task == TaskTrain {
						tol *= resnetTrainFactor
					}
					for i, w := range want.losses {
						if d := math.Abs(float64(got.losses[i]-w)) / math.Abs(float64(w)); !(d <= tol) {
							t.Fatalf("step %d: %v, fp32 %v: %.2g apart, more than %g", i, got.losses[i], w, d, tol)
						}
					}
					if task == TaskTrain && !(got.losses[len(got.losses)-1] < got.losses[0]) {
						t.Errorf("the loss went from %v to %v", got.losses[0], got.losses[len(got.losses)-1])
					}
				})
			}
		}
	}
}
