package main

import (
	"context"
	"encoding/xml"
	"errors"
	"image"
	_ "image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuz/internal/bench"
)

// plotFixtures is where internal/plot keeps its hand-made result files.
const plotFixtures = "../../internal/plot/testdata"

// checkImage checks that path holds a valid image of its extension's
// format: SVG that parses as XML with an <svg> root, or PNG that decodes to
// a non-empty image.
func checkImage(t *testing.T, path string) {
	t.Helper()
	data := readFile(t, path)
	if strings.HasSuffix(path, ".svg") {
		var root struct{ XMLName xml.Name }
		if err := xml.Unmarshal(data, &root); err != nil || root.XMLName.Local != "svg" {
			t.Errorf("%s: root %q, error %v; want <svg>", path, root.XMLName.Local, err)
		}
		return
	}
	img, format, err := image.Decode(strings.NewReader(string(data)))
	if err != nil || format != "png" || img.Bounds().Empty() {
		t.Errorf("%s: format %q, error %v; want a non-empty PNG", path, format, err)
	}
}

// TestPlotCommand draws a run and both sweeps as SVG and PNG: status 0,
// nothing on standard output, a valid image.
func TestPlotCommand(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"run", "take_sweep", "window_sweep"} {
		for _, ext := range []string{".svg", ".png"} {
			out := filepath.Join(dir, name+ext)
			var stdout, stderr strings.Builder
			args := []string{"plot", filepath.Join(plotFixtures, name+".json"), "-o", out}
			if code := run(context.Background(), args, &stdout, &stderr); code != exitOK || stdout.Len() != 0 {
				t.Fatalf("%q: exit status %d, stdout %q, stderr %q", args, code, stdout.String(), stderr.String())
			}
			checkImage(t, out)
		}
	}
}

// TestPlotBadInput: a bad results file, a bad or missing -o and a bad
// --plot are usage errors, one line each.
func TestPlotBadInput(t *testing.T) {
	dir := t.TempDir()
	// testdata holds results files plot refuses: benchmark lines, a plan's
	// JSON and a run's with no timed epoch.
	bench, kind, untimed := "testdata/bench.txt", "testdata/kind.json", "testdata/untimed.json"
	good := filepath.Join(plotFixtures, "run.json")
	out := filepath.Join(dir, "out.svg")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plot"}, "one results file; got 0"},
		{[]string{"plot", good, good, "-o", out}, "one results file; got 2"},
		{[]string{"plot", good}, "plot needs -o"},
		{[]string{"plot", good, "-o", filepath.Join(dir, "out.pdf")}, `unknown image format ".pdf"`},
		{[]string{"plot", good, "-o", filepath.Join(dir, "out")}, "no extension"},
		{[]string{"plot", good, "-o", filepath.Join(dir, "missing", "out.svg")}, "no such file or directory"},
		{[]string{"plot", good, "-o", "-"}, "standard output is not allowed"},
		{[]string{"plot", filepath.Join(dir, "missing.json"), "-o", out}, "no such file"},
		{[]string{"plot", dir, "-o", out}, "is a directory"},
		{[]string{"plot", bench, "-o", out}, "not a gpuz JSON file"},
		{[]string{"plot", kind, "-o", out}, `unknown kind "plan"`},
		{[]string{"plot", untimed, "-o", out}, "no timed epochs"},
		{[]string{"linear", "train", "cpu", "--plot", filepath.Join(dir, "run.jpg")}, `--plot ` + filepath.Join(dir, "run.jpg") + `: unknown image format ".jpg"`},
		{[]string{"linear", "train", "cpu", "--plot", filepath.Join(dir, "missing", "run.svg")}, "--plot"},
		{[]string{"linear", "train", "cpu", "--plot", out, "--bench-out", out}, "name the same file"},
		{[]string{"plan", "linear", "train", "--plot", filepath.Join(dir, "plan.gif")}, `--plot ` + filepath.Join(dir, "plan.gif") + `: unknown image format ".gif"`},
	} {
		wantUsageError(t, tc.args, tc.want)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused plot left %s behind: %v", out, err)
	}
}

