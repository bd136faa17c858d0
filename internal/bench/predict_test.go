package bench

import (
	"context"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/levers"
	"gpuz/internal/models"
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

	gpu, host := referenceProfiles(t)
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

	plan, err := PlanMemory(opts, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, mp := range plan.Modes {
		if mp.Prediction == nil {
			t.Errorf("plan of %s %s: no prediction", mp.Mode, cacheOf(mp.Placement).Policy)
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
	window := predictEpoch(work, 3, copies, engine.Paged{Cache: cache.Config{Policy: cache.Window}}, gpu)
	auto := predictEpoch(work, 3, copies, engine.Paged{Cache: cache.Config{Policy: cache.Auto}}, gpu)
	resident := predictEpoch(work, 3, copies, engine.Resident{}, gpu)
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
			times = append(times, e.Duration())
		}
		slices.Sort(times)
		median := times[len(times)/2]
		b.ReportMetric(float64(median)/float64(m.Prediction.Bound), "measured/bound")
	}
}

// TestRunPredictionIsPerEpoch runs the small linear workload with epochs
// of 1, 2 and 4 batches on sim:rtx4060-laptop, the cpu mode on a host
// profile, under every cache policy (window, window-paged, auto, auto with
// the optimizer on the host): the prediction a run attaches is an epoch's,
// so each of its times is the one-batch epoch's times the batches — not a
// batch's whatever the epoch, nor the batches counted twice. Every time is
// linear in the batches: the kernels, the launches and the copies of an
// epoch after the first all come once per batch.
func TestRunPredictionIsPerEpoch(t *testing.T) {
	gpu, host := referenceProfiles(t)
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
				cfg := *opts.Workload.(*models.LinearConfig)
				cfg.Samples = batches * cfg.Batch
				opts.Workload, opts.Samples = &cfg, cfg.Samples
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

// referenceProfiles returns the reference's GPU and host profiles:
// rtx4060-laptop and cpu-i7-13700h.
func referenceProfiles(t *testing.T) (gpu, host perfmodel.Profile) {
	t.Helper()
	gpu, err := perfmodel.Lookup("rtx4060-laptop")
	if err != nil {
		t.Fatal(err)
	}
	if host, err = perfmodel.LookupHost("cpu-i7-13700h"); err != nil {
		t.Fatal(err)
	}
	return gpu, host
}

// TestPlannerMatchesPlanMemory plans the small linear workload's modes on
// sim:rtx4060-laptop with the reference host profile both ways: each of
// PlanMemory's rows (every cache policy's and recompute setting's among
// them, at each precision) is what one Planner gives for the same mode
// and configuration, footprint, copies and prediction included, the
// memory picture's timeline excepted.
func TestPlannerMatchesPlanMemory(t *testing.T) {
	for _, task := range []Task{TaskTrain, TaskEval} {
		opts := smallLinearRun(t, task, ModeCUDA, ModeCache, ModeManaged, ModeCPU)
		gpu, host := referenceProfiles(t)
		opts.NewGPU = func() (device.Device, error) { return device.NewSimProfile(gpu, nil), nil }
		opts.HostProfile = &host
		opts.Cache = cache.Config{Policy: cache.Window, Window: 2}
		p, err := NewPlanner(opts)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		for _, precision := range levers.Precisions() {
			opts.Precision = precision
			plan, err := PlanMemory(opts, PlanOptions{Recomputes: levers.Recomputes()})
			if err != nil {
				t.Fatal(err)
			}
			checkPlannerRows(t, p, plan)
		}
	}
}

// checkPlannerRows checks that p plans each row of plan as PlanMemory did.
func checkPlannerRows(t *testing.T, p *Planner, plan MemoryPlan) {
	t.Helper()
	for _, want := range plan.Modes {
		cfg := Config{Placements: Placements{Cache: cacheOf(want.Placement)}, Set: levers.Set{Recompute: want.Recompute, Precision: want.Precision}}
		if want.Mode != ModeCache {
			cfg.Cache = cache.Config{}
		}
		got, err := p.Plan(want.Mode, cfg, want.DeviceFree, true)
		if err != nil {
			t.Fatal(err)
		}
		got.HostAvailable, want.HostAvailable = 0, 0 // read at different times
		want.Timeline = nil                          // the picture's, which a search leaves out
		if want.Mode == ModeCPU {
			got.DeviceFree, want.DeviceFree = 0, 0 // the host's, read at different times
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s %s recompute %s %s: planner\n%+v\nPlanMemory\n%+v", plan.Header.Task, want.Mode, cacheOf(want.Placement).Policy,
				want.Recompute, want.Precision, got, want)
		}
	}
}

// TestTinyLinearRunsFasterOnTheHost plans issue 22's iris-sized workload
// (linear train, 2 blocks of 2 layers of 16, 150 samples in one batch) on
// the reference's GPU and CPU profiles: its 41 kernels are too small for
// either device's rates to matter, so each kernel's fixed cost decides,
// and a host call (HostKernelOverhead) costs a tenth of a GPU launch
// (GPULaunchOverhead): the cpu mode's model time must come out below the
// cuda mode's, from the profiles alone.
func TestTinyLinearRunsFasterOnTheHost(t *testing.T) {
	gpu, host := referenceProfiles(t)
	opts := smallLinearRun(t, TaskTrain, ModeCUDA, ModeCPU)
	cfg := *opts.Workload.(*models.LinearConfig)
	cfg.Blocks, cfg.LayersPerBlock, cfg.Dims, cfg.Samples, cfg.Batch = 2, 2, 16, 150, 150
	opts.Workload, opts.Samples, opts.Batch = &cfg, cfg.Samples, cfg.Batch
	opts.NewGPU = func() (device.Device, error) { return device.NewSimProfile(gpu, nil), nil }
	opts.HostProfile = &host
	plan, err := PlanMemory(opts, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	model := map[Mode]time.Duration{}
	for _, mp := range plan.Modes {
		if mp.Prediction == nil {
			t.Fatalf("%s: no prediction", mp.Mode)
		}
		model[mp.Mode] = mp.Prediction.Model
	}
	if model[ModeCPU] >= model[ModeCUDA] {
		t.Errorf("tiny linear train: cpu predicted %v, cuda %v; want the cpu faster", model[ModeCPU], model[ModeCUDA])
	}
}

// TestPredictionCarriesItsEpoch: a run's prediction carries the epoch's
// kernels and copies as perfmodel counts them, which predict it again to
// the same times (gpuz calibrate re-predicts held-out runs from them).
func TestPredictionCarriesItsEpoch(t *testing.T) {
	gpu, host := referenceProfiles(t)
	opts := smallLinearRun(t, TaskTrain, ModeCache, ModeCPU)
	opts.Epochs, opts.Cache = 2, cache.Config{Policy: cache.Window, Window: 1}
	opts.NewGPU = func() (device.Device, error) { return device.NewSimProfile(gpu, nil), nil }
	opts.HostProfile = &host
	for _, m := range run(t, opts).Modes {
		p := m.Prediction
		if p == nil || len(p.Kernels) == 0 || (m.Mode == ModeCache && p.Copies.H2DBytes == 0) {
			t.Fatalf("%s: prediction %+v, want its kernels (and the cache mode's copies)", m.Mode, p)
		}
		on := map[Mode]perfmodel.Profile{ModeCache: gpu, ModeCPU: host}[m.Mode]
		if again := perfmodel.Predict(p.Kernels, p.Copies, on, on.Efficiency()); again != p.Prediction {
			t.Errorf("%s: predicted again from its epoch %+v, want %+v", m.Mode, again, p.Prediction)
		}
	}
}
