package fit

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"gpuz/internal/bench"
	"gpuz/internal/device"
	"gpuz/internal/levers"
	"gpuz/internal/models"
	"gpuz/internal/perfmodel"
	"gpuz/internal/units"
)

// options returns the search options of a workload at a scale on
// sim:rtx4060-laptop, on a ledger of the test's own (so that a take holds
// memory against the devices of the run), with the reference laptop's host
// profile.
func options(t testing.TB, w models.Workload, scale string, task bench.Task) Options {
	t.Helper()
	cfg, name, err := w.Configure(scale, nil)
	if err != nil {
		t.Fatal(err)
	}
	gpu, err := perfmodel.Lookup("rtx4060-laptop")
	if err != nil {
		t.Fatal(err)
	}
	host, err := perfmodel.LookupHost("cpu-i7-13700h")
	if err != nil {
		t.Fatal(err)
	}
	f := models.FeedOf(cfg)
	ledger := device.OpenLedger(filepath.Join(t.TempDir(), "ledger"))
	return Options{MarginPercent: DefaultMarginPercent, Bench: bench.Options{
		ModelName: w.Name, Scale: name, Workload: cfg, Task: task,
		Samples: f.Samples, Batch: f.Batch, Epochs: f.Epochs, Warmup: 1,
		Adam: bench.DefaultAdam(), ClipNorm: 1, Seed: 1, Threads: 1, HostProfile: &host,
		NewGPU: func() (device.Device, error) { return device.NewSimProfile(gpu, ledger), nil },
	}}
}

// smallPlanner returns the options of w's small scale for task (options)
// and their planner, closed when the test ends.
func smallPlanner(t testing.TB, w models.Workload, task bench.Task) (Options, *bench.Planner) {
	t.Helper()
	opts := options(t, w, models.ScaleSmall, task)
	p, err := bench.NewPlanner(opts.Bench)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return opts, p
}