// TestRunPlot runs the small linear workload with --plot: the image is
// drawn from the run's results.
func TestRunPlot(t *testing.T) {
	for _, ext := range []string{".svg", ".png"} {
		ios, _, errOut := testIO()
		opts := smallLinear(ios, "cpu")
		opts.Sizes = map[string]int{"epochs": 2}
		opts.Plot = filepath.Join(t.TempDir(), "run"+ext)
		if err := workloadRun(context.Background(), opts); err != nil {
			t.Fatalf("%v; stderr: %s", err, errOut)
		}
		checkImage(t, opts.Plot)
	}
}

// TestRunPlotNothingTimed: a run in which no mode completed draws nothing,
// says so in a warning and keeps its status (3, the modes' OOM).
func TestRunPlotNothingTimed(t *testing.T) {
	privateLedger(t)
	ios, out, _ := testIO()
	opts := smallLinear(ios, "sim:1KiB")
	opts.Modes = []bench.Mode{bench.ModeCUDA}
	opts.Plot = filepath.Join(t.TempDir(), "run.svg")
	err := workloadRun(context.Background(), opts)
	var incomplete *incompleteError
	if !errors.As(err, &incomplete) {
		t.Fatalf("error %v, want the run's incompleteError", err)
	}
	if !strings.Contains(out.String(), "warning: --plot "+opts.Plot+" not drawn: no timed epochs") {
		t.Errorf("no warning about the plot:\n%s", out)
	}
	if _, err := os.Stat(opts.Plot); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists: %v", opts.Plot, err)
	}
}

// TestSweepPlot runs a small sweep over --take with --plot: the sweep's
// curve is drawn as gpuz plot draws a sweep's JSON.
func TestSweepPlot(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "sweep.svg")
	cmd := gpuzOnLedger(t, filepath.Join(dir, "ledger"), "linear", "train", "cuda,cache,cpu", "--scale", "small", "--device", "sim:2MiB",
		"--take", "0,1MiB", "--win-size", "1", "--plot", img)
	out, err := cmd.CombinedOutput()
	if code := exitCode(err); code != exitIncomplete {
		t.Fatalf("exit status %d, want %d (cuda out of memory under the take):\n%s", code, exitIncomplete, out)
	}
	checkImage(t, img)
}

// TestPlanPlot plans the small linear workload's training in the cuda,
// cache and managed modes on a simulated device under both recompute
// settings with --plot: the memory picture is drawn as SVG and PNG, and
// the plan is printed as without it. A plan of the managed mode alone has
// no timeline: a warning, no image, status 0.
func TestPlanPlot(t *testing.T) {
	privateLedger(t)
	for _, ext := range []string{".svg", ".png"} {
		ios, out, errOut := testIO()
		opts := smallLinear(ios, "sim:1GiB")
		opts.PlanOnly, opts.Modes = true, []bench.Mode{bench.ModeCUDA, bench.ModeCache, bench.ModeManaged}
		opts.Sweep = []SweepFlag{{Flag: "recompute", Values: []string{"none", "blocks"}}}
		opts.Plot = filepath.Join(t.TempDir(), "plan"+ext)
		if err := workloadRun(context.Background(), opts); err != nil {
			t.Fatalf("%v; stderr: %s", err, errOut)
		}
		checkImage(t, opts.Plot)
		if !strings.Contains(out.String(), "Memory plan of gpuz linear train") || strings.Contains(out.String(), "warning") {
			t.Errorf("the plan with --plot printed:\n%s", out)
		}
	}
	ios, out, _ := testIO()
	opts := smallLinear(ios, "sim:1GiB")
	opts.PlanOnly, opts.Modes = true, []bench.Mode{bench.ModeManaged}
	opts.Plot = filepath.Join(t.TempDir(), "plan.svg")
	if err := workloadRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "warning: --plot "+opts.Plot+" not drawn: no mode of the plan has a device timeline") {
		t.Errorf("no warning about the plot:\n%s", out)
	}
	if _, err := os.Stat(opts.Plot); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists: %v", opts.Plot, err)
	}
}
