package report

import (
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"gpuz/internal/bench"
	"gpuz/internal/results"
	"gpuz/internal/sysinfo"
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
	unitRemote   = "remote-B/epoch"
	// A generation's prompt tokens a second through its prefill and its
	// generated tokens a second through its decode passes.
	unitPrefill = "prefill-tok/s"
	unitDecode  = "decode-tok/s"
)

// WriteBenchfmt writes every timed epoch of r (not the warm-up) as a line of
// the Go benchmark format, for benchstat and gpuz compare: one result per
// epoch, named BenchmarkGpuz/workload=W/task=T/mode=M/device=D[/policy=P/
// window=N][/recompute=blocks][/precision=bf16|fp16]/scale=S (sub-benchmark
// keys, which benchstat groups by), with iteration count 1, the epoch's time in sec/op and, for a mode that
// copies between host and device, its bytes in h2d-B/epoch and
// d2h-B/epoch, and for a generation its prefill-tok/s and decode-tok/s. A provenance line comes first (the gpuz build, its VCS
// revision, the start time and the command line), then the file
// configuration lines: goos, goarch, pkg and the CPU model, all from the
// run's environment (r.Header.Env).
// A mode with no timed epoch (OOM, unavailable, skipped) writes no line.
func WriteBenchfmt(w io.Writer, r bench.Result) error {
	if _, err := fmt.Fprintf(w, "%s\n\n", provenance(r.Header.Env)); err != nil {
		return fmt.Errorf("writing benchmark lines: %w", err)
	}
	bw := benchfmt.NewWriter(w)
	for _, res := range benchResults(r, fileConfig(r.Header.Env), "") {
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
		name := benchName(r.Header, m.Mode, m.Device, m.PlacementKeys) + suffix
		for _, e := range m.Timed() {
			res := &benchfmt.Result{Name: benchfmt.Name(name), Iters: 1}
			for _, kv := range cfg {
				res.Config = append(res.Config, benchfmt.Config{Key: kv[0], Value: []byte(kv[1]), File: true})
			}
			res.Values = append(res.Values, benchfmt.Value{Value: e.Seconds, Unit: unitTime})
			if m.Mode.Copies() {
				up, down, _ := e.Copied()
				res.Values = append(res.Values,
					benchfmt.Value{Value: float64(up), Unit: unitUpload},
					benchfmt.Value{Value: float64(down), Unit: unitDownload})
			}
			if e.RemoteBytes > 0 {
				res.Values = append(res.Values, benchfmt.Value{Value: float64(e.RemoteBytes), Unit: unitRemote})
			}
			if g := e.Generation; g != nil && g.PrefillSeconds > 0 && g.DecodeSeconds > 0 {
				res.Values = append(res.Values,
					benchfmt.Value{Value: float64(g.PrefillTokens) / g.PrefillSeconds, Unit: unitPrefill},
					benchfmt.Value{Value: float64(g.DecodeTokens) / g.DecodeSeconds, Unit: unitDecode})
			}
			out = append(out, res)
		}
	}
	return out
}

// benchName is the name, without the "Benchmark" prefix, of the benchmark
// lines of mode on device, its placement's keys placement (results.Mode's
// fields), in a run described by h: the base benchBase and one key=value
// part per setting that tells the configuration apart, the placement's
// keys among them (policy and window for a paged mode). The device is
// its name's first word ("cuda:0", not the GPU's model), and characters
// that would end or split a name part (space, slash) become underscores.
// A run's modes (bench.ModeResult) and a document's read back
// (results.Mode) are named alike.
func benchName(h results.Header, mode bench.Mode, device string, placement [][2]string) string {
	var b strings.Builder
	b.WriteString(benchBase)
	part := func(key, value string) {
		if value == "" {
			value = "-"
		}
		fmt.Fprintf(&b, "/%s=%s", key, benchValue(value))
	}
	// The llm workload's header names its model after the workload
	// ("llm smollm2-135m"): a part of its own.
	workload, model, _ := strings.Cut(h.Model, " ")
	part("workload", workload)
	if model != "" {
		part("model", model)
	}
	part("task", string(h.Task))
	part("mode", string(mode))
	dev, _, _ := strings.Cut(strings.TrimSpace(device), " ")
	part("device", dev)
	for _, kv := range placement {
		part(kv[0], kv[1])
	}
	if recomputes(h) {
		part("recompute", h.Recompute)
	}
	if h.Attention != "" {
		part("attention", h.Attention)
	}
	if h.LoRARank > 0 {
		part("lora", strconv.Itoa(h.LoRARank))
	}
	if p := precisionOf(h); p.Half() {
		part("precision", p.String())
	}
	if h.GradAccum > 1 {
		part("grad_accum", strconv.Itoa(h.GradAccum))
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

// fileConfig returns the file configuration of the benchmark lines of a
// run measured in e: goos, goarch, pkg and cpu (where e names the CPU
// model). Tools such as benchstat split results whose configurations
// differ, so the configuration holds only what describes the machine: the
// build and the command line, which differ between the two runs one
// compares, go in the provenance line instead. An environment never
// collected (a header built by hand) stands for this process's:
// sysinfo.Collect.
func fileConfig(e *results.Env) [][2]string {
	e = collected(e)
	goos, goarch, ok := strings.Cut(e.OS, "/")
	if !ok {
		goos, goarch = runtime.GOOS, runtime.GOARCH
	}
	cfg := [][2]string{{"goos", goos}, {"goarch", goarch}, {"pkg", "gpuz"}}
	if e.CPU != "" && e.CPU != sysinfo.Unknown {
		cfg = append(cfg, [2]string{"cpu", e.CPU})
	}
	return cfg
}

// collected is e, or this process's environment where e was never
// collected (nil).
func collected(e *results.Env) *results.Env {
	if e == nil {
		return bench.EnvDoc(sysinfo.Collect())
	}
	return e
}

// provenance is the line that opens a file of benchmark lines: the gpuz
// build (version, VCS revision, "modified" for a dirty tree), the start
// time and the command line of the run. It is neither a configuration nor
// a result line, so readers of the format (benchfmt, benchstat) skip it
// and two builds' files still compare.
func provenance(e *results.Env) string {
	e = collected(e)
	rev := e.Revision
	if e.Modified == "true" {
		rev += ", modified"
	}
	line := fmt.Sprintf("# gpuz %s (revision %s)", e.GpuzVersion, rev)
	if start, err := time.Parse(time.RFC3339, e.Start); err == nil && !start.IsZero() {
		line += ", started " + start.UTC().Format(time.RFC3339)
	}
	if e.CommandLine != "" {
		line += ": " + e.CommandLine
	}
	return line
}
