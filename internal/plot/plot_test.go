package plot

import (
	"bytes"
	"encoding/xml"
	"image"
	_ "image/png"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"gpuz/internal/results"
	"gpuz/internal/stats"
)

// readChart builds the chart of the fixture testdata/name.
func readChart(t *testing.T, name string) Chart {
	t.Helper()
	doc, err := ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Build(doc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// near says whether a and b agree to a part in 10⁹ (or are the same
// infinity).
func near(a, b float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b))
}

// wantInterval checks iv against the mean and interval of seconds, in ms.
func wantInterval(t *testing.T, what string, iv Interval, seconds []float64) {
	t.Helper()
	s := stats.MeanCI(seconds)
	want := Interval{Mean: s.Center * 1e3, Lo: s.Lo * 1e3, Hi: s.Hi * 1e3}
	if !near(iv.Mean, want.Mean) || !near(iv.Lo, want.Lo) || !near(iv.Hi, want.Hi) {
		t.Errorf("%s: interval %+v, want %+v", what, iv, want)
	}
}

func TestBuildRun(t *testing.T) {
	c := readChart(t, "run.json")
	if c.Unit != "ms" || !strings.Contains(c.YLabel, "(ms)") {
		t.Errorf("unit %q, y label %q; want ms", c.Unit, c.YLabel)
	}
	for _, want := range []string{"linear train, small scale", "sim:4GiB", "gpuz 0123456789ab"} {
		if !strings.Contains(c.Title, want) {
			t.Errorf("title %q does not name %q", c.Title, want)
		}
	}
	if strings.Contains(c.Title, NoCINote) {
		t.Errorf("title %q says a bar has no error bar; every mode has 2 or more timed epochs", c.Title)
	}
	if len(c.Bars) != 3 || len(c.Lines) != 0 || len(c.Bands) != 0 {
		t.Fatalf("%d bars, %d lines, %d bands; want 3 bars only", len(c.Bars), len(c.Lines), len(c.Bands))
	}
	cpu, cuda, cache := c.Bars[0], c.Bars[1], c.Bars[2]
	if cpu.Label != "cpu (host)" || cpu.Status != "ok" || cpu.Missing {
		t.Errorf("cpu bar %+v", cpu)
	}
	if !near(cpu.Mean, 1225.0/6) || !cpu.HasCI() {
		t.Errorf("cpu: mean %g ms with interval %v, want 204.17 with a finite interval (6 timed epochs)", cpu.Mean, cpu.HasCI())
	}
	wantInterval(t, "cpu", cpu.Interval, []float64{0.20, 0.21, 0.19, 0.22, 0.20, 0.205})
	if !cuda.Missing || cuda.Status != "OOM" || cuda.Mean != 0 {
		t.Errorf("cuda bar %+v, want a missing bar with status OOM", cuda)
	}
	if cache.Missing || !near(cache.Mean, 60.5) || !cache.HasCI() {
		t.Errorf("cache bar %+v, want mean 60.5 ms with a finite interval (4 timed epochs)", cache)
	}
}

func TestBuildTakeSweep(t *testing.T) {
	c := readChart(t, "take_sweep.json")
	if strings.Contains(c.Title, NoCINote) {
		t.Errorf("title %q: every point of the sweep has an error bar", c.Title)
	}
	if !strings.Contains(c.XLabel, "free device memory (GiB)") || c.Unit != "ms" {
		t.Errorf("x label %q, unit %q", c.XLabel, c.Unit)
	}
	if len(c.Bars) != 0 || len(c.Lines) != 2 || len(c.Bands) != 1 {
		t.Fatalf("%d bars, %d lines, %d bands; want 2 lines and a band", len(c.Bars), len(c.Lines), len(c.Bands))
	}
	free := func(take int64) float64 { return float64(4<<30-take*160080000) / (1 << 30) }
	cuda, cache := c.Lines[0], c.Lines[1]
	if cuda.Label != "cuda" || cache.Label != "cache" {
		t.Errorf("lines %q, %q; want cuda, cache", cuda.Label, cache.Label)
	}
	// Points and failures in increasing free memory.
	if len(cuda.Points) != 2 || !near(cuda.Points[0].X, free(4)) || !near(cuda.Points[1].X, 4) {
		t.Errorf("cuda points %+v, want at %g and 4 GiB", cuda.Points, free(4))
	}
	wantInterval(t, "cuda at take 0", cuda.Points[1].Interval, []float64{0.030, 0.031, 0.029, 0.032, 0.030, 0.0305})
	if len(cuda.Failures) != 2 || !near(cuda.Failures[0].X, free(12)) || !near(cuda.Failures[1].X, free(8)) ||
		cuda.Failures[0].Status != "OOM" || cuda.Failures[1].Status != "OOM" {
		t.Errorf("cuda failures %+v, want OOM at %g and %g GiB", cuda.Failures, free(12), free(8))
	}
	if len(cache.Points) != 4 || len(cache.Failures) != 0 || !near(cache.Points[0].Mean, 80.25+1.0/6) || !near(cache.Points[3].Mean, 60.25+1.0/6) {
		t.Errorf("cache points %+v, want 4 from 80.42 ms to 60.42 ms", cache.Points)
	}
	// The band pools the cpu's timed epochs of every row.
	var cpu []float64
	for _, take := range []float64{0, 4, 8, 12} {
		for _, s := range []float64{0.20, 0.21, 0.19, 0.22, 0.20, 0.205} {
			cpu = append(cpu, s+0.001*take)
		}
	}
	if c.Bands[0].Label != "cpu" || !c.Bands[0].HasCI() {
		t.Errorf("band %+v, want cpu with an interval", c.Bands[0])
	}
	wantInterval(t, "cpu band", c.Bands[0].Interval, cpu)
}

