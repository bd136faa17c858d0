package bench

import (
	"fmt"
	"strings"
	"testing"

	"gpuz/internal/cache"
	"gpuz/internal/device"
)

// TestEndEvents checks that every requested mode ends with one End event,
// sent as soon as the mode ends (after its epochs, before the next mode
// starts) and carrying the status its result gets: an OOM on a device too
// small, unavailable without a GPU, ok for cpu.
func TestEndEvents(t *testing.T) {
	tests := []struct {
		name   string
		newGPU func() (device.Device, error)
		want   []StatusKind // cuda, cpu
	}{
		{"oom", func() (device.Device, error) { return device.NewSim(1<<10, nil), nil }, []StatusKind{StatusOOM, StatusOK}},
		{"unavailable", nil, []StatusKind{StatusUnavailable, StatusOK}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := smallLinearRun(t, TaskEval, ModeCUDA, ModeCPU)
			opts.Epochs, opts.Warmup = 1, 0
			opts.NewGPU = tt.newGPU
			var events []Event
			opts.Progress = func(e Event) { events = append(events, e) }
			res := run(t, opts)

			var ends []Event
			for i, e := range events {
				if e.End == nil {
					continue
				}
				ends = append(ends, e)
				if e.Mode == ModeCUDA && i+1 < len(events) && (events[i+1].Mode != ModeCPU || events[i+1].Epoch != nil) {
					t.Errorf("after cuda's end: %+v, want cpu starting", events[i+1])
				}
			}
			if len(ends) != len(res.Modes) {
				t.Fatalf("%d end events for %d modes: %+v", len(ends), len(res.Modes), events)
			}
			for i, e := range ends {
				r := res.Modes[i]
				if e.Mode != r.Mode || *e.End != r.Status || e.Device != r.Device || r.Status.Kind != tt.want[i] {
					t.Errorf("end event %d: %s on %q %+v; result %s on %q %+v, want %s", i, e.Mode, e.Device, *e.End, r.Mode, r.Device, r.Status, tt.want[i])
				}
			}
			if last := events[len(events)-1]; last.End == nil || last.Mode != ModeCPU {
				t.Errorf("last event %+v, want cpu's end", last)
			}
		})
	}
}

// TestRunReportsBatches: every batch of every epoch is reported, in order,
// before its epoch's event.
func TestRunReportsBatches(t *testing.T) {
	opts := smallLinearRun(t, TaskTrain, ModeCPU)
	opts.Epochs = 2
	var got []string
	opts.Progress = func(e Event) {
		switch {
		case e.Batch != nil:
			b := e.Batch
			got = append(got, fmt.Sprintf("%s batch %d.%d of %d×%d", e.Mode, b.Epoch, b.Batch, b.Epochs, b.Batches))
		case e.Epoch != nil:
			got = append(got, fmt.Sprintf("%s epoch %d", e.Mode, e.Epoch.Index))
		}
	}
	run(t, opts)
	want := []string{"cpu batch 0.0 of 2×2", "cpu batch 0.1 of 2×2", "cpu epoch 0", "cpu batch 1.0 of 2×2", "cpu batch 1.1 of 2×2", "cpu epoch 1"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSweepEventConfig: every event of a sweep carries in Config the index
// of the configuration it belongs to: the Sweep step that starts it and
// each of its run's events (header, mode start, batches, epochs, end), up
// to the next configuration's step.
func TestSweepEventConfig(t *testing.T) {
	so := SweepOptions{Parameters: []string{"seed"}}
	for i := range 3 {
		opts := smallLinearRun(t, TaskEval, ModeCPU)
		opts.Epochs, opts.Warmup = 1, 0
		so.Configs = append(so.Configs, SweepConfig{Settings: []Setting{{"seed", fmt.Sprint(i)}}, Options: opts})
	}
	current, counts := -1, map[int]int{}
	so.Progress = func(e Event) {
		if e.Sweep != nil {
			current = e.Sweep.Index
		}
		if e.Config != current {
			t.Errorf("event %+v of configuration %d carries Config %d", e, current, e.Config)
		}
		counts[e.Config]++
	}
	res, err := Sweep(t.Context(), so)
	if err != nil {
		t.Fatal(err)
	}
	// Each configuration: its step, the header, the mode's start, its
	// batches, its epoch and its end.
	if len(res.Rows) != 3 || len(counts) != 3 || counts[0] < 5 || counts[0] != counts[1] || counts[1] != counts[2] {
		t.Errorf("%d rows, events per configuration %v; want 3 alike, each at least 5", len(res.Rows), counts)
	}
}

// TestSetupPhaseEvents checks that a run reports each setup phase as it
// starts (issue 36 item 20: what a long setup is doing): the run's own,
// build then data, before its header; each mode's after its start event
// and before its first batch, in the order of its ModeResult.Setup (less
// the phases with no start of their own: open, compile and the uploads,
// which interleave with init).
func TestSetupPhaseEvents(t *testing.T) {
	for _, mode := range []Mode{ModeCPU, ModeCUDA, ModeCache} {
		t.Run(string(mode), func(t *testing.T) {
			opts := smallLinearRun(t, TaskTrain, mode)
			opts.Cache = cache.Config{Policy: cache.Window, Window: 2}
			var own, phases []PhaseName
			header, started, batched := false, false, false
			opts.Progress = func(e Event) {
				switch {
				case e.Phase != "" && e.Mode == "":
					if header {
						t.Errorf("run phase %s after the header", e.Phase)
					}
					own = append(own, e.Phase)
				case e.Phase != "":
					if !started || batched || e.Mode != mode {
						t.Errorf("%s phase %s: mode started %v, batches begun %v", e.Mode, e.Phase, started, batched)
					}
					phases = append(phases, e.Phase)
				case e.Header != nil:
					header = true
				case e.Batch != nil:
					batched = true
				case e.Epoch == nil && e.End == nil:
					started = true
				}
			}
			res := run(t, opts)
			if st := res.Modes[0].Status; st.Kind != StatusOK {
				t.Fatalf("%s: %s", mode, st)
			}
			var want []PhaseName
			for _, p := range res.Modes[0].Setup {
				switch name := PhaseName(p.Name); name {
				case PhaseOpen, PhaseCompile, PhaseKernelCache, PhaseUpload:
				default:
					want = append(want, name)
				}
			}
			if fmt.Sprint(own) != fmt.Sprint([]PhaseName{PhaseBuild, PhaseData}) || fmt.Sprint(phases) != fmt.Sprint(want) || len(want) < 2 {
				t.Errorf("phase events: run %v, %s %v; want [build data], %v (its Setup %v)", own, mode, phases, want, res.Modes[0].Setup)
			}
		})
	}
}
