package main

import (
	"strings"
	"testing"
	"time"

	"gpuz/internal/bench"
)

// TestModeProgressInALog steps a run's batches on a clock of their own
// with a standard error that is not a terminal (issue 44 item 6: a
// full-depth llm run on sim, 34 s a batch, showed nothing for minutes in
// a log): a mode whose batches come quicker than slowLineEvery writes
// nothing; a slow one writes its counters at the first batch done
// slowLineEvery after the mode's start or the last line, with the time
// since its mode started; the next mode starts its clock again. Nothing
// is drawn or erased.
func TestModeProgressInALog(t *testing.T) {
	type step struct {
		at    time.Duration // the clock, from the run's start
		start bench.Mode    // a mode starts, or
		batch bench.BatchDone
	}
	cuda := bench.Mode("cuda")
	tests := []struct {
		name  string
		steps []step
		want  string
	}{
		{"quick batches write nothing", []step{
			{at: 0, start: cuda},
			{at: time.Second, batch: bench.BatchDone{Epoch: 0, Batch: 0, Batches: 2, Epochs: 3}},
			{at: 29 * time.Second, batch: bench.BatchDone{Epoch: 2, Batch: 1, Batches: 2, Epochs: 3}},
		}, ""},
		{"slow batches write a line each 30 s", []step{
			{at: 0, start: cuda},
			{at: 34 * time.Second, batch: bench.BatchDone{Epoch: 0, Batch: 0, Batches: 2, Epochs: 3}},
			{at: 50 * time.Second, batch: bench.BatchDone{Epoch: 0, Batch: 1, Batches: 2, Epochs: 3}},
			{at: 68 * time.Second, batch: bench.BatchDone{Epoch: 1, Batch: 0, Batches: 2, Epochs: 3}},
			{at: 70 * time.Second, start: "cpu"},
			{at: 95 * time.Second, batch: bench.BatchDone{Epoch: 0, Batch: 0, Batches: 2, Epochs: 3}},
			{at: 101 * time.Second, batch: bench.BatchDone{Epoch: 0, Batch: 1, Batches: 2, Epochs: 3}},
		}, "cuda: epoch 1/3, batch 1/2 (34s)\ncuda: epoch 2/3, batch 1/2 (1m8s)\ncpu: epoch 1/3, batch 2/2 (31s)\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			clock := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
			start := clock
			p := newModeProgress(&out, false)
			if p == nil || p.log == nil {
				t.Fatal("no progress where standard error is not a terminal")
			}
			p.log.now = func() time.Time { return clock }
			mode := cuda
			for _, s := range tc.steps {
				clock = start.Add(s.at)
				if s.start != "" {
					mode = s.start
					p.clear()
					p.start(mode, 3, 2)
					continue
				}
				p.batch(mode, s.batch)
				p.around(func() {})
			}
			p.clear()
			if got := out.String(); got != tc.want {
				t.Errorf("wrote %q, want %q", got, tc.want)
			}
		})
	}
}