func TestBuildWindowSweep(t *testing.T) {
	c := readChart(t, "window_sweep.json")
	if c.XLabel != "cache window (blocks)" {
		t.Errorf("x label %q", c.XLabel)
	}
	if len(c.Lines) != 1 || len(c.Bands) != 1 {
		t.Fatalf("%d lines, %d bands; want 1 and 1", len(c.Lines), len(c.Bands))
	}
	var xs, means []float64
	for _, p := range c.Lines[0].Points {
		xs, means = append(xs, p.X), append(means, p.Mean)
	}
	wantX, wantM := []float64{1, 3, 6}, []float64{150.25 + 1.0/6, 60.25 + 1.0/6, 40.25 + 1.0/6}
	for i := range wantX {
		if len(xs) != 3 || !near(xs[i], wantX[i]) || !near(means[i], wantM[i]) {
			t.Fatalf("cache points at %v with means %v ms, want %v and %v", xs, means, wantX, wantM)
		}
	}
	if !near(c.Bands[0].Mean, 1225.0/6) {
		t.Errorf("cpu band mean %g ms, want 204.17", c.Bands[0].Mean)
	}
}

// TestSweepTitleLevers: a sweep's title names a lever its configurations
// share, as a run's does, but not a swept one, whose values the lines'
// labels name.
func TestSweepTitleLevers(t *testing.T) {
	for _, tt := range []struct {
		name   string
		params []string
		want   string // in the title
		label  string // in the first line's label
	}{
		{"shared precision", []string{"take"}, "linear train, small scale, recompute blocks, bf16, on", "cuda"},
		{"swept precision", []string{"take", "precision"}, "linear train, small scale, recompute blocks, on", "cuda precision=bf16"},
		{"swept recompute", []string{"recompute", "take"}, "linear train, small scale, bf16, on", "cuda recompute=blocks"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := ReadFile("testdata/take_sweep.json")
			if err != nil {
				t.Fatal(err)
			}
			doc.Header.Model, doc.Header.Task, doc.Header.Scale = "linear", "train", "small"
			doc.Header.Recompute, doc.Header.Precision = "blocks", "bf16"
			doc.Parameters = tt.params
			for i := range doc.Rows {
				doc.Rows[i].Settings["precision"], doc.Rows[i].Settings["recompute"] = "bf16", "blocks"
			}
			c, err := Build(doc)
			if err != nil {
				t.Fatal(err)
			}
			if first, _, _ := strings.Cut(c.Title, "\n"); !strings.HasPrefix(first, tt.want) {
				t.Errorf("title %q, want it to start %q", first, tt.want)
			}
			if c.Lines[0].Label != tt.label {
				t.Errorf("first line %q, want %q", c.Lines[0].Label, tt.label)
			}
		})
	}
}

// TestBuildSeveralParameters draws a sweep over two parameters against
// take, one line per mode and setting of the other.
func TestBuildSeveralParameters(t *testing.T) {
	doc, err := ReadFile("testdata/take_sweep.json")
	if err != nil {
		t.Fatal(err)
	}
	doc.Parameters = []string{"batch", "take"}
	for i := range doc.Rows {
		doc.Rows[i].Settings["batch"] = []string{"30", "30", "60", "60"}[i]
	}
	c, err := Build(doc)
	if err != nil {
		t.Fatal(err)
	}
	var lines, bands []string
	for _, l := range c.Lines {
		lines = append(lines, l.Label)
	}
	for _, b := range c.Bands {
		bands = append(bands, b.Label)
	}
	want := "cuda batch=30, cache batch=30, cuda batch=60, cache batch=60 | cpu batch=30, cpu batch=60"
	if got := strings.Join(lines, ", ") + " | " + strings.Join(bands, ", "); got != want {
		t.Errorf("series %q, want %q", got, want)
	}
	if l := c.Lines[2]; len(l.Points) != 0 || len(l.Failures) != 2 {
		t.Errorf("cuda batch=60: %+v, want two failures only", l)
	}
}

