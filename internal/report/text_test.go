package report

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"gpuz/internal/bench"
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
			Model: "resnet", Task: bench.TaskEval, Scale: "small",
			DataBytes: 512, Params: 950, ParamBytes: 3800,
			Batch: 1, Samples: 1, BLAS: "gonum", Threads: 1,
		}), `gpuz resnet eval (scale small): 1 sample in batches of 1
data: 512 B   model: 950 parameters, 3.71 KiB
host: BLAS gonum, 1 thread
`},
		{"header/on a simulated GPU", header(bench.Header{
			Model: "linear", Task: bench.TaskTrain, Scale: "small",
			DataBytes: 4096, Params: 99_072, ParamBytes: 396_288,
			Batch: 4, Samples: 8, BLAS: "OpenBLAS 0.3.21", Threads: 2, GPU: "sim:8GiB",
		}), `gpuz linear train (scale small): 8 samples in batches of 4
data: 4.00 KiB   model: 99.1k parameters, 387 KiB
host: BLAS OpenBLAS 0.3.21, 2 threads
devices: cuda and cache on sim:8GiB, cpu on host
`},
		{"header/unknown scale, BLAS and threads left out", header(bench.Header{
			Model: "attention", Task: bench.TaskTrain,
			DataBytes: 491_520, Params: 39_000_000, ParamBytes: 156_000_000,
			Batch: 30, Samples: 60,
		}), `gpuz attention train: 60 samples in batches of 30
data: 480 KiB   model: 39.0M parameters, 149 MiB
`},
		{"epoch/train warm-up", epoch(bench.TaskTrain, bench.Epoch{Index: 0, Duration: 4350 * time.Millisecond, Value: 0.32691}, true, "host"),
			"train: 0  mean loss: 0.3269  time: 4.35 s  (warm-up)\n"},
		{"epoch/simulated device", epoch(bench.TaskTrain, bench.Epoch{Index: 1, Duration: 4480 * time.Millisecond, Value: 0.3244}, false, "sim:8GiB"),
			"train: 1  mean loss: 0.3244  time: 4.48 s  on sim:8GiB\n"},
		{"epoch/simulated device, warm-up", epoch(bench.TaskTrain, bench.Epoch{Index: 0, Duration: 5 * time.Second, Value: 0.3251}, true, "sim:8GiB"),
			"train: 0  mean loss: 0.3251  time: 5.00 s  on sim:8GiB  (warm-up)\n"},
		{"epoch/train timed", epoch(bench.TaskTrain, bench.Epoch{Index: 3, Duration: 12_640 * time.Millisecond, Value: 0.3}, false, "host"),
			"train: 3  mean loss: 0.3  time: 12.6 s\n"},
		{"epoch/eval", epoch(bench.TaskEval, bench.Epoch{Index: 0, Duration: 617 * time.Millisecond, Value: 0.0123449}, false, "host"),
			"eval: 0  output mean: 0.01234  time: 0.617 s\n"},
		{"epoch/tiny value", epoch(bench.TaskEval, bench.Epoch{Index: 12, Duration: 1560 * time.Microsecond, Value: -1.234567e-7}, false, "host"),
			"eval: 12  output mean: -1.235e-07  time: 0.00156 s\n"},
		{"epoch/diverged loss", epoch(bench.TaskTrain, bench.Epoch{Index: 2, Duration: 2 * time.Second, Value: math.NaN()}, false, "host"),
			"train: 2  mean loss: NaN  time: 2.00 s\n"},
		{"epoch/unknown task", epoch(bench.Task("infer"), bench.Epoch{Index: 1, Duration: time.Second, Value: 2}, false, "host"),
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

// TestAnalyzeRowCopies checks the copy cells: the cpu row has no copies
// to show, even given some, while a GPU mode shows its bytes, zero
// included, and a rate only when copies took time.
func TestAnalyzeRowCopies(t *testing.T) {
	ok := bench.Status{Kind: bench.StatusOK}
	tests := []struct {
		name string
		m    bench.ModeResult
		want string // H→D|D→H|copy rate
	}{
		{"cpu copies nothing", bench.ModeResult{Mode: bench.ModeCPU, Device: "host", Warmup: 1,
			Epochs: withCopies(epochs(2, 1), 1<<20, 8, time.Millisecond), Status: ok}, "-|-|-"},
		{"cuda without copies", bench.ModeResult{Mode: bench.ModeCUDA, Device: "sim:8GiB", Warmup: 1,
			Epochs: epochs(2, 1), Status: ok}, "0 B|0 B|-"},
		{"cache with copies", bench.ModeResult{Mode: bench.ModeCache, Device: "sim:8GiB", Warmup: 1,
			Epochs: withCopies(epochs(2, 1), 1<<30, 1<<30, time.Second), Status: ok}, "1.00 GiB|1.00 GiB|2.15 GB/s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := analyzeRow(tt.m, 0)
			if got := strings.Join(row[11:14], "|"); got != tt.want {
				t.Errorf("H→D, D→H, copy rate = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestAnalyzeRow checks the cells that depend on the cpu row and on how far
// a mode got.
func TestAnalyzeRow(t *testing.T) {
	ok := bench.Status{Kind: bench.StatusOK}
	cpu := func(status bench.Status, seconds ...float64) bench.ModeResult {
		return bench.ModeResult{Mode: bench.ModeCPU, Device: "host", Epochs: epochs(seconds...), Warmup: 1, Status: status}
	}
	cuda := bench.ModeResult{Mode: bench.ModeCUDA, Device: "sim:8GiB", Epochs: epochs(9, 2, 2), Warmup: 1, Status: ok}
	tests := []struct {
		name  string
		modes []bench.ModeResult
		row   int      // which mode's row to check
		want  []string // epochs, mean, stddev, cold, vs cpu
	}{
		{"faster than cpu", []bench.ModeResult{cpu(ok, 20, 10, 10), cuda}, 1, []string{"2", "2.00 s", "0 s", "9.00 s", "5.00×"}},
		{"cpu itself", []bench.ModeResult{cpu(ok, 20, 10, 10), cuda}, 0, []string{"2", "10.0 s", "0 s", "20.0 s", "1.00×"}},
		{"first ok cpu row is the reference", []bench.ModeResult{cuda, cpu(bench.Status{Kind: bench.StatusInterrupted}, 20, 4), cpu(ok, 20, 8)}, 0,
			[]string{"2", "2.00 s", "0 s", "9.00 s", "4.00×"}},
		{"interrupted cpu is no reference", []bench.ModeResult{cpu(bench.Status{Kind: bench.StatusInterrupted}, 20, 10), cuda}, 1,
			[]string{"2", "2.00 s", "0 s", "9.00 s", "-"}},
		{"diverged cpu is no reference", []bench.ModeResult{cpu(bench.Status{Kind: bench.StatusDiverged, Reason: "at epoch 2, batch 1"}, 20, 10), cuda}, 1,
			[]string{"2", "2.00 s", "0 s", "9.00 s", "-"}},
		{"cpu with only a warm-up is no reference", []bench.ModeResult{cpu(ok, 20), cuda}, 1,
			[]string{"2", "2.00 s", "0 s", "9.00 s", "-"}},
		{"no cpu row", []bench.ModeResult{cuda}, 0, []string{"2", "2.00 s", "0 s", "9.00 s", "-"}},
		{"one timed epoch has no deviation", []bench.ModeResult{cpu(ok, 20, 10)}, 0, []string{"1", "10.0 s", "-", "20.0 s", "1.00×"}},
		{"warm-up only", []bench.ModeResult{cpu(ok, 20, 10), cpu(bench.Status{Kind: bench.StatusInterrupted}, 30)}, 1,
			[]string{"0", "-", "-", "30.0 s", "-"}},
		{"no warm-up", []bench.ModeResult{{Mode: bench.ModeCPU, Epochs: epochs(3, 5), Status: ok}}, 0,
			[]string{"2", "4.00 s", "1.41 s", "-", "1.00×"}},
		{"no epochs", []bench.ModeResult{cpu(ok, 20, 10), {Mode: bench.ModeCache, PeakDeviceBytes: 1 << 30, Status: bench.Status{Kind: bench.StatusOOM}}}, 1,
			[]string{"-", "-", "-", "-", "-"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := analyzeRow(tt.modes[tt.row], cpuReference(tt.modes))
			if len(row) != len(analyzeColumns) {
				t.Fatalf("row has %d cells for %d columns: %q", len(row), len(analyzeColumns), row)
			}
			got := []string{row[2], row[3], row[4], row[8], row[9]}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("epochs, mean, stddev, cold, vs cpu = %q, want %q", got, tt.want)
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
