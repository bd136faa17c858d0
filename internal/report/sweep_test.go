package report

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"gpuz/internal/bench"
)

// sweepResult is a sweep over --take 0,8 and --win-size 1,3 on an 8 GiB
// simulated device: cuda runs out of memory under the take, cache
// completes in every configuration.
var sweepResult = func() bench.SweepResult {
	s := bench.SweepResult{Parameters: []string{"take", "win_size"}}
	for _, take := range []int64{0, 8} {
		for _, win := range []string{"1", "3"} {
			cuda := bench.ModeResult{Mode: bench.ModeCUDA, Simulated: true, Device: "sim:8GiB", Epochs: withCopies(epochs(6.2, 4.31, 4.25, 4.28, 4.22), 0, 0, 0), Warmup: 1,
				PeakDeviceBytes: 7_500_000_000, Status: bench.Status{Kind: bench.StatusOK}}
			if take > 0 {
				cuda = bench.ModeResult{Mode: bench.ModeCUDA, Simulated: true, Device: "sim:8GiB", Status: bench.Status{Kind: bench.StatusOOM, Reason: "needs 6.98 GiB, 6.81 GiB of 8.00 GiB free"}}
			}
			cache := bench.ModeResult{Mode: bench.ModeCache, Simulated: true, Device: "sim:8GiB", Placement: "window " + win + "/12", PlacementKeys: windowKeys(win),
				Epochs: withCopies(epochs(5.9, 4.48, 4.51, 4.47, 4.5), 9<<30, 6<<30, 2*time.Second), Warmup: 1,
				PeakDeviceBytes: 240 << 20, Status: bench.Status{Kind: bench.StatusOK}}
			s.Rows = append(s.Rows, bench.SweepRow{
				Settings:  []bench.Setting{{Name: "take", Value: map[int64]string{0: "0", 8: "8"}[take]}, {Name: "win_size", Value: win}},
				TakeBytes: take * 160_080_000, DeviceFreeBytes: 8<<30 - take*160_080_000,
				Result: bench.Result{Header: linearHeader, Modes: []bench.ModeResult{cuda, cache}, PeakRSSBytes: 9_100_000_000},
			})
		}
	}
	return s
}()

// precisionSweep is a sweep over --precision fp32,bf16,fp16 of linear
// training on a 4 GiB simulated device: cuda fits only in 16 bits, fp16
// skips steps as its loss scale comes down.
var precisionSweep = func() bench.SweepResult {
	s := bench.SweepResult{Parameters: []string{"precision"}}
	for _, p := range []string{"fp32", "bf16", "fp16"} {
		h := linearHeader
		h.Precision = p
		cuda := bench.ModeResult{Mode: bench.ModeCUDA, Simulated: true, Device: "sim:4GiB", Status: bench.Status{Kind: bench.StatusOOM, Reason: "needs 6.98 GiB, 4.00 GiB of 4.00 GiB free"}}
		cache := bench.ModeResult{Mode: bench.ModeCache, Simulated: true, Device: "sim:4GiB", Placement: "window 3/12", PlacementKeys: windowKeys("3"),
			Epochs: withCopies(epochs(5.9, 4.48, 4.51, 4.47, 4.5), 9<<30, 6<<30, 2*time.Second), Warmup: 1,
			PeakDeviceBytes: 240 << 20, Status: bench.Status{Kind: bench.StatusOK}}
		if p != "fp32" {
			cuda = bench.ModeResult{Mode: bench.ModeCUDA, Simulated: true, Device: "sim:4GiB", Epochs: withCopies(epochs(4.2, 3.31, 3.25, 3.28, 3.22), 0, 0, 0), Warmup: 1,
				PeakDeviceBytes: 3_900_000_000, Status: bench.Status{Kind: bench.StatusOK}}
			cache.PeakDeviceBytes, cache.Epochs = 130<<20, withCopies(epochs(4.9, 3.48, 3.51, 3.47, 3.5), 9<<29, 6<<29, time.Second)
		}
		if p == "fp16" {
			cuda.Epochs, cuda.LossScale = withSkipped(cuda.Epochs, 3), 8192
			cache.Epochs, cache.LossScale = withSkipped(cache.Epochs, 3, 0, 1), 4096
		}
		s.Rows = append(s.Rows, bench.SweepRow{Settings: []bench.Setting{{Name: "precision", Value: p}}, DeviceFreeBytes: 4 << 30,
			Result: bench.Result{Header: h, Modes: []bench.ModeResult{cuda, cache}}})
	}
	return s
}()

