package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"gpuz/internal/bench"
	"gpuz/internal/device"
)

// cancelAt is a standard error that cancels a context when a line
// containing at is written to it, as a signal would at that moment.
type cancelAt struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	at     string
	cancel context.CancelFunc
}

func (w *cancelAt) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.Contains(p, []byte(w.at)) {
		w.cancel()
	}
	return w.buf.Write(p)
}

func (w *cancelAt) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestRunStopsInSetup cancels a run's context as each setup phase of its
// mode starts (the cache mode on a simulated device, its notes due at
// once), as a signal would (issue 44 item 5: a full-depth model on sim
// ignored the first Ctrl-C through 37 s of loading and 4 s of
// initialising, acting on it only at its first batch): the mode stops in
// that phase, interrupted, saying where; no later phase starts (its note
// would say so) and the phase stopped is not recorded as done; the
// results are written whole; the run returns the interruption (status
// 130); and the simulated device's ledger holds nothing afterwards.
func TestRunStopsInSetup(t *testing.T) {
	for _, tt := range []struct {
		at     string          // the note at which the context ends
		phase  bench.PhaseName // the phase the reason names, "" for a mode skipped
		phases []string        // the mode's setup phases recorded
	}{
		// The run builds and compiles the model once, before its modes: a
		// signal there skips every mode (the data set is still generated,
		// for the header).
		{"building the model and compiling its schedule", "", nil},
		{"reserving its memory", bench.PhaseReserve, []string{"open", "reserve"}},
		{"allocating its buffers", bench.PhaseLoad, []string{"open", "reserve"}},
		{"drawing the initial parameters", bench.PhaseInit, []string{"open", "reserve", "load"}},
	} {
		name := string(tt.phase)
		if name == "" {
			name = "build"
		}
		t.Run(name, func(t *testing.T) {
			ledger := privateLedger(t)
			t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no calibrated profile: no prediction phase
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errOut := &cancelAt{at: tt.at, cancel: cancel}
			var out bytes.Buffer
			opts := smallLinear(newIOStreams(&out, errOut), "sim:64MiB")
			opts.Modes, opts.setupNoteAfter = []bench.Mode{bench.ModeCache}, -1
			opts.JSON = filepath.Join(t.TempDir(), "results.json")
			if err := workloadRun(ctx, opts); !errors.Is(err, errInterrupted) {
				t.Fatalf("workloadRun: %v, want the interruption; stderr:\n%s", err, errOut)
			}
			_, after, _ := strings.Cut(errOut.String(), tt.at)
			if strings.Contains(after, "cache: setup:") {
				t.Errorf("a setup phase started after the context ended at %q:\n%s", tt.at, errOut)
			}
			var res struct {
				Modes []struct {
					Status, Reason string
					Setup          []struct{ Name string }
					Epochs         []json.RawMessage
				}
			}
			if err := json.Unmarshal(readFile(t, opts.JSON), &res); err != nil || len(res.Modes) != 1 {
				t.Fatalf("results: %v, %d modes", err, len(res.Modes))
			}
			m := res.Modes[0]
			var phases []string
			for _, p := range m.Setup {
				phases = append(phases, p.Name)
			}
			wantStatus, wantReason := "interrupted", "in its setup ("+string(tt.phase)+"), before its first epoch"
			if tt.phase == "" {
				wantStatus, wantReason = "skipped", "run interrupted"
			}
			if m.Status != wantStatus || m.Reason != wantReason || len(m.Epochs) != 0 || strings.Join(phases, ",") != strings.Join(tt.phases, ",") {
				t.Errorf("mode %s (%s), %d epochs, setup %v; want %s (%s), none, %v", m.Status, m.Reason, len(m.Epochs), phases, wantStatus, wantReason, tt.phases)
			}
			if !strings.Contains(out.String(), "cache: "+wantStatus+": "+wantReason) {
				t.Errorf("the report does not say where the mode stopped:\n%s", out.String())
			}
			if entries, err := device.OpenLedger(ledger).Entries(); err != nil || len(entries) != 0 {
				t.Errorf("after the run the ledger holds %+v, %v", entries, err)
			}
		})
	}
}
