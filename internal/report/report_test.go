package report

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gpuz/internal/bench"
	"gpuz/internal/results"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites that file under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// written returns what write writes, failing the test on an error.
func written(t *testing.T, write func(w io.Writer) error) string {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// errWriter fails every write.
type errWriter struct{}

var errWrite = errors.New("write failed")

func (errWriter) Write([]byte) (int, error) { return 0, errWrite }

// epochs returns epochs indexed from 0 with the given durations in seconds,
// to the nanosecond as bench measures them, and values that fall from 1;
// the first is a warm-up, as the fixtures' Warmup 1 says.
func epochs(seconds ...float64) []bench.Epoch {
	es := make([]bench.Epoch, len(seconds))
	for i, s := range seconds {
		es[i] = bench.Epoch{Index: i, Warmup: i == 0, Seconds: time.Duration(s * float64(time.Second)).Seconds(), Value: results.Float(1 / float64(i+3))}
	}
	return es
}

// withCopies sets every epoch's copied bytes and copy time, as bench does
// for a mode with copies (bench.Mode.Copies), zeros included.
func withCopies(es []bench.Epoch, up, down int64, took time.Duration) []bench.Epoch {
	for i := range es {
		up, down, took := up, down, took.Seconds()
		es[i].UploadBytes, es[i].DownloadBytes, es[i].CopySeconds = &up, &down, &took
	}
	return es
}

// withSkipped sets the first epochs' skipped steps, one count each.
func withSkipped(es []bench.Epoch, skipped ...int) []bench.Epoch {
	for i, n := range skipped {
		es[i].SkippedSteps = n
	}
	return es
}

// phases returns setup phases from pairs of a name and a time in seconds.
func phases(pairs ...any) []bench.Phase {
	var ps []bench.Phase
	for i := 0; i+1 < len(pairs); i += 2 {
		d := time.Duration(pairs[i+1].(float64) * float64(time.Second))
		ps = append(ps, bench.Phase{Name: string(pairs[i].(bench.PhaseName)), Seconds: d.Seconds()})
	}
	return ps
}

// withSetup returns h with the run's own setup phases and the time from the
// process's start to its first epoch.
func withSetup(h bench.Header, startToFirstEpoch time.Duration, setup []bench.Phase) bench.Header {
	h.StartToFirstEpoch, h.Setup = startToFirstEpoch.Seconds(), setup
	return h
}

// linearHeader describes the reference linear workload.
var linearHeader = bench.Header{
	Model: "linear", Task: string(bench.TaskTrain), Scale: "full",
	DataBytes: 2 * 60 * 2000 * 4, Params: 480_240_000, ParamBytes: 4 * 480_240_000,
	Batch: 30, Samples: 60, BLAS: "OpenBLAS 0.3.21", Threads: 2,
	Recompute: "none", Precision: "fp32",
}

// Results that the golden-file tests render.
var (
	// fullResult: a machine without a GPU; only the cpu mode ran.
	fullResult = bench.Result{
		Header: linearHeader,
		Modes: []bench.ModeResult{
			{Mode: bench.ModeCUDA, Status: bench.Status{Kind: bench.StatusUnavailable, Reason: "built without the cuda tag"}},
			{Mode: bench.ModeCache, Status: bench.Status{Kind: bench.StatusUnavailable, Reason: "no GPU device; try --device sim:8GiB"}},
			{Mode: bench.ModeCPU, Device: "host", Epochs: epochs(30.1, 24.3, 24.0, 24.5, 23.9), Warmup: 1, Status: bench.Status{Kind: bench.StatusOK}},
		},
		PeakRSSBytes: 7_795_000_000,
	}

	// interruptedResult: stopped by the user during the cache mode's second
	// epoch, so the cache row has one warm-up and one timed epoch. Its
	// setup phases are those of a run on the host and the simulated GPU.
	interruptedResult = bench.Result{
		Header: withSetup(linearHeader, 2410*time.Millisecond, phases(bench.PhaseBuild, 0.0121, bench.PhaseData, 0.0034)),
		Modes: []bench.ModeResult{
			{Mode: bench.ModeCPU, Device: "host", Epochs: epochs(25.0, 24.2, 24.0), Warmup: 1, Status: bench.Status{Kind: bench.StatusOK},
				Setup: phases(bench.PhaseOpen, 0.000002, bench.PhaseBuild, 0.0118, bench.PhaseLoad, 0.352, bench.PhaseInit, 1.84, bench.PhaseUpload, 0.161)},
			{Mode: bench.ModeCUDA, Simulated: true, Device: "sim:8GiB", Epochs: withCopies(epochs(6.2, 4.31, 4.25, 4.28, 4.22), 0, 0, 0), Warmup: 1,
				PeakDeviceBytes: 7_500_000_000, Status: bench.Status{Kind: bench.StatusOK},
				Setup: phases(bench.PhaseOpen, 0.00041, bench.PhaseBuild, 0.0122, bench.PhaseReserve, 0.00018, bench.PhaseLoad, 0.371, bench.PhaseInit, 1.82, bench.PhaseUpload, 0.409)},
			{Mode: bench.ModeCache, Simulated: true, Device: "sim:8GiB", Placement: "window 3/12", PlacementKeys: windowKeys("3"), Epochs: withCopies(epochs(5.9, 4.48), 9<<30, 6<<30, 2*time.Second), Warmup: 1,
				PeakDeviceBytes: 240 << 20, Status: bench.Status{Kind: bench.StatusInterrupted, Reason: "stopped by the user"},
				Setup: phases(bench.PhaseOpen, 0.00039, bench.PhaseBuild, 0.0119, bench.PhaseReserve, 0.00016, bench.PhaseLoad, 0.118, bench.PhaseInit, 1.83, bench.PhaseUpload, 0.562)},
		},
		PeakRSSBytes: 9_100_000_000,
	}

	// evalResult: the attention workload evaluated on a real GPU.
	evalResult = bench.Result{
		Header: bench.Header{
			Model: "attention", Task: string(bench.TaskEval), Scale: "full",
			DataBytes: 2 * 60 * 512 * 8, Params: 39_000_000, ParamBytes: 4 * 39_000_000,
			Batch: 30, Samples: 60, BLAS: "gonum", Threads: 16,
			Recompute: "none", Precision: "fp32",
		},
		Modes: []bench.ModeResult{
			{Mode: bench.ModeCUDA, Device: "cuda:0 (NVIDIA GeForce RTX 4060 Laptop GPU)", Epochs: withCopies(epochs(1.92, 0.611, 0.608, 0.615, 0.609), 0, 0, 0), Warmup: 1,
				PeakDeviceBytes: 1_300_000_000, Status: bench.Status{Kind: bench.StatusOK}},
			{Mode: bench.ModeCache, Device: "cuda:0 (NVIDIA GeForce RTX 4060 Laptop GPU)", Epochs: withCopies(epochs(2.05, 0.68, 0.69, 0.67, 0.681), 0, 0, 0), Warmup: 1,
				PeakDeviceBytes: 310 << 20, Status: bench.Status{Kind: bench.StatusOK}},
			{Mode: bench.ModeCPU, Device: "host", Epochs: epochs(6.9, 6.31, 6.28, 6.35, 6.30), Warmup: 1, Status: bench.Status{Kind: bench.StatusOK}},
		},
		PeakRSSBytes: 2_400_000_000,
	}

	// oomResult: the full-scale linear run on a simulated GPU that another
	// process mostly holds: cuda fails with a long OOM reason.
	oomResult = bench.Result{
		Header: linearHeader,
		Modes: []bench.ModeResult{
			{Mode: bench.ModeCPU, Device: "host", Epochs: epochs(25.0, 24.2, 24.0, 24.1, 24.3), Warmup: 1, Status: bench.Status{Kind: bench.StatusOK}},
			{Mode: bench.ModeCUDA, Simulated: true, Device: "sim:8GiB", Status: bench.Status{Kind: bench.StatusOOM,
				Reason: "needs 5.57 GiB, 2.43 GiB of 8.00 GiB free (another process holds 5.57 GiB through the simulated device's ledger /tmp/gpuz-sim-ledger)"}},
			{Mode: bench.ModeCache, Simulated: true, Device: "sim:8GiB", Placement: "window 3/12", PlacementKeys: windowKeys("3"), Epochs: withCopies(epochs(5.9, 4.48, 4.51, 4.47, 4.5), 9<<30, 6<<30, 2*time.Second), Warmup: 1,
				PeakDeviceBytes: 1_616_040_004, Status: bench.Status{Kind: bench.StatusOK}},
		},
		PeakRSSBytes: 9_100_000_000,
	}

	// bf16Result: evalResult with its values stored in bf16, which halves
	// the device memory.
	bf16Result = func() bench.Result {
		r := evalResult
		r.Header.Precision = "bf16"
		r.Header.HalfProducts = "AVX512_BF16 kernel"
		r.Modes = slices.Clone(r.Modes)
		for i := range r.Modes {
			r.Modes[i].PeakDeviceBytes /= 2
		}
		return r
	}()

	// fp16Result: the linear training run in fp16 with its loss scaled:
	// each mode skipped steps in its warm-up epoch as the scale came down
	// from 65536, the cache mode one more in a timed epoch.
	fp16Result = bench.Result{
		Header: func() bench.Header { h := linearHeader; h.Precision = "fp16"; return h }(),
		Modes: []bench.ModeResult{
			{Mode: bench.ModeCPU, Device: "host", Epochs: withSkipped(epochs(25.0, 24.2, 24.0), 2), Warmup: 1,
				LossScale: 16384, Status: bench.Status{Kind: bench.StatusOK}},
			{Mode: bench.ModeCUDA, Simulated: true, Device: "sim:8GiB", Epochs: withSkipped(withCopies(epochs(6.2, 4.31, 4.25, 4.28, 4.22), 0, 0, 0), 3), Warmup: 1,
				PeakDeviceBytes: 4_100_000_000, LossScale: 8192, Status: bench.Status{Kind: bench.StatusOK}},
			{Mode: bench.ModeCache, Simulated: true, Device: "sim:8GiB", Placement: "window 3/12", PlacementKeys: windowKeys("3"), Epochs: withSkipped(withCopies(epochs(5.9, 4.48, 4.51), 9<<29, 6<<29, time.Second), 3, 1), Warmup: 1,
				PeakDeviceBytes: 130 << 20, LossScale: 4096, Status: bench.Status{Kind: bench.StatusOK}},
			{Mode: bench.ModeManaged, Simulated: true, Device: "sim:8GiB", Status: bench.Status{Kind: bench.StatusOOM, Reason: "needs 2.00 MiB, 0 B free"}},
		},
		PeakRSSBytes: 5_200_000_000,
	}

	// failedResult: no mode got through an epoch.
	failedResult = bench.Result{
		Header: linearHeader,
		Modes: []bench.ModeResult{
			{Mode: bench.ModeCUDA, Simulated: true, Device: "sim:1GiB", PeakDeviceBytes: 900 << 20,
				Status: bench.Status{Kind: bench.StatusOOM, Reason: "allocating 15.3 MiB with 4.00 MiB free"}},
			{Mode: bench.ModeCache, Simulated: true, Device: "sim:1GiB", Status: bench.Status{Kind: bench.StatusFailed, Reason: "engine: unsupported op Tanh"}},
			{Mode: bench.ModeCPU, Device: "host", Status: bench.Status{Kind: bench.StatusSkipped, Reason: "needs 40.0 GiB of host memory, 31.2 GiB free"}},
		},
	}
)

// TestHeaderEscapesControls: the header's model name (a snapshot
// directory's), device name (a profile file's) and CPU (from
// /proc/cpuinfo) reach the terminal with their control characters escaped.
func TestHeaderEscapesControls(t *testing.T) {
	h := bench.Header{Model: "llm evil\x1b[2J", Task: string(bench.TaskTrain), GPU: "sim:x\a\u202e", TakeBytes: 1 << 20}
	h.Env = &results.Env{GpuzVersion: "1", CPU: "cpu\x9b1m"}
	var b strings.Builder
	if err := WriteHeader(&b, h); err != nil {
		t.Fatal(err)
	}
	var m strings.Builder
	if err := WriteModeStart(&m, bench.ModeCUDA, "sim:\x1b]0;title\a"); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{b.String(), m.String()} {
		if strings.ContainsAny(out, "\x1b\a\u202e\u009b") {
			t.Errorf("control characters printed raw:\n%q", out)
		}
	}
}
