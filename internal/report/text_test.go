package report

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"gpuz/internal/bench"
	"gpuz/internal/results"
)

// TestWriteLines checks the lines of WriteHeader and WriteEpoch.
func TestWriteLines(t *testing.T) {
	header := func(h bench.Header) func(io.Writer) error {
		return func(w io.Writer) error { return WriteHeader(w, h) }
	}
	epoch := func(task bench.Task, e bench.Epoch, warmup bool, device string) func(io.Writer) error {
		return func(w io.Writer) error { return WriteEpoch(w, task, e, warmup, device) }
	}
	end := func(mode bench.Mode, device string, s bench.Status) func(io.Writer) error {
		return func(w io.Writer) error { return WriteModeEnd(w, mode, device, s) }
	}
	tests := []struct {
		name  string
		write func(io.Writer) error
		want  string
	}{
		{"mode start", func(w io.Writer) error { return WriteModeStart(w, bench.ModeCUDA, "sim:8GiB") }, "\n== cuda on sim:8GiB ==\n"},
		{"mode end/ok says nothing", end(bench.ModeCPU, "host", bench.Status{Kind: bench.StatusOK}), ""},
		{"mode end/OOM in its section", end(bench.ModeCUDA, "sim:8GiB", bench.Status{Kind: bench.StatusOOM, Reason: "needs 5.57 GiB, 4.00 GiB of 8.00 GiB free"}),
			"cuda: OOM: needs 5.57 GiB, 4.00 GiB of 8.00 GiB free\n"},
		{"mode end/unavailable opens its section", end(bench.ModeCache, "", bench.Status{Kind: bench.StatusUnavailable, Reason: "built without the cuda tag"}),
			"\n== cache ==\ncache: unavailable: built without the cuda tag\n"},
		{"header/linear reference", header(linearHeader), `gpuz linear train (scale full): 60 samples in batches of 30
data: 938 KiB   model: 480M parameters, 1.79 GiB
host: BLAS OpenBLAS 0.3.21, 2 threads
`},
		{"header/singular counts", header(bench.Header{
			Model: "resnet", Task: string(bench.TaskEval), Scale: "small",
			DataBytes: 512, Params: 950, ParamBytes: 3800,
			Batch: 1, Samples: 1, BLAS: "gonum", Threads: 1,
		}), `gpuz resnet eval (scale small): 1 sample in batches of 1
data: 512 B   model: 950 parameters, 3.71 KiB
host: BLAS gonum, 1 thread
`},
		{"header/on a simulated GPU", header(bench.Header{
			Model: "linear", Task: string(bench.TaskTrain), Scale: "small",
			DataBytes: 4096, Params: 99_072, ParamBytes: 396_288,
			Batch: 4, Samples: 8, BLAS: "OpenBLAS 0.3.21", Threads: 2, GPU: "sim:8GiB",
		}), `gpuz linear train (scale small): 8 samples in batches of 4
data: 4.00 KiB   model: 99.1k parameters, 387 KiB
host: BLAS OpenBLAS 0.3.21, 2 threads
devices: cuda and cache on sim:8GiB, cpu on host
`},
		{"header/fp32 says nothing of precision", header(func() bench.Header { h := linearHeader; h.Precision = "fp32"; return h }()),
			`gpuz linear train (scale full): 60 samples in batches of 30
data: 938 KiB   model: 480M parameters, 1.79 GiB
host: BLAS OpenBLAS 0.3.21, 2 threads
`},
		{"header/bf16 eval", header(bf16Result.Header), `gpuz attention eval (scale full): 60 samples in batches of 30
data: 480 KiB   model: 39.0M parameters, 149 MiB
host: BLAS gonum, 16 threads
precision bf16: products and weights stored in 16 bits, softmax, layer norm and losses in fp32 (automatic mixed precision)
16-bit products: AVX512_BF16 kernel on the host and sim, cuBLAS GemmEx on a CUDA GPU
`},
		{"header/fp16 training scales its loss", header(fp16Result.Header), `gpuz linear train (scale full): 60 samples in batches of 30
data: 938 KiB   model: 480M parameters, 1.79 GiB
host: BLAS OpenBLAS 0.3.21, 2 threads
precision fp16: products and weights stored in 16 bits, softmax, layer norm and losses in fp32 (automatic mixed precision); the loss scaled as PyTorch's GradScaler does, skipping a step whose gradients overflow
`},
		{"header/unknown scale, BLAS and threads left out", header(bench.Header{
			Model: "attention", Task: string(bench.TaskTrain),
			DataBytes: 491_520, Params: 39_000_000, ParamBytes: 156_000_000,
			Batch: 30, Samples: 60,
		}), `gpuz attention train: 60 samples in batches of 30
data: 480 KiB   model: 39.0M parameters, 149 MiB
`},
		{"epoch/train warm-up", epoch(bench.TaskTrain, bench.Epoch{Index: 0, Seconds: (4350 * time.Millisecond).Seconds(), Value: 0.32691}, true, "host"),
			"train: 0  mean loss: 0.3269  time: 4.35 s  (warm-up)\n"},
		{"epoch/simulated device", epoch(bench.TaskTrain, bench.Epoch{Index: 1, Seconds: (4480 * time.Millisecond).Seconds(), Value: 0.3244}, false, "sim:8GiB"),
			"train: 1  mean loss: 0.3244  time: 4.48 s  on sim:8GiB\n"},
		{"epoch/simulated device, warm-up", epoch(bench.TaskTrain, bench.Epoch{Index: 0, Seconds: (5 * time.Second).Seconds(), Value: 0.3251}, true, "sim:8GiB"),
			"train: 0  mean loss: 0.3251  time: 5.00 s  on sim:8GiB  (warm-up)\n"},
		{"epoch/train timed", epoch(bench.TaskTrain, bench.Epoch{Index: 3, Seconds: (12_640 * time.Millisecond).Seconds(), Value: 0.3}, false, "host"),
			"train: 3  mean loss: 0.3  time: 12.6 s\n"},
		{"epoch/eval", epoch(bench.TaskEval, bench.Epoch{Index: 0, Seconds: (617 * time.Millisecond).Seconds(), Value: 0.0123449}, false, "host"),
			"eval: 0  output mean: 0.01234  time: 0.617 s\n"},
		{"epoch/tiny value", epoch(bench.TaskEval, bench.Epoch{Index: 12, Seconds: (1560 * time.Microsecond).Seconds(), Value: -1.234567e-7}, false, "host"),
			"eval: 12  output mean: -1.235e-07  time: 0.00156 s\n"},
		{"epoch/diverged loss", epoch(bench.TaskTrain, bench.Epoch{Index: 2, Seconds: (2 * time.Second).Seconds(), Value: results.Float(math.NaN())}, false, "host"),
			"train: 2  mean loss: NaN  time: 2.00 s\n"},
		{"epoch/unknown task", epoch(bench.Task("infer"), bench.Epoch{Index: 1, Seconds: time.Second.Seconds(), Value: 2}, false, "host"),
			"infer: 1  value: 2  time: 1.00 s\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := written(t, tt.write); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestWriteAnalyze(t *testing.T) {
	tests := []struct {
		golden string
		in     bench.Result
	}{
		{"analyze_full.golden", fullResult},
		{"analyze_interrupted.golden", interruptedResult},
		{"analyze_eval.golden", evalResult},
		{"analyze_failed.golden", failedResult},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			golden(t, tt.golden, written(t, func(w io.Writer) error { return WriteAnalyze(w, tt.in) }))
		})
	}
}

