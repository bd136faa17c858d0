package fit

import (
	"math"
	"reflect"
	"testing"
	"time"

	"gpuz/internal/bench"
	"gpuz/internal/levers"
)

// planned returns an entry of mode predicted at predicted, needing device
// bytes on the device.
func planned(mode bench.Mode, cfg bench.Config, predicted time.Duration, device int64) Entry {
	e := Entry{Candidate: Candidate{Mode: mode, Config: cfg}, Fits: true}
	e.Plan.Prediction = &bench.Prediction{}
	e.Plan.Prediction.Model = predicted
	e.Plan.Footprint.Device = device
	return e
}

// TestVerifyPicks: Verify runs the k best and the cpu once: not again when
// the cpu is among the k best, with its rank when it is ranked below
// them, and not at all when it does not fit.
func TestVerifyPicks(t *testing.T) {
	cuda, cpu := planned(bench.ModeCUDA, bench.Config{}, time.Second, 1), planned(bench.ModeCPU, bench.Config{}, 2*time.Second, 0)
	cache := planned(bench.ModeCache, bench.Config{}, 3*time.Second, 1)
	for _, tc := range []struct {
		name   string
		r      Result
		k      int
		modes  string // the checks' modes in order
		cpuRnk int    // the cpu check's rank
	}{
		{"the cpu among the k best runs once", Result{Ranked: []Entry{cuda, cpu, cache}, CPU: cpu}, 2, "cuda cpu", 2},
		{"the cpu below the k best runs last with its rank", Result{Ranked: []Entry{cuda, cache, cpu}, CPU: cpu}, 2, "cuda cache cpu", 3},
		{"a cpu that does not fit does not run", Result{Ranked: []Entry{cuda, cache}, CPU: Entry{Candidate: Candidate{Mode: bench.ModeCPU}}}, 2, "cuda cache", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checks := picks(tc.r, tc.k)
			var modes string
			rank := 0
			for i, c := range checks {
				if i > 0 {
					modes += " "
				}
				modes += string(c.Mode)
				if c.Mode == bench.ModeCPU {
					rank = c.Rank
				}
			}
			if modes != tc.modes || rank != tc.cpuRnk {
				t.Errorf("checks %q, the cpu ranked %d; want %q, %d", modes, rank, tc.modes, tc.cpuRnk)
			}
		})
	}
}

// TestVerifyRunConfigs: each check runs its mode alone with its
// configuration, holding --take on the device; the managed mode holds the
// margin (free less budget) too, and the cpu, which has no device,
// nothing.
func TestVerifyRunConfigs(t *testing.T) {
	opts := Options{TakeBytes: 100}
	r := Result{DeviceFree: 1000, Budget: 950}
	rec := bench.Config{Set: levers.Set{Recompute: levers.RecomputeBlocks}}
	checks := []Check{{Entry: planned(bench.ModeCUDA, rec, 1, 1)}, {Entry: planned(bench.ModeManaged, bench.Config{}, 1, 1)},
		{Entry: planned(bench.ModeCPU, bench.Config{}, 1, 0)}, {Entry: planned(bench.ModeCache, bench.Config{}, 1, 1)}}
	want := []int64{100, 150, 0, 100}
	configs, err := runConfigs(opts, r, checks)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range configs {
		if c.TakeBytes != want[i] || len(c.Options.Modes) != 1 || c.Options.Modes[0] != checks[i].Mode || !reflect.DeepEqual(c.Options.Config, checks[i].Config) {
			t.Errorf("%s: runs modes %v, config %+v, holding %d; want it alone, its config, holding %d", checks[i].Mode, c.Options.Modes, c.Options.Config, c.TakeBytes, want[i])
		}
	}
}

// TestCheckPeak: on the simulated device the peak of a completed run on
// the device must be its plan's need exactly, below it as much as above;
// the cpu, a run that did not complete, and a real device are not
// checked.
func TestCheckPeak(t *testing.T) {
	ok, oom := bench.Status{Kind: bench.StatusOK}, bench.Status{Kind: bench.StatusOOM}
	check := func(mode bench.Mode, sim bool, status bench.Status, peak int64) Check {
		c := Check{Entry: planned(mode, bench.Config{}, time.Second, 1000), Simulated: sim}
		c.Run.Status, c.Run.PeakDeviceBytes = status, peak
		return c
	}
	for _, tc := range []struct {
		name             string
		c                Check
		checked, matches bool
	}{
		{"the plan's peak", check(bench.ModeCache, true, ok, 1000), true, true},
		{"a peak above the plan", check(bench.ModeCache, true, ok, 1001), true, false},
		{"a peak below the plan", check(bench.ModeManaged, true, ok, 999), true, false},
		{"the cpu", check(bench.ModeCPU, true, ok, 0), false, false},
		{"out of memory", check(bench.ModeCUDA, true, oom, 0), false, false},
		{"a real device", check(bench.ModeCUDA, false, ok, 5), false, false},
	} {
		if checked, matches := tc.c.checkPeak(); checked != tc.checked || matches != tc.matches {
			t.Errorf("%s: checked %t, matches %t; want %t, %t", tc.name, checked, matches, tc.checked, tc.matches)
		}
	}
}

// TestMedianAndRatio: the measured time is the median of the timed
// epochs (the mean of the middle two of an even count), and the ratio is
// measured over predicted.
func TestMedianAndRatio(t *testing.T) {
	epochs := func(ds ...time.Duration) []bench.Epoch {
		var out []bench.Epoch
		for _, d := range ds {
			out = append(out, bench.Epoch{Seconds: d.Seconds()})
		}
		return out
	}
	for _, tc := range []struct {
		in   []bench.Epoch
		want time.Duration
	}{
		{nil, 0}, {epochs(5), 5}, {epochs(9, 1, 5), 5}, {epochs(10, 1, 2, 3), 2}, {epochs(4, 1), 2},
	} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median of %v = %v, want %v", tc.in, got, tc.want)
		}
	}
	c := Check{Entry: planned(bench.ModeCUDA, bench.Config{}, time.Second, 1), Measured: 3 * time.Second}
	if got := c.Ratio(); got != 3 {
		t.Errorf("measured 3 s against 1 s predicted: ratio %g, want 3", got)
	}
	c.Measured = 0
	if got := c.Ratio(); !math.IsNaN(got) {
		t.Errorf("nothing measured: ratio %g, want NaN", got)
	}
}
