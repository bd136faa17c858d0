package report

import (
	"io"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"gpuz/internal/bench"
	"gpuz/internal/sysinfo"
)

// readBench parses text in the Go benchmark format, failing the test on a
// syntax error.
func readBench(t *testing.T, text string) []*benchfmt.Result {
	t.Helper()
	r := benchfmt.NewReader(strings.NewReader(text), "test.txt")
	var out []*benchfmt.Result
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.Result:
			out = append(out, rec.Clone())
		case *benchfmt.SyntaxError:
			t.Fatalf("syntax error: %v\n%s", rec, text)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWriteBenchfmtReadsBack writes a run with a cpu mode, a cache mode that
// was interrupted after one timed epoch and a cuda mode on a named GPU, and
// reads the lines back with benchfmt.Reader: one result per timed epoch,
// warm-up left out, with the names, values, units and file configuration
// written.
func TestWriteBenchfmtReadsBack(t *testing.T) {
	r := interruptedResult
	r.Modes = append(r.Modes[:len(r.Modes):len(r.Modes)], evalResult.Modes[0], failedResult.Modes[0])
	text := written(t, func(w io.Writer) error { return WriteBenchfmt(w, r) })
	got := readBench(t, text)

	const base = "Gpuz/workload=linear/task=train/"
	type want struct {
		name string
		sec  float64
		up   float64 // -1: no copy units
	}
	wants := []want{
		{base + "mode=cpu/device=host/scale=full", 24.2, -1},
		{base + "mode=cpu/device=host/scale=full", 24.0, -1},
		{base + "mode=cuda/device=sim:8GiB/scale=full", 4.31, 0},
		{base + "mode=cuda/device=sim:8GiB/scale=full", 4.25, 0},
		{base + "mode=cuda/device=sim:8GiB/scale=full", 4.28, 0},
		{base + "mode=cuda/device=sim:8GiB/scale=full", 4.22, 0},
		{base + "mode=cache/device=sim:8GiB/policy=window/window=3/scale=full", 4.48, 9 << 30},
		{base + "mode=cuda/device=cuda:0/scale=full", 0.611, 0},
		{base + "mode=cuda/device=cuda:0/scale=full", 0.608, 0},
		{base + "mode=cuda/device=cuda:0/scale=full", 0.615, 0},
		{base + "mode=cuda/device=cuda:0/scale=full", 0.609, 0},
	}
	if len(got) != len(wants) {
		t.Fatalf("%d results, want %d:\n%s", len(got), len(wants), text)
	}
	for i, w := range wants {
		g := got[i]
		if g.Name.String() != w.name || g.Iters != 1 {
			t.Errorf("result %d: name %q, iters %d; want %q, 1", i, g.Name, g.Iters, w.name)
		}
		if sec, ok := g.Value("sec/op"); !ok || math.Abs(sec-w.sec) > 1e-6 {
			t.Errorf("result %d (%s): sec/op %v (%v), want %v", i, g.Name, sec, ok, w.sec)
		}
		up, okUp := g.Value("h2d-B/epoch")
		_, okDown := g.Value("d2h-B/epoch")
		switch {
		case w.up < 0 && (okUp || okDown):
			t.Errorf("result %d (%s): copy units on a mode without copies", i, g.Name)
		case w.up >= 0 && (!okUp || !okDown || up != w.up):
			t.Errorf("result %d (%s): h2d-B/epoch %v (%v), d2h-B/epoch present %v; want %v", i, g.Name, up, okUp, okDown, w.up)
		}
		if g.GetConfig("goos") != runtime.GOOS || g.GetConfig("goarch") != runtime.GOARCH || g.GetConfig("pkg") != "gpuz" {
			t.Errorf("result %d: config goos %q goarch %q pkg %q", i, g.GetConfig("goos"), g.GetConfig("goarch"), g.GetConfig("pkg"))
		}
	}
	if base, parts := got[6].Name.Parts(); string(base) != "Gpuz" || len(parts) != 7 {
		t.Errorf("name parts %q %q, want base Gpuz and 7 keys", base, parts)
	}
}

// TestBenchfmtConfigFromEnv takes the file configuration from the run's
// environment (its OS and CPU model, no cpu where the environment does not
// know it) and names the build and the command line in the provenance
// line, which readers skip: two builds' files must not differ in
// configuration, or benchstat would not compare them.
func TestBenchfmtConfigFromEnv(t *testing.T) {
	e := testEnv()
	e.OS = "freebsd/arm64"
	want := [][2]string{{"goos", "freebsd"}, {"goarch", "arm64"}, {"pkg", "gpuz"}, {"cpu", testEnv().CPU}}
	if got := fileConfig(e); !reflect.DeepEqual(got, want) {
		t.Errorf("fileConfig = %q, want %q", got, want)
	}
	e.CPU = sysinfo.Unknown
	if got := fileConfig(e); !reflect.DeepEqual(got, want[:3]) {
		t.Errorf("fileConfig with unknown CPU = %q, want %q", got, want[:3])
	}
	text := written(t, func(w io.Writer) error { return WriteBenchfmt(w, withEnv(interruptedResult)) })
	first, _, _ := strings.Cut(text, "\n")
	for _, part := range []string{"# gpuz ", testEnv().Revision + ", modified", testEnv().CommandLine} {
		if !strings.Contains(first, part) {
			t.Errorf("provenance line %q lacks %q", first, part)
		}
	}
	g := readBench(t, text)[0]
	if g.GetConfig("cpu") != testEnv().CPU {
		t.Errorf("written cpu %q, want the environment's", g.GetConfig("cpu"))
	}
	for _, c := range g.Config {
		if strings.Contains(string(c.Value), testEnv().Revision) {
			t.Errorf("configuration %s: %q names the revision: builds would not compare", c.Key, c.Value)
		}
	}
}

// TestBenchNameLevers names the levers in the documented order, after the
// placement and before the scale: recompute only when training with it,
// the precision only when 16-bit (an old header's "" reads as fp32).
func TestBenchNameLevers(t *testing.T) {
	cache := bench.ModeResult{Mode: bench.ModeCache, Simulated: true, Device: "sim:8GiB", Placement: "window 3/12", PlacementKeys: windowKeys("3")}
	const base = "Gpuz/workload=linear/task="
	for _, tt := range []struct {
		name                       string
		task                       bench.Task
		recompute, precision, want string
	}{
		{"defaults", bench.TaskTrain, "none", "fp32", base + "train/mode=cache/device=sim:8GiB/policy=window/window=3/scale=full"},
		{"header from before the levers", bench.TaskTrain, "", "", base + "train/mode=cache/device=sim:8GiB/policy=window/window=3/scale=full"},
		{"bf16", bench.TaskEval, "none", "bf16", base + "eval/mode=cache/device=sim:8GiB/policy=window/window=3/precision=bf16/scale=full"},
		{"recompute and fp16", bench.TaskTrain, "blocks", "fp16",
			base + "train/mode=cache/device=sim:8GiB/policy=window/window=3/recompute=blocks/precision=fp16/scale=full"},
		{"recompute in eval is left out", bench.TaskEval, "blocks", "fp16", base + "eval/mode=cache/device=sim:8GiB/policy=window/window=3/precision=fp16/scale=full"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := bench.Header{Model: "linear", Task: string(tt.task), Scale: "full", Recompute: tt.recompute, Precision: tt.precision}
			if got := benchName(h, cache.Mode, cache.Device, cache.PlacementKeys); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	// Gradient accumulation, after the precision: its runs compare apart
	// from one batch's.
	h := bench.Header{Model: "linear", Task: "train", Scale: "full", Recompute: "none", Precision: "bf16", GradAccum: 2}
	if got, want := benchName(h, cache.Mode, cache.Device, cache.PlacementKeys), base+"train/mode=cache/device=sim:8GiB/policy=window/window=3/precision=bf16/grad_accum=2/scale=full"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// windowKeys is the placement keys of the window policy's placement with
// window blocks resident.
func windowKeys(window string) [][2]string {
	return [][2]string{{"policy", "window"}, {"window", window}}
}
