package bench

import (
	"context"
	"slices"
	"testing"
	"time"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/perfmodel"
)

// TestPredictionsNeedAProfile runs the small linear workload in every mode
// twice: on a simulated device of a size and without a host profile no
// mode is predicted; on sim:rtx4060-laptop with a host profile every mode
// is, on its own profile, with a bound no more than the model time, and
// so is every row of the plan.
func TestPredictionsNeedAProfile(t *testing.T) {
	opts := smallLinearRun(t, TaskEval, ModeCUDA, ModeCache, ModeCPU)
	opts.Epochs, opts.Cache = 2, cache.Config{Policy: cache.Window, Window: 1}
	for _, m := range run(t, opts).Modes {
		if m.Prediction != nil {
			t.Errorf("%s on %s without a profile: predicted %+v", m.Mode, m.Device, *m.Prediction)
		}
	}

	gpu, err := perfmodel.Lookup("rtx4060-laptop")
	if err != nil {
		t.Fatal(err)
	}
	host, err := perfmodel.LookupHost("cpu-i7-13700h")
	if err != nil {
		t.Fatal(err)
	}
	opts.NewGPU = func() (device.Device, error) { return device.NewSimProfile(gpu, nil), nil }
	opts.HostProfile = &host
	want := map[Mode]string{ModeCUDA: "rtx4060-laptop", ModeCache: "rtx4060-laptop", ModeCPU: "cpu-i7-13700h"}
	for _, m := range run(t, opts).Modes {
		if m.Status.Kind != StatusOK {
			t.Fatalf("%s: %s", m.Mode, m.Status)
		}
		p := m.Prediction
		if p == nil {
			t.Errorf("%s on %s: no prediction", m.Mode, m.Device)
			continue
		}
		if p.Profile != want[m.Mode] || p.Bound <= 0 || p.Model < p.Bound {
			t.Errorf("%s: predicted %+v, want on %s with 0 < bound <= model", m.Mode, *p, want[m.Mode])
		}
	}

	plan, err := PlanMemory(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, mp := range plan.Modes {
		if mp.Prediction == nil {
			t.Errorf("plan of %s %s: no prediction", mp.Mode, mp.Placement.Cache.Policy)
		}
	}
}

// TestPredictEpochCopies checks predictEpoch's conversion of an epoch: the
// work is counted batches times, and the window policy's copies are
// pageable (slower on a GPU profile) where the same bytes under the auto
// policy or a resident placement are pinned.
func TestPredictEpochCopies(t *testing.T) {
	gpu, err := perfmodel.Lookup("rtx4060-laptop")
	if err != nil {
		t.Fatal(err)
	}
	work := engine.Work{Kernels: []engine.KernelWork{{Name: "Linear", Launches: 2, FLOPs: 1e9, Bytes: 1e6}}}
	copies := engine.Copies{UploadBytes: 1 << 30, DownloadBytes: 1 << 30, Count: 10}
	window := predictEpoch(work, 3, copies, engine.Placement{Paged: true, Cache: cache.Config{Policy: cache.Window}}, gpu)
	auto := predictEpoch(work, 3, copies, engine.Placement{Paged: true, Cache: cache.Config{Policy: cache.Auto}}, gpu)
	resident := predictEpoch(work, 3, copies, engine.Placement{}, gpu)
	if window.Copy <= auto.Copy || auto.Copy != resident.Copy {
		t.Errorf("copies: window %v, auto %v, resident %v; want window's (pageable) slower, the others equal", window.Copy, auto.Copy, resident.Copy)
	}
	want := perfmodel.Predict([]perfmodel.Kernel{{Name: "Linear", Launches: 6, FLOPs: 3e9, Bytes: 3e6}},
		perfmodel.Copies{H2DBytes: 1 << 30, D2HBytes: 1 << 30, SyncBytes: 2 << 30, Count: 10}, gpu, perfmodel.DefaultEfficiency)
	if auto.Prediction != want || auto.Profile != "rtx4060-laptop" {
		t.Errorf("auto: %+v, want %+v on rtx4060-laptop", auto, want)
	}
}

// BenchmarkHostBoundAgainstRun sets the cpu mode's bound beside a real
// run: with the host as the profile (its SGEMM and memcpy rates as
// device.Measure times them), the roofline bound of an epoch of the small
// linear workload's training should be no more than the epochs' measured
// median. It reports the ratio (measured/bound, at least 1 when the bound
// holds) rather than asserting it: a busy machine slows the run, not the
// bound, and tests never assert on wall-clock time.
func BenchmarkHostBoundAgainstRun(b *testing.B) {
	opts := smallLinearRun(b, TaskTrain, ModeCPU)
	opts.applyThreads() // measure with the run's threads
	info, err := device.Measure(device.NewHost(), 256)
	if err != nil {
		b.Fatal(err)
	}
	host := perfmodel.HostProfile(info.GemmFLOPS, info.UploadPageable)
	opts.HostProfile = &host
	for b.Loop() {
		res, err := Run(context.Background(), opts)
		if err != nil {
			b.Fatal(err)
		}
		m := res.Modes[0]
		if m.Status.Kind != StatusOK || m.Prediction == nil {
			b.Fatalf("cpu: %s, prediction %v", m.Status, m.Prediction)
		}
		var times []time.Duration
		for _, e := range m.Timed() {
			times = append(times, e.Duration)
		}
		slices.Sort(times)
		median := times[len(times)/2]
		b.ReportMetric(float64(median)/float64(m.Prediction.Bound), "measured/bound")
	}
}
