package report

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"

	"gpuz/internal/bench"
	"gpuz/internal/engine"
	"gpuz/internal/filekind"
	"gpuz/internal/results"
	"gpuz/internal/termsafe"
)

// RunFile holds the epoch times of one result file given to gpuz compare,
// by configuration: the benchmark name, as WriteBenchfmt writes it
// ("Gpuz/workload=linear/task=train/mode=cpu/device=host/scale=full").
type RunFile struct {
	// Name names the file in the table and in errors.
	Name string
	// Configs are the configurations in the order the file first names them.
	Configs []string
	// Seconds holds the time of every timed epoch (every result, for a
	// benchmark file) of each configuration, in seconds.
	Seconds map[string][]float64
}

// add appends a time to configuration name.
func (f *RunFile) add(name string, seconds float64) {
	if f.Seconds == nil {
		f.Seconds = map[string][]float64{}
	}
	if _, ok := f.Seconds[name]; !ok {
		f.Configs = append(f.Configs, name)
	}
	f.Seconds[name] = append(f.Seconds[name], seconds)
}

// MaxResultsBytes is the largest results file gpuz compare and gpuz plot
// read: 256 MiB. A run's JSON or benchmark lines take a few KiB, a sweep's
// at the 10,000 configurations it allows some tens of MiB, so a larger
// file is not gpuz's; the cap keeps one from filling memory.
const MaxResultsBytes = 256 << 20

// ReadResults reads the results file at path for a reader such as
// ParseRunFile, the error saying that it was results that could not be
// read. Only a regular file of at most MaxResultsBytes is read: a
// directory, a named pipe (which would block until a writer came) or a
// device (/dev/zero would never end) is refused before anything is read.
func ReadResults(path string) ([]byte, error) {
	return readResults(path, MaxResultsBytes)
}

// readResults is ReadResults with a cap of max bytes: filekind.Read, a
// directory named as not a results file.
func readResults(path string, max int64) ([]byte, error) {
	data, err := filekind.Read(path, max)
	if nr, ok := filekind.IsNotRegular(err); ok && nr.Mode.IsDir() {
		return nil, fmt.Errorf("reading results: %s is a directory, not a results file", path)
	}
	if err != nil {
		return nil, fmt.Errorf("reading results: %w", err)
	}
	return data, nil
}

// ReadRunFile reads the result file at path: a gpuz --json file or a file
// in the Go benchmark format (gpuz --bench-out, go test -bench), told apart
// by content (JSON starts with "{").
func ReadRunFile(path string) (RunFile, error) {
	data, err := ReadResults(path)
	if err != nil {
		return RunFile{}, err
	}
	return ParseRunFile(path, data)
}

// ParseRunFile reads data, a gpuz --json file or a file in the Go benchmark
// format, named name in errors. A file with no timed epoch (no result in
// sec/op) is an error, and so is a benchmark line that does not parse.
func ParseRunFile(name string, data []byte) (RunFile, error) {
	f := RunFile{Name: name}
	var err error
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '{' {
		err = f.parseJSON(data)
	} else {
		err = f.parseBenchfmt(data)
	}
	if err != nil {
		return RunFile{}, err
	}
	if len(f.Configs) == 0 {
		return RunFile{}, fmt.Errorf("%s: no timed epochs (no benchmark result in sec/op)", name)
	}
	return f, nil
}

// maxBenchLine is the longest line, in bytes without its newline, that a
// benchmark file may hold: benchfmt's reader (a bufio.Scanner of the
// default size) fails on a line of bufio.MaxScanTokenSize bytes or more,
// with line 0.
const maxBenchLine = bufio.MaxScanTokenSize - 1

// longLine returns the number (from 1) and length of data's first line
// longer than maxBenchLine, 0 when there is none.
func longLine(data []byte) (line, n int) {
	for i := 1; len(data) > 0; i++ {
		l, rest, _ := bytes.Cut(data, []byte("\n"))
		if len(l) > maxBenchLine {
			return i, len(l)
		}
		data = rest
	}
	return 0, 0
}

// parseBenchfmt reads the results in sec/op of a Go benchmark file. A time
// that results.CheckEpochSeconds refuses is an error naming the file and
// line, and so is a line too long to read.
func (f *RunFile) parseBenchfmt(data []byte) error {
	if line, n := longLine(data); line > 0 {
		return fmt.Errorf("%s:%d: line too long: %d bytes, at most %d in a benchmark file", f.Name, line, n, maxBenchLine)
	}
	r := benchfmt.NewReader(bytes.NewReader(data), f.Name)
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.SyntaxError:
			return rec
		case *benchfmt.Result:
			if sec, ok := rec.Value(unitTime); ok {
				if err := results.CheckEpochSeconds(sec); err != nil {
					file, line := rec.Pos()
					return fmt.Errorf("%s:%d: %w", file, line, err)
				}
				f.add(rec.Name.String(), sec)
			}
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", f.Name, err)
	}
	return nil
}

