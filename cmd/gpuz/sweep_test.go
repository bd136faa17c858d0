package main

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gpuz/internal/bench"
	"gpuz/internal/cache"
	"gpuz/internal/device"
)

// TestConfigurationsOrder expands the cross product: the first flag
// varies slowest, the last fastest, each configuration with its settings.
func TestConfigurationsOrder(t *testing.T) {
	ios, _, _ := testIO()
	o := smallLinear(ios, "cpu")
	o.Sweep = []SweepFlag{{"take", []string{"0", "8"}}, {"win-size", []string{"1", "2", "3"}}, {"dims", []string{"16", "32"}}}
	configs, err := o.configurations()
	if err != nil {
		t.Fatal(err)
	}
	if len(configs) != 12 {
		t.Fatalf("%d configurations, want 12", len(configs))
	}
	for i, want := range map[int]string{0: "take=0 win_size=1 dims=16", 1: "take=0 win_size=1 dims=32", 2: "take=0 win_size=2 dims=16", 11: "take=8 win_size=3 dims=32"} {
		if got := configs[i].label(); got != want {
			t.Errorf("configuration %d: %q, want %q", i, got, want)
		}
	}
	if c := configs[11].opts; c.Take != "8" || c.Cache.Window != 3 || c.Sizes["dims"] != 32 || len(c.Sweep) != 0 {
		t.Errorf("configuration 11's options: take %q, window %d, sizes %v", c.Take, c.Cache.Window, c.Sizes)
	}
	if o.Take != "" || o.Sizes != nil {
		t.Errorf("expanding changed the options: take %q, sizes %v", o.Take, o.Sizes)
	}
}

// TestSweepRejectsUpFront refuses, as usage errors and before anything
// runs or is written, sweeps with a configuration that cannot run.
func TestSweepRejectsUpFront(t *testing.T) {
	privateLedger(t)
	for _, tt := range []struct {
		name   string
		dev    string
		policy string
		sweep  []SweepFlag
		plot   bool // --plot DIR/x.svg
		want   string
	}{
		{"host optimizer with window", "sim:1GiB", "window", []SweepFlag{{"optimizer-on", []string{"device", "host"}}}, false, "optimizer_on=host: "},
		{"take on cpu", "cpu", "window", []SweepFlag{{"take", []string{"0", "2MiB"}}}, false, "--take holds memory on the device"},
		{"bad size item", "sim:1GiB", "window", []SweepFlag{{"dims", []string{"16", "0"}}}, false, "dims=0: --dims must be positive, got 0"},
		{"bad take item", "sim:1GiB", "window", []SweepFlag{{"take", []string{"0", "lots"}}}, false, "take=lots: --take: invalid amount"},
		{"bad window item", "sim:1GiB", "window", []SweepFlag{{"win-size", []string{"1", "x"}}}, false, `--win-size: invalid argument "x"`},
		{"bad policy item", "sim:1GiB", "window", []SweepFlag{{"policy", []string{"window", "lru"}}}, false, "policy=lru: "},
		// --plot draws sweeps over take or win_size: a sweep over another
		// parameter ran to the end and then only warned.
		{"plot a sweep over dims", "sim:1GiB", "window", []SweepFlag{{"dims", []string{"4", "8"}}}, true, "--plot: a sweep over dims: gpuz plot draws sweeps over take or win_size"},
		{"plot a sweep over batch and policy", "sim:1GiB", "window", []SweepFlag{{"batch", []string{"2", "4"}}, {"policy", []string{"window", "auto"}}}, true, "a sweep over batch, policy"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ios, out, errOut := testIO()
			o := smallLinear(ios, tt.dev)
			o.Modes = []bench.Mode{bench.ModeCPU, bench.ModeCache}
			o.Cache.Policy, o.Sweep = cache.Policy(tt.policy), tt.sweep
			if tt.plot {
				o.Plot = filepath.Join(t.TempDir(), "x.svg")
			}
			err := workloadRun(context.Background(), o)
			var u *usageError
			if !errors.As(err, &u) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want a usage error with %q", err, tt.want)
			}
			if out.Len() != 0 || errOut.Len() != 0 {
				t.Errorf("wrote %q and %q before refusing", out, errOut)
			}
		})
	}
}