func TestBadInput(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"empty", "", "not a gpuz JSON file"},
		{"benchfmt", "BenchmarkGpuz 1 2 sec/op\n", "not a gpuz JSON file"},
		{"broken", `{"version": 2,`, "not a gpuz JSON file"},
		{"no version", `{"modes": []}`, "no version"},
		{"newer", `{"version": 99}`, "version 99"},
		{"kind", `{"version": 2, "kind": "plan"}`, `unknown kind "plan"`},
		{"no timed epochs", `{"version": 2, "modes": [{"mode": "cuda", "status": "OOM"}, {"mode": "cpu", "status": "ok", "epochs": [{"warmup": true, "seconds": 1}]}]}`, "no timed epochs"},
		{"plan", `{"version": 2, "header": {}, "plan": {}}`, "no timed epochs"},
		{"sweep over batch", `{"version": 2, "kind": "sweep", "parameters": ["batch"], "rows": []}`, "sweeps over take or win_size"},
		{"sweep without rows", `{"version": 2, "kind": "sweep", "parameters": ["take"]}`, "no rows"},
		{"sweep all OOM", `{"version": 2, "kind": "sweep", "parameters": ["take"], "rows": [{"settings": {"take": "1"}, "result": {"version": 2, "modes": [{"mode": "cuda", "status": "OOM"}]}}]}`, "no timed epochs"},
		{"bad window", `{"version": 2, "kind": "sweep", "parameters": ["win_size"], "rows": [{"settings": {"win_size": "x"}}]}`, "not a number"},
		// Epoch times that are no times: a negative bar, or one 10³⁰⁸ s tall.
		{"negative time", `{"version": 2, "modes": [{"mode": "cpu", "status": "ok", "epochs": [{"seconds": 1}, {"seconds": -1}]}]}`, "negative time: mode cpu, epoch 1: epoch time -1 s is negative"},
		{"negative warm-up", `{"version": 2, "modes": [{"mode": "cpu", "status": "ok", "epochs": [{"warmup": true, "seconds": -3}, {"seconds": 1}]}]}`, "mode cpu, epoch 0: epoch time -3 s is negative"},
		{"huge time", `{"version": 2, "modes": [{"mode": "cuda", "status": "ok", "epochs": [{"seconds": 1e308}]}]}`, "mode cuda, epoch 0: epoch time 1e+308 s is beyond 1e+09 s"},
		{"negative time in a sweep", `{"version": 2, "kind": "sweep", "parameters": ["take", "win_size"], "rows": [` +
			`{"settings": {"take": "0", "win_size": "1"}, "result": {"version": 2, "modes": [{"mode": "cpu", "status": "ok", "epochs": [{"seconds": 1}]}]}},` +
			`{"settings": {"take": "8", "win_size": "1"}, "result": {"version": 2, "modes": [{"mode": "cache", "status": "ok", "epochs": [{"seconds": -0.5}]}]}}]}`,
			"negative time in a sweep: row 1 (take=8 win_size=1), mode cache, epoch 0: epoch time -0.5 s is negative"},
	} {
		doc, err := Parse(tc.name, []byte(tc.data))
		if err == nil {
			_, err = Build(doc)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line with %q", tc.name, err, tc.want)
		}
	}
	if _, err := ReadFile("testdata/missing.json"); err == nil {
		t.Error("a missing file: no error")
	}
}

func TestFormatOf(t *testing.T) {
	for path, want := range map[string]Format{"a.svg": FormatSVG, "b/c.PNG": FormatPNG, "d.pdf": "", "e": "", "f.svg.txt": ""} {
		got, err := FormatOf(path)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("FormatOf(%q) = %q, %v; want %q", path, got, err, want)
		}
	}
}

