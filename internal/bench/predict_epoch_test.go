package bench

import (
	"math"
	"testing"
	"time"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/models"
	"gpuz/internal/perfmodel"
)

// TestRunPredictionIsPerEpoch runs the small linear workload with epochs
// of 1, 2 and 4 batches on sim:rtx4060-laptop, the cpu mode on a host
// profile, under every cache policy (window, window-paged, auto, auto with
// the optimizer on the host): the prediction a run attaches is an epoch's,
// so each of its times is the one-batch epoch's times the batches — not a
// batch's whatever the epoch, nor the batches counted twice. Every time is
// linear in the batches: the kernels, the launches and the copies of an
// epoch after the first all come once per batch.
func TestRunPredictionIsPerEpoch(t *testing.T) {
	gpu, err := perfmodel.Lookup("rtx4060-laptop")
	if err != nil {
		t.Fatal(err)
	}
	host, err := perfmodel.LookupHost("cpu-i7-13700h")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode Mode
		cfg  cache.Config
	}{
		{ModeCUDA, cache.Config{}},
		{ModeCPU, cache.Config{}},
		{ModeCache, cache.Config{Policy: cache.Window, Window: 1}},
		{ModeCache, cache.Config{Policy: cache.WindowPaged, Window: 1}},
		{ModeCache, cache.Config{Policy: cache.Auto}},
		{ModeCache, cache.Config{Policy: cache.Auto, OptimizerOnHost: true}},
	} {
		name := string(c.mode)
		if c.cfg.Policy != "" {
			name += " " + string(c.cfg.Policy)
		}
		if c.cfg.OptimizerOnHost {
			name += " optimizer on host"
		}
		t.Run(name, func(t *testing.T) {
			var one perfmodel.Prediction
			for _, batches := range []int{1, 2, 4} {
				opts := smallLinearRun(t, TaskTrain, c.mode)
				cfg := opts.Workload.(models.LinearConfig)
				cfg.Samples = batches * cfg.Batch
				opts.Workload, opts.Samples = cfg, cfg.Samples
				opts.Epochs, opts.Warmup = 2, 1
				opts.Cache = c.cfg
				opts.NewGPU = func() (device.Device, error) { return device.NewSimProfile(gpu, nil), nil }
				opts.HostProfile = &host
				m := run(t, opts).Modes[0]
				if m.Status.Kind != StatusOK || m.Prediction == nil {
					t.Fatalf("%d batches: %s, prediction %v", batches, m.Status, m.Prediction)
				}
				p := m.Prediction.Prediction
				if batches == 1 {
					one = p
					if p.Bound <= 0 || p.Model <= 0 {
						t.Fatalf("one batch: predicted %+v, want positive times", p)
					}
					continue
				}
				for _, part := range []struct {
					name      string
					got, base time.Duration
				}{
					{"bound", p.Bound, one.Bound}, {"model", p.Model, one.Model}, {"compute", p.Compute, one.Compute},
					{"memory", p.Memory, one.Memory}, {"launch", p.Launch, one.Launch}, {"copy", p.Copy, one.Copy},
				} {
					// Durations are whole nanoseconds: allow a nanosecond
					// of rounding for each batch.
					want := time.Duration(batches) * part.base
					if math.Abs(float64(part.got-want)) > float64(batches) {
						t.Errorf("%d batches: %s %v, want %d × the one-batch epoch's %v = %v", batches, part.name, part.got, batches, part.base, want)
					}
				}
			}
		})
	}
}
