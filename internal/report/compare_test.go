package report

import (
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"gpuz/internal/bench"
)

// readRun reads a result file, failing the test on an error.
func readRun(t *testing.T, path string) RunFile {
	t.Helper()
	f, err := ReadRunFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// compareFiles reads two result files and returns gpuz compare's output,
// failing the test on an error or on a line wider than 100 columns.
func compareFiles(t *testing.T, a, b string) string {
	t.Helper()
	fa, fb := readRun(t, a), readRun(t, b)
	got := written(t, func(w io.Writer) error { return WriteCompare(w, fa, fb) })
	for _, line := range strings.Split(got, "\n") {
		if n := utf8.RuneCountInString(line); n > 100 {
			t.Errorf("line of %d columns, want at most 100: %q", n, line)
		}
	}
	return got
}

// TestCompareGolden compares two synthetic benchmark files: cpu got faster
// (significant), cache did not change (~), cuda has too few epochs for the
// test ever to be significant (a warning), and a benchmark only in B. A file
// against itself changes nowhere.
func TestCompareGolden(t *testing.T) {
	a, b := filepath.Join("testdata", "compare_a.txt"), filepath.Join("testdata", "compare_b.txt")
	got := compareFiles(t, a, b)
	golden(t, "compare_ab.golden", got)
	for _, want := range []string{"\ncpu host ", "-19.90%", "need >= 4 samples to detect a difference"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	golden(t, "compare_aa.golden", compareFiles(t, a, a))
}

// TestCompareWrittenFiles writes a run with WriteBenchfmt and with
// WriteJSON, reads both back as gpuz compare does (telling them apart by
// content), finds the same configurations and times in each, and compares
// them: no change anywhere; in fp32 and in bf16, whose names both files
// mark.
func TestCompareWrittenFiles(t *testing.T) {
	for _, tt := range []struct {
		name string
		r    bench.Result
		mark string // in every configuration's name
	}{
		{"fp32", evalResult, "/scale=full"},
		{"bf16", bf16Result, "/precision=bf16/scale=full"},
	} {
		t.Run(tt.name, func(t *testing.T) { checkCompareWrittenFiles(t, tt.r, tt.mark) })
	}
}

// checkCompareWrittenFiles is TestCompareWrittenFiles on the modes of r
// and a paged mode.
func checkCompareWrittenFiles(t *testing.T, r bench.Result, mark string) {
	dir := t.TempDir()
	r.Modes = append(slices.Clone(r.Modes), interruptedResult.Modes[2]) // a paged mode
	benchPath, jsonPath := filepath.Join(dir, "run.txt"), filepath.Join(dir, "run.json")
	for path, write := range map[string]func(io.Writer) error{
		benchPath: func(w io.Writer) error { return WriteBenchfmt(w, r) },
		jsonPath:  func(w io.Writer) error { return WriteJSON(w, r) },
	} {
		if err := os.WriteFile(path, []byte(written(t, write)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fb, fj := readRun(t, benchPath), readRun(t, jsonPath)
	if !slices.Equal(fb.Configs, fj.Configs) || len(fb.Configs) != 4 {
		t.Fatalf("configurations %q from the benchmark file, %q from JSON; want the same 4", fb.Configs, fj.Configs)
	}
	for _, c := range fb.Configs {
		if !strings.HasSuffix(c, mark) {
			t.Errorf("configuration %q does not end with %q", c, mark)
		}
		b, j := fb.Seconds[c], fj.Seconds[c]
		if len(b) != len(j) {
			t.Fatalf("%s: %d times from the benchmark file, %d from JSON", c, len(b), len(j))
		}
		for i := range b {
			if math.Abs(b[i]-j[i]) > 1e-9 {
				t.Errorf("%s epoch %d: %v from the benchmark file, %v from JSON", c, i, b[i], j[i])
			}
		}
	}
	got := compareFiles(t, benchPath, jsonPath)
	for _, want := range []string{"attention eval, scale full", "\ncuda cuda:0 ", "\ncache sim:8GiB window 3 "} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, " ~ ") != 4 {
		t.Errorf("want no change (~) in each of the 4 rows:\n%s", got)
	}
}

// TestCompareOldJSON reads a run's JSON as written before the placement's
// keys were recorded (no placement_keys: the paged and managed modes'
// keys read from their placement's text) and finds the same
// configurations as in the file written now.
func TestCompareOldJSON(t *testing.T) {
	r := interruptedResult
	r.Modes = append(slices.Clone(r.Modes), bench.ModeResult{Mode: bench.ModeManaged, Simulated: true, Device: "sim:8GiB",
		Placement: "40/76 pages of 2 MiB, rest on the host", PlacementKeys: [][2]string{{"resident", "40/76"}, {"advise", "host"}},
		Epochs: withCopies(epochs(5.9, 4.48), 9<<30, 6<<30, 2*time.Second), Warmup: 1, Status: bench.Status{Kind: bench.StatusOK}})
	var doc map[string]any
	if err := json.Unmarshal([]byte(written(t, func(w io.Writer) error { return WriteJSON(w, r) })), &doc); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	newPath, oldPath := filepath.Join(dir, "new.json"), filepath.Join(dir, "old.json")
	// The new file first: the old one is the same document with the keys
	// deleted from it.
	for _, f := range []struct {
		path string
		drop bool
	}{{newPath, false}, {oldPath, true}} {
		path, drop := f.path, f.drop
		keys := 0
		for _, m := range doc["modes"].([]any) {
			if _, ok := m.(map[string]any)["placement_keys"]; ok {
				keys++
			}
			if drop {
				delete(m.(map[string]any), "placement_keys")
			}
		}
		if !drop && keys != 2 {
			t.Fatalf("%d modes with placement_keys, want the paged and the managed one", keys)
		}
		if err := os.WriteFile(path, []byte(written(t, func(w io.Writer) error { return encodeJSON(w, doc) })), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fn, fo := readRun(t, newPath), readRun(t, oldPath)
	if !slices.Equal(fn.Configs, fo.Configs) {
		t.Fatalf("configurations %q from the old file, want %q", fo.Configs, fn.Configs)
	}
	for _, want := range []string{"/mode=cache/device=sim:8GiB/policy=window/window=3/", "/mode=managed/device=sim:8GiB/resident=40_76/advise=host/"} {
		if !slices.ContainsFunc(fo.Configs, func(c string) bool { return strings.Contains(c, want) }) {
			t.Errorf("configurations %q: none holds %q", fo.Configs, want)
		}
	}
}

// TestReadRunFileErrors: a missing file, a file without results, JSON that
// is not gpuz's and a benchmark line that does not parse are errors that
// name the file.
func TestReadRunFileErrors(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"empty.txt":    "",
		"notes.txt":    "goos: linux\nsome text\n",
		"nosec.txt":    "BenchmarkX 1 10 B/op\n",
		"syntax.txt":   "BenchmarkX 1 abc sec/op\n",
		"other.json":   `{"a": 1}`,
		"broken.json":  `{"version": 1,`,
		"future.json":  `{"version": 99, "modes": []}`,
		"nomodes.json": `{"version": 1, "header": {"model": "linear"}, "modes": []}`,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadRunFile(path); err == nil || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line naming the file", name, err)
		}
	}
	missing := filepath.Join(dir, "missing.txt")
	if _, err := ReadRunFile(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: error %v, want one naming it", err)
	}
}

// TestReadRunFileBadTimes: an epoch time that is not a number, infinite,
// negative or beyond results.MaxEpochSeconds is refused with one line naming
// the file and the line (a benchmark file) or the mode and epoch (JSON). NaN
// made WriteCompare's U-test loop until memory ran out; the others printed
// "NaN s", negative changes or a 309-digit number.
func TestReadRunFileBadTimes(t *testing.T) {
	const line = "BenchmarkGpuz/workload=linear/task=train/mode=cpu/device=host/scale=small 1 "
	run := func(seconds string) string {
		return `{"version": 2, "header": {"model": "linear", "task": "train", "scale": "small"}, "modes": [` +
			`{"mode": "cpu", "device": "host", "status": "ok", "epochs": [{"index": 0, "seconds": 1}, {"index": 1, "seconds": ` + seconds + `}]}]}`
	}
	sweep := `{"version": 2, "kind": "sweep", "parameters": ["take"], "rows": [` +
		`{"settings": {"take": "0"}, "result": ` + run("1") + `}, {"settings": {"take": "8"}, "result": ` + run("-0.5") + `}]}`
	for _, tc := range []struct{ name, content, want string }{
		{"nan.txt", line + "NaN sec/op\n", "nan.txt:1: epoch time NaN s is not a number"},
		{"inf.txt", line + "1 sec/op\n" + line + "+Inf sec/op\n", "inf.txt:2: epoch time +Inf s is beyond 1e+09 s"},
		{"minus-inf.txt", line + "-Inf sec/op\n", "minus-inf.txt:1: epoch time -Inf s is negative"},
		{"negative.txt", "goos: linux\n\n" + line + "-1 sec/op\n", "negative.txt:3: epoch time -1 s is negative"},
		{"huge.txt", line + "1e308 sec/op\n", "huge.txt:1: epoch time 1e+308 s is beyond 1e+09 s"},
		{"negative.json", run("-2"), "negative.json: mode cpu, epoch 1: epoch time -2 s is negative"},
		{"huge.json", run("1e308"), "huge.json: mode cpu, epoch 1: epoch time 1e+308 s is beyond 1e+09 s"},
		{"sweep.json", sweep, "sweep.json: row 1 (take=8), mode cpu, epoch 1: epoch time -0.5 s is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRunFile(tc.name, []byte(tc.content))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line with %q", err, tc.want)
			}
		})
	}
	// The bounds themselves are times.
	for _, s := range []string{"0", "1e9"} {
		if _, err := ParseRunFile("ok.txt", []byte(line+s+" sec/op\n")); err != nil {
			t.Errorf("%s s: %v", s, err)
		}
	}
}

// TestReadResultsRefuses: what is not a regular file (a directory, a named
// pipe, a device) is refused before a byte is read, and so is a file
// larger than MaxResultsBytes, by its size or, where the size it reports
// is wrong (/proc), by what it holds. A named pipe used to block until a
// writer came, /dev/zero to be read until memory ran out.
func TestReadResultsRefuses(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	large := filepath.Join(dir, "large.txt")
	if err := os.WriteFile(large, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Sparse: no byte of it is written, and none must be read.
	if err := os.Truncate(large, MaxResultsBytes+1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		max        int64
		want       string
	}{
		{"directory", dir, MaxResultsBytes, dir + " is a directory, not a results file"},
		{"named pipe", fifo, MaxResultsBytes, fifo + " is a named pipe, not a regular file"},
		{"endless device", "/dev/zero", MaxResultsBytes, "/dev/zero is a device, not a regular file"},
		{"empty device", "/dev/null", MaxResultsBytes, "/dev/null is a device, not a regular file"},
		{"larger than the cap", large, MaxResultsBytes, large + " holds 256 MiB, more than the 256 MiB gpuz reads"},
		{"more than its size says", "/proc/self/maps", 16, "/proc/self/maps holds more than 16 B, the most gpuz reads"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat(tc.path); err != nil {
				t.Skip(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := readResults(tc.path, tc.max)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
					t.Errorf("error %v, want one line with %q", err, tc.want)
				}
			case <-time.After(time.Minute): // a hang, never a slow machine
				t.Fatalf("still reading %s after a minute", tc.path)
			}
		})
	}
	// ReadResults reads with the cap.
	if _, err := ReadResults(large); err == nil || !strings.Contains(err.Error(), "more than the 256 MiB") {
		t.Errorf("ReadResults(%s): %v, want the cap", large, err)
	}
}

// TestCompareSweepFiles writes a sweep with WriteSweepJSON and with
// WriteSweepBenchfmt and reads both back as gpuz compare does: the JSON's
// rows give the configurations the benchmark lines name (the settings
// after the scale), with the same times, and the table labels each row
// with its settings. compare used to refuse the JSON: unknown kind "sweep".
func TestCompareSweepFiles(t *testing.T) {
	dir := t.TempDir()
	benchPath, jsonPath := filepath.Join(dir, "sweep.txt"), filepath.Join(dir, "sweep.json")
	for path, write := range map[string]func(io.Writer) error{
		benchPath: func(w io.Writer) error { return WriteSweepBenchfmt(w, sweepResult) },
		jsonPath:  func(w io.Writer) error { return WriteSweepJSON(w, sweepResult) },
	} {
		if err := os.WriteFile(path, []byte(written(t, write)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fb, fj := readRun(t, benchPath), readRun(t, jsonPath)
	// 4 rows of cache, 2 of cuda (the take=8 rows are OOM, untimed).
	if !slices.Equal(fb.Configs, fj.Configs) || len(fb.Configs) != 6 {
		t.Fatalf("configurations %q from the benchmark file, %q from JSON; want the same 6", fb.Configs, fj.Configs)
	}
	for _, c := range fb.Configs {
		if !slices.Equal(fb.Seconds[c], fj.Seconds[c]) {
			t.Errorf("%s: %v from the benchmark file, %v from JSON", c, fb.Seconds[c], fj.Seconds[c])
		}
	}
	got := compareFiles(t, benchPath, jsonPath)
	for _, want := range []string{"linear train, scale full", "\ncuda sim:8GiB take=0 win_size=1 ", "\ncache sim:8GiB window 3 take=8 win_size=3 "} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, " ~ ") != 6 {
		t.Errorf("want no change (~) in each of the 6 rows:\n%s", got)
	}
}