// parseJSON reads the timed epochs of a gpuz --json file, a run's or a
// sweep's, naming each mode as WriteBenchfmt would and, in a sweep, each
// row's modes as WriteSweepBenchfmt would (the settings after the scale),
// so that a sweep's JSON and its --bench-out name the same configurations.
// An epoch time that results.Run.CheckEpochs refuses is an error naming the
// file, the sweep's row, the mode and the epoch.
func (f *RunFile) parseJSON(data []byte) error {
	var doc results.Doc
	if err := results.Decode(f.Name, data, &doc, "", results.SweepKind); err != nil {
		return err
	}
	if doc.Kind != results.SweepKind {
		return f.addJSONRun(doc.Run, "", "")
	}
	for i, row := range doc.Rows {
		settings := make([]bench.Setting, len(doc.Parameters))
		for j, p := range doc.Parameters {
			settings[j] = bench.Setting{Name: p, Value: row.Settings[p]}
		}
		where := fmt.Sprintf("row %d (%s), ", i, bench.SettingsString(settings))
		if err := f.addJSONRun(row.Result, settingsSuffix(settings), where); err != nil {
			return err
		}
	}
	return nil
}

// addJSONRun adds the timed epochs of a run's JSON, suffix appended to
// each configuration's name; where says where the run is in the file for
// errors ("row 2 (take=8), " in a sweep).
func (f *RunFile) addJSONRun(doc results.Run, suffix, where string) error {
	if err := doc.CheckEpochs(); err != nil {
		return fmt.Errorf("%s: %s%w", f.Name, where, err)
	}
	for _, m := range doc.Modes {
		name := benchName(doc.Header, bench.Mode(m.Mode), m.Device, placementKeys(m)) + suffix
		for _, e := range m.Epochs {
			if !e.Warmup {
				f.add(name, e.Seconds)
			}
		}
	}
	return nil
}

// placementKeys is the keys of m's placement: as recorded, or, from a
// file written before they were (no keys, a placement's text), read
// from that text by the mode's placement (engine.RecordedKeys).
func placementKeys(m results.Mode) [][2]string {
	if m.PlacementKeys != nil {
		return m.PlacementKeys
	}
	return engine.RecordedKeys(bench.Mode(m.Mode).Placement(bench.Config{}), m.Placement)
}

// compareConfidence is the confidence level of the medians' intervals.
const compareConfidence = 0.95

// compareRow is one configuration of a comparison table.
type compareRow struct {
	label string // the configuration within its table
	// sum is each file's median and interval, nil where the file does not
	// have the configuration.
	sum [2]*benchmath.Summary
	// change and p are the change from A to B and the U test's p-value,
	// or what stands in their place.
	change, p string
}