// TestRender writes every fixture as SVG and PNG and checks that the SVG
// parses as XML with an <svg> root and the PNG decodes to a non-empty image.
func TestRender(t *testing.T) {
	for _, name := range []string{"run.json", "take_sweep.json", "window_sweep.json"} {
		c := readChart(t, name)
		var svg, png bytes.Buffer
		if err := Render(&svg, c, FormatSVG); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var root struct{ XMLName xml.Name }
		if err := xml.Unmarshal(svg.Bytes(), &root); err != nil || root.XMLName.Local != "svg" {
			t.Errorf("%s: SVG root %q, error %v", name, root.XMLName.Local, err)
		}
		if err := Render(&png, c, FormatPNG); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		img, format, err := image.Decode(&png)
		if err != nil || format != "png" || img.Bounds().Dx() == 0 || img.Bounds().Dy() == 0 {
			t.Errorf("%s: PNG %q decodes with error %v", name, format, err)
		}
	}
}

// TestTitle: a header without an environment or a VCS stamp says
// "revision unknown"; a dirty build says so; a run on the host names it.
func TestTitle(t *testing.T) {
	for _, tc := range []struct {
		h    results.Header
		devs []string
		want string
	}{
		{results.Header{Model: "linear", Task: "eval"}, nil, "linear eval, on host\ngpuz revision unknown"},
		{results.Header{Model: "resnet", Task: "train", Scale: "full", Env: &results.Env{Revision: "unknown"}}, []string{"sim:8GiB"}, "resnet train, full scale, on sim:8GiB\ngpuz revision unknown"},
		{results.Header{Model: "attention", Task: "train", GPU: "cuda:0", Env: &results.Env{Revision: "0123456789abcdef", Modified: "true"}}, nil, "attention train, on cuda:0\ngpuz 0123456789ab-dirty"},
		{results.Header{Model: "linear", Task: "train", Scale: "small", Recompute: "none", Precision: "fp32"}, nil, "linear train, small scale, on host\ngpuz revision unknown"},
		{results.Header{Model: "linear", Task: "eval", Precision: "bf16"}, nil, "linear eval, bf16, on host\ngpuz revision unknown"},
		{results.Header{Model: "resnet", Task: "train", Scale: "demo", Recompute: "blocks", Precision: "fp16"}, []string{"sim:8GiB"},
			"resnet train, demo scale, recompute blocks, fp16, on sim:8GiB\ngpuz revision unknown"},
		{results.Header{Model: "resnet", Task: "eval", Recompute: "blocks"}, nil, "resnet eval, on host\ngpuz revision unknown"},
		{results.Header{Model: "llm llama-3.2-1b", Task: "train", Precision: "bf16", LoRA: "R=16 α=16 q_proj,v_proj", LoRARank: 16}, []string{"sim:rtx4060-laptop"},
			"llm llama-3.2-1b train, bf16, LoRA R=16, on sim:rtx4060-laptop\ngpuz revision unknown"},
	} {
		if got := title(tc.h, tc.devs); got != tc.want {
			t.Errorf("title %q, want %q", got, tc.want)
		}
	}
}

// TestSweepFreeMemoryUnit draws the take sweep's fixture (4 GiB free at
// most) and the same sweep with every row's free memory scaled to a 256
// MiB device: the first in GiB, the second in MiB (issue 36 item 21: a
// 256 MiB device's axis read 0.05, 0.15… GiB). The unit follows the
// largest free memory of the rows: exactly 1 GiB is still drawn in GiB.
func TestSweepFreeMemoryUnit(t *testing.T) {
	for _, tt := range []struct {
		name  string
		scale float64 // of every row's free memory (4 GiB at most)
		label string
		top   float64 // the rightmost point, in the axis's unit
	}{
		{"4 GiB", 1, "free device memory (GiB)", 4},
		{"1 GiB", 1.0 / 4, "free device memory (GiB)", 1},
		{"256 MiB", 1.0 / 16, "free device memory (MiB)", 256},
		{"just under 1 GiB", (1<<30 - 1<<20) / float64(4<<30), "free device memory (MiB)", 1023},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := ReadFile(filepath.Join("testdata", "take_sweep.json"))
			if err != nil {
				t.Fatal(err)
			}
			for i := range doc.Rows {
				if f := doc.Rows[i].DeviceFreeBytes; f != nil {
					scaled := int64(float64(*f) * tt.scale)
					doc.Rows[i].DeviceFreeBytes = &scaled
				}
			}
			c, err := Build(doc)
			if err != nil {
				t.Fatal(err)
			}
			var top float64
			for _, l := range c.Lines {
				for _, p := range l.Points {
					top = max(top, p.X)
				}
			}
			if c.XLabel != tt.label || !near(top, tt.top) {
				t.Errorf("x label %q, rightmost point %g; want %q and %g", c.XLabel, top, tt.label, tt.top)
			}
		})
	}
}
