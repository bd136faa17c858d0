package report

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"golang.org/x/perf/benchfmt"

	"gpuz/internal/bench"
)

// benchBase is the base name of every benchmark line gpuz writes: the lines
// read "BenchmarkGpuz/workload=…".
const benchBase = "Gpuz"

// The units of the benchmark lines: an epoch's time per "op" (one epoch,
// Iters 1), as go test writes it once tidied, and the bytes an epoch copied
// host → device and device → host.
const (
	unitTime     = "sec/op"
	unitUpload   = "h2d-B/epoch"
	unitDownload = "d2h-B/epoch"
)

// WriteBenchfmt writes every timed epoch of r (not the warm-up) as a line of
// the Go benchmark format, for benchstat and gpuz compare: one result per
// epoch, named BenchmarkGpuz/workload=W/task=T/mode=M/device=D[/policy=P/
// window=N]/scale=S (sub-benchmark keys, which benchstat groups by), with
// iteration count 1, the epoch's time in sec/op and, for a mode that
// copies between host and device, its bytes in h2d-B/epoch and
// d2h-B/epoch. File configuration lines come first: goos, goarch, pkg, the
// CPU model, and gpuz-version where the binary records its VCS revision.
// A mode with no timed epoch (OOM, unavailable, skipped) writes no line.
func WriteBenchfmt(w io.Writer, r bench.Result) error {
	bw := benchfmt.NewWriter(w)
	for _, res := range benchResults(r, fileConfig(), "") {
		if err := bw.Write(res); err != nil {
			return fmt.Errorf("writing benchmark lines: %w", err)
		}
	}
	return nil
}

// benchResults converts the timed epochs of r to benchmark results, each
// with the file configuration cfg (key, value pairs, in order) and suffix
// added to its name (a sweep's settings, "/take=8/win_size=3").
func benchResults(r bench.Result, cfg [][2]string, suffix string) []*benchfmt.Result {
	var out []*benchfmt.Result
	for _, m := range r.Modes {
		name := benchName(r.Header, m) + suffix
		for _, e := range m.Timed() {
			res := &benchfmt.Result{Name: benchfmt.Name(name), Iters: 1}
			for _, kv := range cfg {
				res.Config = append(res.Config, benchfmt.Config{Key: kv[0], Value: []byte(kv[1]), File: true})
			}
			res.Values = append(res.Values, benchfmt.Value{Value: e.Duration.Seconds(), Unit: unitTime})
			if m.Mode.Copies() {
				res.Values = append(res.Values,
					benchfmt.Value{Value: float64(e.UploadBytes), Unit: unitUpload},
					benchfmt.Value{Value: float64(e.DownloadBytes), Unit: unitDownload})
			}
			out = append(out, res)
		}
	}
	return out
}

// benchName is the name, without the "Benchmark" prefix, of the benchmark
// lines of mode m in a run described by h: the base benchBase and one
// key=value part per setting that tells the configuration apart, policy and
// window only for a paged mode (read from m.Placement, "POLICY N/BLOCKS").
// The device is its name's first word ("cuda:0", not the GPU's model), and
// characters that would end or split a name part (space, slash) become
// underscores.
func benchName(h bench.Header, m bench.ModeResult) string {
	var b strings.Builder
	b.WriteString(benchBase)
	part := func(key, value string) {
		if value == "" {
			value = "-"
		}
		fmt.Fprintf(&b, "/%s=%s", key, benchValue(value))
	}
	part("workload", h.Model)
	part("task", string(h.Task))
	part("mode", string(m.Mode))
	dev, _, _ := strings.Cut(strings.TrimSpace(m.Device), " ")
	part("device", dev)
	if policy, window, ok := strings.Cut(m.Placement, " "); ok {
		window, _, _ = strings.Cut(window, "/")
		part("policy", policy)
		part("window", window)
	}
	part("scale", h.Scale)
	return b.String()
}

// benchValue makes s safe as the value of a name part: no white space
// (which ends the name) and no slash (which starts another part).
func benchValue(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == '\t' || r == '\n' || r == '\r' {
			return '_'
		}
		return r
	}, s)
}

// fileConfig returns the file configuration of the benchmark lines this
// process writes: goos, goarch, pkg, cpu (where /proc/cpuinfo names the
// model) and gpuz-version (where the build recorded a VCS revision).
func fileConfig() [][2]string {
	cfg := [][2]string{{"goos", runtime.GOOS}, {"goarch", runtime.GOARCH}, {"pkg", "gpuz"}}
	if cpu := cpuModel("/proc/cpuinfo"); cpu != "" {
		cfg = append(cfg, [2]string{"cpu", cpu})
	}
	if rev := vcsRevision(); rev != "" {
		cfg = append(cfg, [2]string{"gpuz-version", rev})
	}
	return cfg
}

// cpuModel returns the first "model name" of the cpuinfo file at path, or
// "" when it cannot be read or names none.
func cpuModel(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		key, value, ok := strings.Cut(s.Text(), ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.Join(strings.Fields(value), " ")
		}
	}
	return ""
}

// vcsRevision returns the VCS revision the binary was built from, with
// "-dirty" when the tree had changes, or "" when the build did not record
// one (go build -buildvcs=false, go test).
func vcsRevision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" && modified == "true" {
		rev += "-dirty"
	}
	return rev
}
