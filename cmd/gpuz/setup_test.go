package main

import (
	"encoding/json"
	"os/exec"
	"slices"
	"testing"
)

// TestSetupInJSON runs the built binary, a process of its own, and reads
// its JSON: each mode's setup phases in the order they ran, with the names
// of its device (the simulated GPU reserves its footprint ahead, the host
// does not; a mode without a device has none) and no negative time; the
// run's own setup; and the time from the process's start to the first
// epoch, at least that setup and the first mode's.
func TestSetupInJSON(t *testing.T) {
	// The model is built and compiled once, in the run's own setup.
	onHost := []string{"open", "load", "init", "upload"}
	onSim := []string{"open", "reserve", "load", "init", "upload"}
	tests := []struct {
		name string
		args []string
		want [][]string // per mode
	}{
		{"sim then cpu", []string{"cuda,cpu"}, [][]string{onSim, onHost}},
		{"cpu then sim", []string{"cpu,cache", "--win-size", "1"}, [][]string{onHost, onSim}},
		{"no GPU then cpu", []string{"cuda,cpu", "--device", "cpu"}, [][]string{{}, onHost}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			privateLedger(t)
			args := append([]string{"linear", "train"}, tt.args...)
			args = append(args, "--scale", "small", "--epochs", "2", "--json", "-")
			out, err := exec.Command(gpuzBinary, args...).Output()
			if code := exitCode(err); code != exitOK && code != exitIncomplete {
				t.Fatalf("gpuz %q: %v", args, err)
			}
			type phase struct {
				Name    string  `json:"name"`
				Seconds float64 `json:"seconds"`
			}
			var doc struct {
				Header struct {
					Setup             []phase  `json:"setup"`
					StartToFirstEpoch *float64 `json:"start_to_first_epoch_seconds"`
				} `json:"header"`
				Modes []struct {
					Mode   string            `json:"mode"`
					Setup  []phase           `json:"setup"`
					Epochs []json.RawMessage `json:"epochs"`
				} `json:"modes"`
			}
			if err := json.Unmarshal(out, &doc); err != nil {
				t.Fatalf("%v in\n%s", err, out)
			}
			sum := func(what string, ps []phase) (names []string, total float64) {
				names = []string{}
				for _, p := range ps {
					if p.Seconds < 0 {
						t.Errorf("%s: phase %s took %g s", what, p.Name, p.Seconds)
					}
					names, total = append(names, p.Name), total+p.Seconds
				}
				return names, total
			}
			names, before := sum("run", doc.Header.Setup)
			if !slices.Equal(names, []string{"build", "data"}) {
				t.Errorf("run's setup %v, want [build data]", names)
			}
			if len(doc.Modes) != len(tt.want) {
				t.Fatalf("%d modes, want %d", len(doc.Modes), len(tt.want))
			}
			ran := false // whether a mode before has run an epoch
			for i, m := range doc.Modes {
				names, total := sum(m.Mode, m.Setup)
				if !slices.Equal(names, tt.want[i]) {
					t.Errorf("%s setup %v, want %v", m.Mode, names, tt.want[i])
				}
				if !ran {
					before += total
				}
				ran = ran || len(m.Epochs) > 0
			}
			if s := doc.Header.StartToFirstEpoch; s == nil || *s < before {
				t.Errorf("start_to_first_epoch_seconds %v, want at least the setup before it, %g s", s, before)
			}
		})
	}
}