// cell returns the cell of t's row under the column whose heading starts
// with name, failing the test when there is none.
func cell(t *testing.T, tb table, row int, name string) string {
	t.Helper()
	for i, c := range tb.columns {
		if c.name == name || strings.HasPrefix(c.name, name+" (") {
			return tb.rows[row][i]
		}
	}
	t.Fatalf("no column %q in %v", name, tb.columns)
	return ""
}

// cells returns the cells of t's row under the columns named.
func cells(t *testing.T, tb table, row int, names ...string) string {
	t.Helper()
	var got []string
	for _, n := range names {
		got = append(got, cell(t, tb, row, n))
	}
	return strings.Join(got, "|")
}

// TestAnalyzeCopies checks the copy cells: the cpu row has no copies
// to show, even given some, while a GPU mode shows its bytes, zero
// included, and a rate (binary units) only when copies took time.
func TestAnalyzeCopies(t *testing.T) {
	ok := bench.Status{Kind: bench.StatusOK}
	tests := []struct {
		name string
		m    bench.ModeResult
		want string // H→D|D→H|copy rate|copied
	}{
		{"cpu copies nothing", bench.ModeResult{Mode: bench.ModeCPU, Device: "host", Warmup: 1,
			Epochs: withCopies(epochs(2, 1), 1<<20, 8, time.Millisecond), Status: ok}, "-|-|-|-"},
		{"cuda without copies", bench.ModeResult{Mode: bench.ModeCUDA, Simulated: true, Device: "sim:8GiB", Warmup: 1,
			Epochs: epochs(2, 1), Status: ok}, "0 B|0 B|-|0 B"},
		{"cache with copies", bench.ModeResult{Mode: bench.ModeCache, Simulated: true, Device: "sim:8GiB", Warmup: 1,
			Epochs: withCopies(epochs(2, 1), 1<<30, 1<<30, time.Second), Status: ok}, "1.00 GiB|1.00 GiB|2.00 GiB/s|2.00 GiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := bench.Result{Modes: []bench.ModeResult{tt.m}}
			got := cells(t, analyzeTable(r, true), 0, "H→D/epoch", "D→H/epoch", "copy rate") + "|" + cell(t, analyzeTable(r, false), 0, "copied")
			if got != tt.want {
				t.Errorf("H→D, D→H, copy rate, copied = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestAnalyzeCells checks the cells of the wide table that depend on the
// cpu row, on the device and on how far a mode got.
func TestAnalyzeCells(t *testing.T) {
	ok := bench.Status{Kind: bench.StatusOK}
	cpu := func(status bench.Status, seconds ...float64) bench.ModeResult {
		return bench.ModeResult{Mode: bench.ModeCPU, Device: "host", Epochs: epochs(seconds...), Warmup: 1, Status: status}
	}
	cuda := bench.ModeResult{Mode: bench.ModeCUDA, Device: "cuda:0 (NVIDIA H100)", Epochs: withCopies(epochs(9, 2, 2), 0, 0, 0), Warmup: 1, Status: ok}
	sim := bench.ModeResult{Mode: bench.ModeCUDA, Simulated: true, Device: "sim:8GiB", Epochs: withCopies(epochs(9, 2, 2), 0, 0, 0), Warmup: 1, Status: ok}
	tests := []struct {
		name  string
		modes []bench.ModeResult
		row   int    // which mode's row to check
		want  string // epochs|mean ± its interval|stddev|cold|speed-up
	}{
		{"faster than cpu", []bench.ModeResult{cpu(ok, 20, 10, 10), cuda}, 1, "2|2.00 ± 0|0|9.00|5.00×"},
		{"cpu itself", []bench.ModeResult{cpu(ok, 20, 10, 10), cuda}, 0, "2|10.0 ± 0|0|20.0|1.00×"},
		{"slower than cpu", []bench.ModeResult{cpu(ok, 20, 1, 1), cuda}, 1, "2|2.00 ± 0|0|9.00|0.50×"},
		{"simulated GPU gets no speed-up", []bench.ModeResult{cpu(ok, 20, 10, 10), sim}, 1, "2|2.00 ± 0|0|9.00|-"},
		{"first ok cpu row is the reference", []bench.ModeResult{cuda, cpu(bench.Status{Kind: bench.StatusInterrupted}, 20, 4), cpu(ok, 20, 8)}, 0,
			"2|2.00 ± 0|0|9.00|4.00×"},
		{"interrupted cpu is no reference", []bench.ModeResult{cpu(bench.Status{Kind: bench.StatusInterrupted}, 20, 10), cuda}, 1,
			"2|2.00 ± 0|0|9.00|-"},
		{"diverged cpu is no reference", []bench.ModeResult{cpu(bench.Status{Kind: bench.StatusDiverged, Reason: "at epoch 2, batch 1"}, 20, 10), cuda}, 1,
			"2|2.00 ± 0|0|9.00|-"},
		{"cpu with only a warm-up is no reference", []bench.ModeResult{cpu(ok, 20), cuda}, 1, "2|2.00 ± 0|0|9.00|-"},
		{"no cpu row", []bench.ModeResult{cuda}, 0, "2|2.00 ± 0|0|9.00|-"},
		{"one timed epoch has no deviation", []bench.ModeResult{cpu(ok, 20, 10)}, 0, "1|10.0 ± ∞|-|20.0|1.00×"},
		{"warm-up only", []bench.ModeResult{cpu(ok, 20, 10), cpu(bench.Status{Kind: bench.StatusInterrupted}, 30)}, 1, "0|-|-|30.0|-"},
		{"no warm-up", []bench.ModeResult{{Mode: bench.ModeCPU, Epochs: epochs(3, 5), Status: ok}}, 0, "2|4.00 ± 12.71|1.41|-|1.00×"},
		{"no epochs", []bench.ModeResult{cpu(ok, 20, 10), {Mode: bench.ModeCache, PeakDeviceBytes: 1 << 30, Status: bench.Status{Kind: bench.StatusOOM}}}, 1,
			"-|-|-|-|-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := analyzeTable(bench.Result{Modes: tt.modes}, true)
			for _, row := range tb.rows {
				if len(row) != len(tb.columns) {
					t.Fatalf("row has %d cells for %d columns: %q", len(row), len(tb.columns), row)
				}
			}
			if got := cells(t, tb, tt.row, "epochs", "mean", "stddev", "cold", "speed-up"); got != tt.want {
				t.Errorf("epochs, mean, stddev, cold, speed-up = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTimeColumnUnits checks that a column of times is in one unit, chosen
// from its median value, named in the heading, with three significant
// digits.
func TestTimeColumnUnits(t *testing.T) {
	ok := bench.Status{Kind: bench.StatusOK}
	mode := func(m bench.Mode, seconds ...float64) bench.ModeResult {
		return bench.ModeResult{Mode: m, Device: "host", Epochs: epochs(seconds...), Warmup: 1, Status: ok}
	}
	tests := []struct {
		name  string
		modes []bench.ModeResult
		want  string // heading: cells
	}{
		{"seconds", []bench.ModeResult{mode(bench.ModeCPU, 1, 24.1, 24.1)}, "mean (s): 24.1 ± 0"},
		{"milliseconds", []bench.ModeResult{mode(bench.ModeCPU, 1, 0.0123, 0.0123), mode(bench.ModeCUDA, 1, 0.0021, 0.0021)},
			"mean (ms): 12.3 ± 0, 2.10 ± 0"},
		{"microseconds", []bench.ModeResult{mode(bench.ModeCPU, 1, 47.6e-6, 47.6e-6)}, "mean (µs): 47.6 ± 0"},
		{"one unit for the column, from its median", []bench.ModeResult{mode(bench.ModeCPU, 1, 2, 2), mode(bench.ModeCUDA, 1, 0.5, 0.5), mode(bench.ModeCache, 1, 0.0005, 0.0005)},
			"mean (ms): 2000 ± 0, 500 ± 0, 0.500 ± 0"},
		{"interval of enough epochs", []bench.ModeResult{mode(bench.ModeCPU, 1, 10, 10.1, 10.2, 10.3, 10.4, 10.5, 10.6, 10.7, 10.8, 10.9)},
			"mean (s): 10.4 ± 0.2"},
		{"all equal", []bench.ModeResult{mode(bench.ModeCPU, 1, 3, 3, 3, 3, 3, 3, 3, 3)}, "mean (s): 3.00 ± 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := analyzeTable(bench.Result{Modes: tt.modes}, false)
			var cs []string
			for _, row := range tb.rows {
				cs = append(cs, row[2])
			}
			if got := tb.columns[2].name + ": " + strings.Join(cs, ", "); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestWriteErrors(t *testing.T) {
	writes := map[string]func() error{
		"WriteHeader":  func() error { return WriteHeader(errWriter{}, linearHeader) },
		"WriteEpoch":   func() error { return WriteEpoch(errWriter{}, bench.TaskTrain, bench.Epoch{}, false, "host") },
		"WriteAnalyze": func() error { return WriteAnalyze(errWriter{}, fullResult) },
		"WriteJSON":    func() error { return WriteJSON(errWriter{}, fullResult) },
	}
	for name, write := range writes {
		if err := write(); !errors.Is(err, errWrite) {
			t.Errorf("%s to a failing writer returned %v, want %v", name, err, errWrite)
		}
	}
}