// TestWriteSweepPrecision renders a sweep over the precision: a row per
// precision and mode, the skipped column (fp16's rows only) and a note
// for each 16-bit precision; the CSV's precision column and the benchmark
// names follow each row's.
func TestWriteSweepPrecision(t *testing.T) {
	checkGoldens(t, []goldenCase{
		{"sweep_precision.golden", func(w io.Writer) error { return WriteSweep(w, precisionSweep, Options{Format: FormatText}) }},
		{"sweep_precision.csv.golden", func(w io.Writer) error { return WriteSweep(w, precisionSweep, Options{Format: FormatCSV}) }},
	})
	var names []string
	for _, r := range readBench(t, written(t, func(w io.Writer) error { return WriteSweepBenchfmt(w, precisionSweep) })) {
		if n := r.Name.String(); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	const base = "Gpuz/workload=linear/task=train/mode="
	want := []string{
		// A plain run's names: the precision once, from the header
		// (none for fp32), not again as the sweep's setting.
		base + "cache/device=sim:4GiB/policy=window/window=3/scale=full",
		base + "cuda/device=sim:4GiB/precision=bf16/scale=full",
		base + "cache/device=sim:4GiB/policy=window/window=3/precision=bf16/scale=full",
		base + "cuda/device=sim:4GiB/precision=fp16/scale=full",
		base + "cache/device=sim:4GiB/policy=window/window=3/precision=fp16/scale=full",
	}
	if !slices.Equal(names, want) {
		t.Errorf("benchmark names\n%s\nwant\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
}

// TestWriteSweepJSON checks the sweep's JSON against the schema gpuz plot
// reads: version, kind, header, parameters, and rows of settings, take,
// free memory and a run's result object.
func TestWriteSweepJSON(t *testing.T) {
	s := sweepResult
	s.Rows = append([]bench.SweepRow{}, s.Rows...)
	s.Rows[0].Result = withEnv(s.Rows[0].Result)
	got := written(t, func(w io.Writer) error { return WriteSweep(w, s, Options{Format: FormatJSON}) })
	var doc struct {
		Version    int             `json:"version"`
		Kind       string          `json:"kind"`
		Header     json.RawMessage `json:"header"`
		Parameters []string        `json:"parameters"`
		Rows       []struct {
			Settings        map[string]string `json:"settings"`
			TakeBytes       int64             `json:"take_bytes"`
			DeviceFreeBytes int64             `json:"device_free_bytes"`
			Result          map[string]any    `json:"result"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(got), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != 2 || doc.Kind != "sweep" || strings.Join(doc.Parameters, ",") != "take,win_size" || len(doc.Rows) != 4 {
		t.Fatalf("version %d, kind %q, parameters %v, %d rows", doc.Version, doc.Kind, doc.Parameters, len(doc.Rows))
	}
	var run bench.Result = s.Rows[0].Result
	want := written(t, func(w io.Writer) error { return WriteJSON(w, run) })
	var wantDoc map[string]any
	if err := json.Unmarshal([]byte(want), &wantDoc); err != nil {
		t.Fatal(err)
	}
	if h, _ := json.Marshal(wantDoc["header"]); !jsonEqual(t, h, doc.Header) {
		t.Errorf("the sweep's header is not the run's:\n%s\nwant\n%s", doc.Header, h)
	}
	r := doc.Rows[2]
	if r.Settings["take"] != "8" || r.Settings["win_size"] != "1" || r.TakeBytes != 1_280_640_000 || r.DeviceFreeBytes != 8<<30-1_280_640_000 {
		t.Errorf("row 2: %+v", r)
	}
	if _, ok := r.Result["kind"]; ok || r.Result["version"] != float64(2) || len(r.Result["modes"].([]any)) != 2 {
		t.Errorf("row 2's result is not a run's object: %v", r.Result)
	}
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// TestWriteSweepBenchfmt names each configuration's lines with its
// settings after the scale.
func TestWriteSweepBenchfmt(t *testing.T) {
	got := written(t, func(w io.Writer) error { return WriteSweepBenchfmt(w, sweepResult) })
	for _, want := range []string{
		"BenchmarkGpuz/workload=linear/task=train/mode=cuda/device=sim:8GiB/scale=full/take=0/win_size=1 1 4.31 sec/op",
		"BenchmarkGpuz/workload=linear/task=train/mode=cache/device=sim:8GiB/policy=window/window=3/scale=full/take=8/win_size=3 1 4.48 sec/op",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("benchmark lines lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "mode=cuda/device=sim:8GiB/scale=full/take=8") {
		t.Error("the OOM configuration wrote lines")
	}
}

// TestWriteSweepJSONFreeMemory: a row whose device had 0 bytes free (the
// take held all of it) writes device_free_bytes 0, a measurement, and a
// row without a device (-1) writes null: the two are not confused.
func TestWriteSweepJSONFreeMemory(t *testing.T) {
	s := sweepResult
	s.Rows = append([]bench.SweepRow{}, s.Rows[:2]...)
	s.Rows[0].DeviceFreeBytes, s.Rows[1].DeviceFreeBytes = 0, -1
	got := written(t, func(w io.Writer) error { return WriteSweepJSON(w, s) })
	var doc struct {
		Rows []struct {
			DeviceFreeBytes *int64 `json:"device_free_bytes"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(got), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Rows) != 2 || doc.Rows[0].DeviceFreeBytes == nil || *doc.Rows[0].DeviceFreeBytes != 0 || doc.Rows[1].DeviceFreeBytes != nil {
		t.Errorf("device_free_bytes of the rows: %s; want 0, then null", got)
	}
	if !strings.Contains(got, `"device_free_bytes": 0,`) || !strings.Contains(got, `"device_free_bytes": null,`) {
		t.Errorf("want a literal 0 and a null:\n%.2000s", got)
	}
}