// TestSweepOnSim sweeps --take 0,1MiB on a 2 MiB simulated device with a
// window-paged window of one block: without the take every mode completes; with it
// cuda is out of memory while cache completes, each row records the free
// memory, the JSON follows the sweep's schema, and the ledger is empty
// afterwards.
func TestSweepOnSim(t *testing.T) {
	ledgerPath := privateLedger(t)
	ios, out, errOut := testIO()
	o := smallLinear(ios, "sim:2MiB")
	o.Modes = []bench.Mode{bench.ModeCUDA, bench.ModeCache, bench.ModeCPU}
	// window-paged: the window policy keeps Adam's state on the device and
	// does not fit under the take.
	o.Cache, o.Sizes = cache.Config{Policy: cache.WindowPaged, Window: 1}, map[string]int{"epochs": 2}
	o.Sweep = []SweepFlag{{"take", []string{"0", "1MiB"}}}
	o.JSON = filepath.Join(t.TempDir(), "sweep.json")
	err := workloadRun(context.Background(), o)
	var inc *incompleteError
	if !errors.As(err, &inc) || len(inc.Modes) != 1 || inc.Modes[0] != "take=1MiB cuda (OOM)" || inc.Total != 6 {
		t.Fatalf("got %v, want cuda under the take incomplete; stderr: %s", err, errOut)
	}
	table := out.String()
	for _, want := range []string{"gpuz linear train (scale small)", "\nSweep\n", "take  ", "2.00 MiB  cuda†", "1.00 MiB  cuda†", "OOM [1]", "[1] take=1MiB cuda: OOM: needs "} {
		if !strings.Contains(table, want) {
			t.Errorf("output lacks %q:\n%s", want, table)
		}
	}
	var doc struct {
		Kind       string   `json:"kind"`
		Parameters []string `json:"parameters"`
		Rows       []struct {
			Settings        map[string]string `json:"settings"`
			TakeBytes       int64             `json:"take_bytes"`
			DeviceFreeBytes int64             `json:"device_free_bytes"`
			Result          struct {
				Modes []struct {
					Mode, Status string
				} `json:"modes"`
			} `json:"result"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(readFile(t, o.JSON), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Kind != "sweep" || len(doc.Parameters) != 1 || doc.Parameters[0] != "take" || len(doc.Rows) != 2 {
		t.Fatalf("JSON: kind %q, parameters %v, %d rows", doc.Kind, doc.Parameters, len(doc.Rows))
	}
	r := doc.Rows[1]
	if r.Settings["take"] != "1MiB" || r.TakeBytes != 1<<20 || r.DeviceFreeBytes != 1<<20 || r.Result.Modes[0].Status != "OOM" || r.Result.Modes[1].Status != "ok" {
		t.Errorf("JSON row 1: %+v", r)
	}
	if entries, err := device.OpenLedger(ledgerPath).Entries(); err != nil || len(entries) != 0 {
		t.Errorf("after the sweep the ledger holds %+v, %v", entries, err)
	}
}

// TestSweepProgressOnTerminal sweeps two widths on the cpu: with standard
// error a terminal it shows a line per configuration there; without, none.
func TestSweepProgressOnTerminal(t *testing.T) {
	for _, tty := range []bool{true, false} {
		ios, out, errOut := testIO()
		ios.ErrTTY = tty
		o := smallLinear(ios, "cpu")
		o.Sizes = map[string]int{"epochs": 2}
		o.Sweep = []SweepFlag{{"dims", []string{"8", "16"}}}
		if err := workloadRun(context.Background(), o); err != nil {
			t.Fatalf("%v; stderr: %s", err, errOut)
		}
		shown := strings.Contains(errOut.String(), "[1/2] dims=8\n") && strings.Contains(errOut.String(), "[2/2] dims=16\n")
		if shown != tty || strings.Contains(out.String(), "[1/2]") {
			t.Errorf("terminal %v: stderr %q, stdout has the lines: %v", tty, errOut, strings.Contains(out.String(), "[1/2]"))
		}
		if !strings.Contains(out.String(), "\n8     ") || !strings.Contains(out.String(), "\n16    ") {
			t.Errorf("the table lacks a row per width:\n%s", out)
		}
	}
}

// TestSweepConfigurationCap: a sweep of exactly maxConfigurations
// configurations is expanded and checked whole; one more is refused
// before any is made, naming the cap.
func TestSweepConfigurationCap(t *testing.T) {
	values := func(n int) []string {
		v := make([]string, n)
		for i := range v {
			v[i] = strconv.Itoa(i + 1)
		}
		return v
	}
	for _, tc := range []struct {
		name       string
		dims, wins int
		want       int    // configurations
		wantErr    string // or the error
	}{
		{"at the cap", 100, 100, maxConfigurations, ""},
		{"one past the cap", 73, 137, 0, "the sweep has more than 10000 configurations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ios, out, errOut := testIO()
			o := smallLinear(ios, "cpu")
			o.Sweep = []SweepFlag{{"dims", values(tc.dims)}, {"win-size", values(tc.wins)}}
			so, err := o.sweepOptions(context.Background())
			switch {
			case tc.wantErr != "":
				var u *usageError
				if !errors.As(err, &u) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want a usage error with %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case len(so.Configs) != tc.want || bench.SettingsString(so.Configs[tc.want-1].Settings) != "dims=100 win_size=100":
				t.Errorf("%d configurations, the last %v; want %d, the last dims=100 win_size=100", len(so.Configs), so.Configs[len(so.Configs)-1].Settings, tc.want)
			}
			if out.Len() != 0 || errOut.Len() != 0 {
				t.Errorf("wrote %q and %q", out, errOut)
			}
		})
	}
}

// TestSweepPrecision sweeps --precision fp32,bf16,fp16 on a simulated
// device: a row per precision and mode, the skipped column for fp16's
// training, and each row's JSON header names its own precision.
func TestSweepPrecision(t *testing.T) {
	privateLedger(t)
	ios, out, errOut := testIO()
	o := smallLinear(ios, "sim:1GiB")
	o.Modes, o.Sizes = []bench.Mode{bench.ModeCUDA, bench.ModeCPU}, map[string]int{"epochs": 2}
	o.Sweep = []SweepFlag{{"precision", []string{"fp32", "bf16", "fp16"}}}
	o.JSON = filepath.Join(t.TempDir(), "sweep.json")
	if err := workloadRun(context.Background(), o); err != nil {
		t.Fatalf("%v; stderr: %s", err, errOut)
	}
	rows := map[string]int{}
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 3 && (f[3] == "cuda†" || f[3] == "cpu") { // precision, free (2 fields), mode
			rows[f[0]]++
		}
	}
	if rows["fp32"] != 2 || rows["bf16"] != 2 || rows["fp16"] != 2 || !strings.Contains(out.String(), " skipped ") {
		t.Errorf("want two rows per precision and a skipped column:\n%s", out)
	}
	var doc struct {
		Rows []struct {
			Settings map[string]string `json:"settings"`
			Result   struct {
				Header struct {
					Precision string `json:"precision"`
				} `json:"header"`
			} `json:"result"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(readFile(t, o.JSON), &doc); err != nil {
		t.Fatal(err)
	}
	for i, r := range doc.Rows {
		if r.Result.Header.Precision != r.Settings["precision"] {
			t.Errorf("row %d: settings %v, header precision %q", i, r.Settings, r.Result.Header.Precision)
		}
	}
}
