package bench

import (
	"context"
	"math"
	"slices"
	"testing"

	"gpuz/internal/device"
	"gpuz/internal/hostmath"
	"gpuz/internal/models"
)

// smallLinearRun returns the options of the small linear workload run for
// task in modes, with the cuda and cache modes on a simulated device.
func smallLinearRun(t testing.TB, task Task, modes ...Mode) Options {
	t.Helper()
	cfg, err := models.LinearPreset(models.ScaleSmall)
	if err != nil {
		t.Fatal(err)
	}
	return Options{
		ModelName: "linear", Workload: &cfg, Task: task, Modes: modes,
		Samples: cfg.Samples, Batch: cfg.Batch, Epochs: cfg.Epochs, Warmup: 1,
		Adam: DefaultAdam(), ClipNorm: 1, Seed: 1, Threads: 1,
		NewGPU: func() (device.Device, error) { return device.NewSim(64<<20, nil), nil },
	}
}

// run runs opts, failing the test on an error.
func run(t *testing.T, opts Options) Result {
	t.Helper()
	res, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestDivergedModeKeepsEarlierEpochs makes the cpu mode's loss NaN at its
// third epoch's second batch: the mode ends diverged there with its first
// two epochs kept, and the cuda mode after it runs every epoch, ok.
func TestDivergedModeKeepsEarlierEpochs(t *testing.T) {
	opts := smallLinearRun(t, TaskTrain, ModeCPU, ModeCUDA)
	opts.batchHook = func(mode Mode, epoch, batch int, v float32) float32 {
		if mode == ModeCPU && epoch == 2 && batch == 1 {
			return float32(math.NaN())
		}
		return v
	}
	res := run(t, opts)
	cpu, cuda := res.Modes[0], res.Modes[1]
	if cpu.Status.Kind != StatusDiverged || cpu.Status.String() != "diverged: at epoch 2, batch 1" {
		t.Errorf("cpu status %q, want diverged: at epoch 2, batch 1", cpu.Status)
	}
	if len(cpu.Epochs) != 2 || cpu.Epochs[1].Index != 1 {
		t.Errorf("cpu kept %d epochs (%+v), want epochs 0 and 1", len(cpu.Epochs), cpu.Epochs)
	}
	for _, e := range cpu.Epochs {
		if diverged(float32(e.Value)) {
			t.Errorf("cpu kept epoch %d with value %g", e.Index, e.Value)
		}
	}
	if cpu.PeakDeviceBytes <= 0 {
		t.Errorf("cpu peak %d, want the memory it held", cpu.PeakDeviceBytes)
	}
	if cuda.Status.Kind != StatusOK || len(cuda.Epochs) != opts.Epochs {
		t.Errorf("cuda status %q with %d epochs, want ok with %d", cuda.Status, len(cuda.Epochs), opts.Epochs)
	}
}

// TestHugeLearningRateDiverges trains with --lr 1e30: after the first
// update the weights are so large that the loss overflows float32, and the
// mode ends diverged at the batch that saw it, not with a NaN mean loss.
func TestHugeLearningRateDiverges(t *testing.T) {
	opts := smallLinearRun(t, TaskTrain, ModeCPU)
	opts.Adam.LR = 1e30
	r := run(t, opts).Modes[0]
	if r.Status.Kind != StatusDiverged {
		t.Fatalf("status %q, want diverged", r.Status)
	}
	if r.Status.String() != "diverged: at epoch 0, batch 1" {
		t.Errorf("status %q, want diverged: at epoch 0, batch 1 (the first batch after the first update)", r.Status)
	}
	if len(r.Epochs) != 0 {
		t.Errorf("kept %d epochs, want none", len(r.Epochs))
	}
}

// TestAdamSettingsFromOptions trains with each of Adam's betas and its
// epsilon changed in the options, the learning rate kept: each run's
// losses differ from the default's, so the optimizer takes every setting
// from the options and none from a default elsewhere.
func TestAdamSettingsFromOptions(t *testing.T) {
	losses := func(a hostmath.Adam) []float64 {
		opts := smallLinearRun(t, TaskTrain, ModeCPU)
		opts.Epochs, opts.Warmup, opts.Adam = 2, 0, a
		r := run(t, opts).Modes[0]
		if r.Status.Kind != StatusOK {
			t.Fatalf("Adam %+v: status %q", a, r.Status)
		}
		var values []float64
		for _, e := range r.Epochs {
			values = append(values, float64(e.Value))
		}
		return values
	}
	base := losses(DefaultAdam())
	for _, tc := range []struct {
		name string
		set  func(*hostmath.Adam)
	}{
		{"beta1", func(a *hostmath.Adam) { a.Beta1 = 0.5 }},
		{"beta2", func(a *hostmath.Adam) { a.Beta2 = 0.5 }},
		{"eps", func(a *hostmath.Adam) { a.Eps = 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := DefaultAdam()
			tc.set(&a)
			if got := losses(a); slices.Equal(got, base) {
				t.Errorf("Adam %+v gave the default's losses %v", a, got)
			}
		})
	}
}

// infiniteSecondBatch is a workload whose second batch holds an infinite
// value: evaluating it gives an infinite or NaN output there.
type infiniteSecondBatch struct{ models.LinearConfig }

func (w infiniteSecondBatch) Data(seed uint64) models.Data {
	d := w.LinearConfig.Data(seed)
	d.Values[w.Batch*d.RowLen] = float32(math.Inf(1))
	return d
}

// TestEvalDivergesOnInfiniteData evaluates data with an infinite value in
// its second batch: eval ends diverged at epoch 0, batch 1.
func TestEvalDivergesOnInfiniteData(t *testing.T) {
	opts := smallLinearRun(t, TaskEval, ModeCPU)
	opts.Workload = &infiniteSecondBatch{*opts.Workload.(*models.LinearConfig)}
	r := run(t, opts).Modes[0]
	if r.Status.String() != "diverged: at epoch 0, batch 1" {
		t.Errorf("status %q, want diverged: at epoch 0, batch 1", r.Status)
	}
}

// TestEvalValueIndependentOfBatch evaluates the same samples in batches of
// 4 and of 2: the epoch's value is the mean output over the samples, so
// the two agree to float32 rounding (it used to be a sum over batches and
// doubled when the batch halved).
func TestEvalValueIndependentOfBatch(t *testing.T) {
	values := map[int]float64{}
	for _, batch := range []int{4, 2} {
		opts := smallLinearRun(t, TaskEval, ModeCPU)
		cfg := *opts.Workload.(*models.LinearConfig)
		cfg.Batch, opts.Batch = batch, batch
		opts.Workload = &cfg
		r := run(t, opts).Modes[0]
		if r.Status.Kind != StatusOK {
			t.Fatalf("batch %d: status %q", batch, r.Status)
		}
		values[batch] = float64(r.Epochs[len(r.Epochs)-1].Value)
	}
	if diff := math.Abs(values[4] - values[2]); diff > 1e-6*math.Abs(values[4]) || values[4] == 0 {
		t.Errorf("eval value %g at batch 4, %g at batch 2: want equal to float32 rounding", values[4], values[2])
	}
}

// TestCPUModeRecordsNoCopies runs cpu and cuda: the host copies nothing
// between devices, so cpu's epochs record no copies (nil, null in the
// document), while cuda on the simulated device records the batches it
// uploads, and the time they took.
func TestCPUModeRecordsNoCopies(t *testing.T) {
	res := run(t, smallLinearRun(t, TaskTrain, ModeCPU, ModeCUDA))
	for _, e := range res.Modes[0].Epochs {
		if e.UploadBytes != nil || e.DownloadBytes != nil || e.CopySeconds != nil {
			t.Errorf("cpu epoch %d records copies: %+v", e.Index, e)
		}
	}
	for _, e := range res.Modes[1].Epochs {
		if up, _, took := e.Copied(); e.UploadBytes == nil || e.DownloadBytes == nil || e.CopySeconds == nil || up == 0 || took == 0 {
			t.Errorf("cuda epoch %d records no uploads: %+v", e.Index, e)
		}
	}
}