// WriteCompare writes, for every configuration of a or b, the median epoch
// time of each with its 95% confidence interval and the change from a to b
// with the p-value of a Mann-Whitney U test (benchmath.AssumeNothing),
// "~" where the difference is not significant (p ≥ 0.05). Configurations
// come in tables by workload, task and scale, in the order the files name
// them. Warnings follow the tables: a median without a finite interval (too
// few epochs), and a comparison with too few epochs on both sides ever to
// be significant.
func WriteCompare(w io.Writer, a, b RunFile) error {
	configs := slices.Clone(a.Configs)
	for _, c := range b.Configs {
		if _, ok := a.Seconds[c]; !ok {
			configs = append(configs, c)
		}
	}
	var headings []string
	rows := map[string][]compareRow{}
	// Warnings, each once with where it applies: a median's (of one file's
	// configuration) or a comparison's (of a configuration).
	type warning struct {
		msg    string
		median bool
	}
	where := map[warning][]string{}
	var order []warning
	var medians, comparisons int
	warn := func(median bool, at string, errs []error) {
		for _, err := range errs {
			k := warning{err.Error(), median}
			if _, ok := where[k]; !ok {
				order = append(order, k)
			}
			where[k] = append(where[k], at)
		}
	}
	for _, c := range configs {
		heading, label := splitConfig(c)
		if _, ok := rows[heading]; !ok {
			headings = append(headings, heading)
		}
		row := compareRow{label: label}
		var samples [2]*benchmath.Sample
		for i, f := range []RunFile{a, b} {
			values, ok := f.Seconds[c]
			if !ok {
				continue
			}
			samples[i] = benchmath.NewSample(slices.Clone(values), &benchmath.DefaultThresholds)
			s := benchmath.AssumeNothing.Summary(samples[i], compareConfidence)
			row.sum[i] = &s
			medians++
			warn(true, "AB"[i:i+1]+" "+label, s.Warnings)
		}
		switch {
		case row.sum[0] == nil:
			row.change, row.p = "-", "only in B"
		case row.sum[1] == nil:
			row.change, row.p = "-", "only in A"
		default:
			cmp := benchmath.AssumeNothing.Compare(samples[0], samples[1])
			comparisons++
			row.change, row.p = cmp.FormatDelta(row.sum[0].Center, row.sum[1].Center), cmp.String()
			warn(false, label, cmp.Warnings)
		}
		rows[heading] = append(rows[heading], row)
	}

	var out bytes.Buffer
	fmt.Fprintf(&out, "A: %s\nB: %s\n", termsafe.String(a.Name), termsafe.String(b.Name))
	out.WriteString("time per epoch: median ± 95% confidence interval; change from A to B,\n" +
		"~ where not significant (Mann-Whitney U test, p ≥ 0.05); medians and the U test\n" +
		"as benchstat computes them (benchmath), where a run's table leads with the mean\n")
	for _, heading := range headings {
		fmt.Fprintf(&out, "\n%s\n", termsafe.String(heading))
		writeCompareTable(&out, rows[heading])
	}
	for _, k := range order {
		at := strings.Join(where[k], ", ")
		switch n := len(where[k]); {
		case n > 1 && k.median && n == medians:
			at = "every median"
		case n > 1 && !k.median && n == comparisons:
			at = "every comparison"
		}
		fmt.Fprintf(&out, "warning: %s: %s\n", termsafe.String(at), termsafe.String(k.msg))
	}
	_, err := w.Write(out.Bytes())
	return err
}

// writeCompareTable writes one table of a comparison: the medians in one
// unit for the table, chosen from them as the Analyze table's times are
// (timeUnitFor) and named in the A and B headings.
func writeCompareTable(out *bytes.Buffer, rows []compareRow) {
	var centers []float64
	for _, r := range rows {
		for _, s := range r.sum {
			if s != nil {
				centers = append(centers, s.Center)
			}
		}
	}
	u := timeUnitFor(centers)
	var cells [][]string
	for _, r := range rows {
		row := []string{r.label}
		for _, s := range r.sum {
			if s == nil {
				row = append(row, "-")
				continue
			}
			row = append(row, u.format(s.Center)+" ± "+s.PctRangeString())
		}
		cells = append(cells, append(row, r.change, r.p))
	}
	writeTable(out, []string{"configuration", "A (" + u.name + ")", "B (" + u.name + ")", "change", "p"}, []int{0, 4}, cells)
}

// benchLabelKeys are the keys of gpuz's benchmark names whose values alone
// label a row of the comparison ("cache sim:8GiB window 3"); a sweep's
// settings are labelled with their keys ("take=8").
var benchLabelKeys = []string{"mode", "device", "policy", "window"}

// splitConfig splits a benchmark name into the heading of its table and the
// label of its row. For gpuz's names the heading is the workload, the task
// and the scale ("linear train, scale small") and the label the other
// values ("cache sim:8GiB window 3"), a sweep's settings with their keys
// ("cache sim:8GiB window 3 take=8 win_size=3"); another benchmark's base name is its
// heading and the rest of its name its label.
func splitConfig(name string) (heading, label string) {
	base, parts := benchfmt.Name(name).Parts()
	var head, rest []string
	scale := ""
	for _, p := range parts {
		key, value, ok := strings.Cut(strings.TrimPrefix(string(p), "/"), "=")
		switch {
		case !ok:
			rest = append(rest, string(p))
		case key == "workload" || key == "task":
			head = append(head, value)
		case key == "scale":
			scale = value
		case string(base) == benchBase && !slices.Contains(benchLabelKeys, key):
			// A sweep's setting: its value alone would not say which.
			rest = append(rest, key+"="+value)
		default:
			rest = append(rest, value)
		}
	}
	if string(base) != benchBase || len(head) == 0 {
		head = append([]string{string(base)}, head...)
	}
	heading = strings.Join(head, " ")
	if scale != "" {
		heading += ", scale " + scale
	}
	label = strings.Join(rest, " ")
	if label == "" {
		label = "-"
	}
	return heading, label
}