// TestSearchRanksWhatFits searches the small linear workload with all but
// 1 MiB of the device taken: cuda (1.29 MiB) does not fit and says so;
// every ranked entry fits the budget, none after one it beats (faster
// by more than a tie, or by more than ResultsGainFraction where only it
// changes the results); and the smallest
// need is the least of every candidate's on the device.
func TestSearchRanksWhatFits(t *testing.T) {
	opts := options(t, models.Linear, models.ScaleSmall, bench.TaskTrain)
	opts.TakeBytes = 8<<30 - 1<<20
	r, err := Search(opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.DeviceFree != 1<<20 || r.Budget != 1<<20-(1<<20)*5/100 {
		t.Errorf("free %d, budget %d; want 1 MiB and 95%% of it", r.DeviceFree, r.Budget)
	}
	if r.CUDA.Fits || !strings.HasPrefix(r.Reason(), "cuda does not fit: needs 1.29 MiB") {
		t.Errorf("cuda fits %t; reason %q", r.CUDA.Fits, r.Reason())
	}
	if len(r.Ranked) == 0 {
		t.Fatal("nothing ranked")
	}
	for i, e := range r.Ranked {
		if e.Mode != bench.ModeCPU && e.Plan.Footprint.Device > r.Budget {
			t.Errorf("%s needs %d, over the budget %d", e.Candidate, e.Plan.Footprint.Device, r.Budget)
		}
		for _, before := range r.Ranked[:i] {
			if beats(e, before) {
				t.Errorf("%s (%g s) ranked after %s (%g s), which it beats", e.Candidate, e.Predicted(), before.Candidate, before.Predicted())
			}
		}
	}
	for _, e := range append(r.Ranked, r.Unranked...) {
		if e.Mode != bench.ModeCPU && e.Mode != bench.ModeManaged && e.Plan.Footprint.Device < r.Smallest.Plan.Footprint.Device {
			t.Errorf("%s needs %d, less than the smallest %s's %d", e.Candidate, e.Plan.Footprint.Device, r.Smallest.Candidate, r.Smallest.Plan.Footprint.Device)
		}
	}
}

// TestVerifyFailsOnOOM searches with 1 MiB free and verifies while 64 KiB
// more is held than the search assumed: the recommended configuration
// runs out of memory, and the verification fails naming it.
func TestVerifyFailsOnOOM(t *testing.T) {
	opts := options(t, models.Linear, models.ScaleSmall, bench.TaskTrain)
	opts.Bench.Epochs = 2
	opts.TakeBytes = 8<<30 - 1<<20
	opts.MarginPercent = 0
	r, err := Search(opts)
	if err != nil {
		t.Fatal(err)
	}
	// The cache configuration with the largest need that fits, alone, so
	// that less memory makes it fail.
	var pick Entry
	for _, e := range r.Ranked {
		if e.Mode == bench.ModeCache && e.Plan.Footprint.Device > pick.Plan.Footprint.Device {
			pick = e
		}
	}
	r.Ranked, r.CPU = []Entry{pick}, Entry{}
	opts.TakeBytes += 1<<20 - r.Ranked[0].Plan.Footprint.Device + 64<<10
	v, err := Verify(context.Background(), opts, r, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Err(); err == nil || !strings.Contains(err.Error(), r.Ranked[0].Candidate.String()+": OOM: needs ") {
		t.Errorf("verification error %v, want %s out of memory", err, r.Ranked[0].Candidate)
	}
}

// BenchmarkSearch times a search of each full-scale workload, training, on
// sim:rtx4060-laptop with nothing taken: the target is under 2 s
// each on a 2-core machine.
func BenchmarkSearch(b *testing.B) {
	for _, w := range []models.Workload{models.Linear, models.Resnet, models.Attention} {
		b.Run(w.Name, func(b *testing.B) {
			opts := options(b, w, models.ScaleFull, bench.TaskTrain)
			for b.Loop() {
				if _, err := Search(opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSearchRanksLoRA searches the small linear workload with --lora 0,4:
// every candidate is planned under both settings (twice the candidates of
// one), each LoRA entry names its trained parameters, the adapters'
// R·(in + out) per layer, and needs no more of the device than its twin
// that trains every weight.
func TestSearchRanksLoRA(t *testing.T) {
	opts := options(t, models.Linear, models.ScaleSmall, bench.TaskTrain)
	one, err := Search(opts)
	if err != nil {
		t.Fatal(err)
	}
	lora := levers.LoRA{Rank: 4}
	opts.LoRA = []levers.LoRA{{}, lora}
	r, err := Search(opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Searched != 2*one.Searched {
		t.Errorf("%d candidates searched, want twice %d", r.Searched, one.Searched)
	}
	c := opts.Bench.Workload.(*models.LinearConfig)
	trained := int64(c.Blocks * c.LayersPerBlock * lora.Rank * 2 * c.Dims)
	full := map[string]Entry{}
	for _, e := range append(r.Ranked, r.Unranked...) {
		if !e.LoRA.On() {
			full[e.String()] = e
		}
	}
	n := 0
	for _, e := range append(r.Ranked, r.Unranked...) {
		if !e.LoRA.On() {
			continue
		}
		n++
		suffix := fmt.Sprintf(", LoRA R=4 (%s trained)", units.Count(trained))
		if e.Trained != trained || !strings.HasSuffix(e.String(), suffix) {
			t.Errorf("%s: %d trained, want %d named %q", e.Candidate, e.Trained, trained, suffix)
		}
		if twin, ok := full[strings.TrimSuffix(e.String(), suffix)]; ok && e.Mode != bench.ModeManaged && e.Plan.Footprint.Device > twin.Plan.Footprint.Device {
			t.Errorf("%s needs %d of the device, more than %s's %d", e.Candidate, e.Plan.Footprint.Device, twin.Candidate, twin.Plan.Footprint.Device)
		}
	}
	if n == 0 {
		t.Error("no LoRA entry")
	}
}
