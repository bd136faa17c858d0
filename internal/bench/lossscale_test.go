package bench

import (
	"testing"

	"gpuz/internal/levers"
)

// TestLossScaleOnlyFP16: fp16 training scales the loss (its range is
// narrow: small gradients would flush to zero), bf16 has float32's range
// and does not, as PyTorch's autocast uses a GradScaler with fp16 only; a
// run reports the scale only where one was used. The linear workload at
// small scale, cuda on the simulated device and cpu, trained 2 epochs.
func TestLossScaleOnlyFP16(t *testing.T) {
	for _, tc := range []struct {
		prec   levers.Precision
		scales bool
	}{{levers.FP32, false}, {levers.BF16, false}, {levers.FP16, true}} {
		opts := smallLinearRun(t, TaskTrain, ModeCUDA, ModeCPU)
		opts.Precision, opts.Epochs = tc.prec, 2
		for _, m := range run(t, opts).Modes {
			if (m.LossScale > 0) != tc.scales || m.LossScale < 0 {
				t.Errorf("%s, %s: loss scale %g, want one: %t", tc.prec, m.Mode, m.LossScale, tc.scales)
			}
		}
	}
}
