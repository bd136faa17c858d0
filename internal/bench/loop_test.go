package bench

import (
	"math"
	"slices"
	"testing"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/engine"
)

// TestModeLoopByHand runs the small linear workload for 4 epochs, 2 of
// them warm-up, in cpu mode and in cache mode (window policy, one block)
// and checks the per-mode loop against what it is made of: each batch's
// loss equals the loss of the same step run by hand on the program
// (trainOn), each epoch's value is the mean of its batches' losses, each
// cache epoch's copied bytes equal the device's counters between the end
// of the previous epoch and the end of this one, and the warm-up flag is
// set on exactly the first 2 epochs, as reported and as recorded.
func TestModeLoopByHand(t *testing.T) {
	opts := smallLinearRun(t, TaskTrain, ModeCPU, ModeCache)
	opts.Epochs, opts.Warmup, opts.Seed = 4, 2, 5
	opts.Cache = cache.Config{Policy: cache.Window, Window: 1}
	var sim *device.Sim
	opts.NewGPU = func() (device.Device, error) { sim = device.NewSim(64<<20, nil); return sim, nil }
	losses := map[Mode][][]float32{}
	stats := map[Mode][][]device.Stats{} // the cache device's counters after each batch
	opts.batchHook = func(mode Mode, epoch, batch int, v float32) float32 {
		if batch == 0 {
			losses[mode] = append(losses[mode], nil)
			stats[mode] = append(stats[mode], nil)
		}
		losses[mode][epoch] = append(losses[mode][epoch], v)
		if mode == ModeCache {
			stats[mode][epoch] = append(stats[mode][epoch], sim.Stats())
		}
		return v
	}
	warm := map[Mode][]bool{}
	opts.Progress = func(e Event) {
		if e.Epoch != nil {
			if e.Epoch.Index != len(warm[e.Mode]) {
				t.Errorf("%s: epoch %d reported after %d epochs", e.Mode, e.Epoch.Index, len(warm[e.Mode]))
			}
			warm[e.Mode] = append(warm[e.Mode], e.Warmup)
		}
	}
	res := run(t, opts)

	batches := opts.Samples / opts.Batch
	if batches < 2 {
		t.Fatalf("%d batches per epoch: the mean would not be tested", batches)
	}
	hand := trainOn(t, opts, TaskTrain, engine.Resident{}, opts.Epochs*batches).losses
	for _, r := range res.Modes {
		if r.Status.Kind != StatusOK || len(r.Epochs) != opts.Epochs {
			t.Fatalf("%s: status %q, %d epochs", r.Mode, r.Status, len(r.Epochs))
		}
		if got := slices.Concat(losses[r.Mode]...); !slices.Equal(got, hand) {
			t.Errorf("%s: batch losses %v, by hand %v", r.Mode, got, hand)
		}
		for e, ep := range r.Epochs {
			var sum float64
			for _, v := range losses[r.Mode][e] {
				sum += float64(v)
			}
			if want := sum / float64(batches); math.Abs(float64(ep.Value)-want) > 1e-12*math.Abs(want) {
				t.Errorf("%s epoch %d: value %v, mean of its batches %v", r.Mode, e, ep.Value, want)
			}
			if r.Mode == ModeCache && e > 0 {
				before, after := stats[r.Mode][e-1][batches-1], stats[r.Mode][e][batches-1]
				gotUp, gotDown, _ := ep.Copied()
				if up, down := after.UploadBytes-before.UploadBytes, after.DownloadBytes-before.DownloadBytes; gotUp != up || gotDown != down || up == 0 {
					t.Errorf("cache epoch %d: %d B up, %d B down; the device counted %d and %d", e, gotUp, gotDown, up, down)
				}
			}
		}
		want := []bool{true, true, false, false}
		if !slices.Equal(warm[r.Mode], want) {
			t.Errorf("%s: warm-up flags %v, want %v", r.Mode, warm[r.Mode], want)
		}
		recorded := make([]bool, len(r.Epochs))
		for e, ep := range r.Epochs {
			recorded[e] = ep.Warmup
		}
		if !slices.Equal(recorded, want) {
			t.Errorf("%s: epochs recorded with warm-up flags %v, want %v", r.Mode, recorded, want)
		}
	}
}
