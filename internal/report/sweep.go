package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"gpuz/internal/bench"
	"gpuz/internal/levers"
	"gpuz/internal/units"
)

// sweepFigures are the figures of one mode of one configuration of a sweep.
type sweepFigures struct {
	figures
	row bench.SweepRow
}

// sweepFiguresOf computes the figures of every configuration × mode of s,
// in order.
func sweepFiguresOf(s bench.SweepResult) []sweepFigures {
	var fs []sweepFigures
	for _, row := range s.Rows {
		for _, f := range figuresOf(row.Result) {
			fs = append(fs, sweepFigures{f, row})
		}
	}
	return fs
}

// settingsLabel names a configuration in notes: "take=8 win_size=3".
func settingsLabel(ss []bench.Setting) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = s.Name + "=" + s.Value
	}
	return strings.Join(parts, " ")
}

// sweepTable builds the sweep's table: one row per configuration × mode,
// the swept parameters' values first, then the device's free memory while
// the configuration ran (after its take), the mode (marked † on the
// simulated GPU), the cache placement, the mean ± its confidence
// interval (Student's t), the peak device memory, the bytes copied per epoch and the
// status, a reason going to a numbered note that names the configuration.
// wide adds the device, the timed epochs and the cold epoch, and shows full
// statuses. A sweep with 16-bit rows gets a note naming their
// precisions, and one with fp16 training rows the skipped column (see
// analyzeTable). With a few parameters it fits maxWidth columns.
func sweepTable(s bench.SweepResult, wide bool) table {
	fs := sweepFiguresOf(s)
	var t table
	var notes notes
	cells := make([][]string, len(fs))
	col := func(name string, left bool, cell func(f sweepFigures) string) {
		t.columns = append(t.columns, column{name, left})
		for i, f := range fs {
			cells[i] = append(cells[i], cell(f))
		}
	}
	for i, p := range s.Parameters {
		col(p, true, func(f sweepFigures) string {
			if i < len(f.row.Settings) {
				return f.row.Settings[i].Value
			}
			return na
		})
	}
	col("free", false, func(f sweepFigures) string {
		if f.row.DeviceFreeBytes < 0 {
			return na
		}
		return units.Bytes(f.row.DeviceFreeBytes)
	})
	col("mode", true, func(f sweepFigures) string {
		if f.sim {
			return string(f.m.Mode) + "†"
		}
		return string(f.m.Mode)
	})
	if wide {
		col("device", true, func(f sweepFigures) string { return cellOr(f.m.Device) })
	}
	col("placement", true, func(f sweepFigures) string { return cellOr(f.m.Placement) })
	if wide {
		col("epochs", false, func(f sweepFigures) string {
			if !f.ran {
				return na
			}
			return strconv.Itoa(f.n)
		})
	}
	var means []float64
	for _, f := range fs {
		if f.n > 0 {
			means = append(means, f.mean.Center)
		}
	}
	u := timeUnitFor(means)
	col("mean ("+u.name+")", false, func(f sweepFigures) string {
		if f.n == 0 {
			return na
		}
		return u.format(f.mean.Center) + " ± " + spread(u, f.mean)
	})
	if wide {
		var colds []float64
		for _, f := range fs {
			if !math.IsNaN(f.cold) {
				colds = append(colds, f.cold)
			}
		}
		cu := timeUnitFor(colds)
		col("cold ("+cu.name+")", false, func(f sweepFigures) string {
			if math.IsNaN(f.cold) {
				return na
			}
			return cu.format(f.cold)
		})
	}
	col("peak mem", false, func(f sweepFigures) string {
		if !f.ran || f.m.PeakDeviceBytes <= 0 {
			return na
		}
		return units.Bytes(f.m.PeakDeviceBytes)
	})
	col("copied", false, func(f sweepFigures) string {
		if !f.copies {
			return na
		}
		return units.Bytes(f.up + f.down)
	})
	scaled := slices.ContainsFunc(s.Rows, func(r bench.SweepRow) bool { return lossScaled(r.Result.Header) })
	if scaled {
		col("skipped", false, func(f sweepFigures) string {
			if !lossScaled(f.row.Result.Header) {
				return na
			}
			return skippedCell(f.figures)
		})
	}
	col("status", true, func(f sweepFigures) string {
		if wide {
			return f.m.Status.String()
		}
		return notes.statusOf(settingsLabel(f.row.Settings)+" "+string(f.m.Mode), f.m.Status)
	})
	t.rows = cells

	t.notes = append(t.notes, "mean ± the half-width of its 95% confidence interval (Student's t); free: the device's free memory while the configuration ran, after its take")
	var plain []figures
	for _, f := range fs {
		plain = append(plain, f.figures)
	}
	for _, w := range meanWarnings(plain) {
		t.notes = append(t.notes, "± ∞: "+w+" (timed epochs; raise --epochs)")
	}
	t.notes = append(t.notes, "sizes in binary units (1 KiB = 1024 B, MiB, GiB); copied: bytes copied host→device plus device→host per timed epoch")
	for _, f := range fs {
		if f.sim {
			t.notes = append(t.notes, "† on the simulated GPU ("+f.m.Device+"): times are host times, not GPU times")
			break
		}
	}
	t.notes = append(t.notes, notes.lines...)
	var halves []levers.Precision
	for _, r := range s.Rows {
		if p := precisionOf(r.Result.Header); p.Half() && !slices.Contains(halves, p) {
			halves = append(halves, p)
		}
	}
	if len(halves) > 0 {
		t.notes = append(t.notes, precisionNote(halves...))
	}
	if scaled {
		t.notes = append(t.notes, "skipped: fp16 training steps skipped over every epoch, warm-up included, as their scaled gradients overflowed")
	}
	return t
}

// cellOr is s, or the cell of a figure that does not apply when s is empty.
func cellOr(s string) string {
	if s == "" {
		return na
	}
	return s
}

// WriteSweep writes a sweep's results in o's format: the sweep table as
// text ("Sweep", the table, its notes) or Markdown (every column with
// o.Wide), the CSV rows of writeSweepCSV, or the JSON document of
// WriteSweepJSON.
func WriteSweep(w io.Writer, s bench.SweepResult, o Options) error {
	return writeAs(w, o.Format, tableWriters("Sweep", func() table { return sweepTable(s, o.Wide) },
		func(b *strings.Builder) error { return writeSweepCSV(b, s) },
		func(w io.Writer) error { return WriteSweepJSON(w, s) }))
}

// writeSweepCSV writes one CSV row per configuration × mode: the swept
// parameters' values (snake_case headings), the take and the free memory
// in bytes (take_bytes, device_free_bytes; empty when the run had no GPU
// device), then the columns of a run's CSV (resultsCSVColumns).
func writeSweepCSV(w io.Writer, s bench.SweepResult) error {
	head := append(append([]string{}, s.Parameters...), "take_bytes", "device_free_bytes")
	var recs [][]string
	for _, row := range s.Rows {
		lead := make([]string, 0, len(head))
		for i := range s.Parameters {
			v := ""
			if i < len(row.Settings) {
				v = row.Settings[i].Value
			}
			lead = append(lead, v)
		}
		free := ""
		if row.DeviceFreeBytes >= 0 {
			free = strconv.FormatInt(row.DeviceFreeBytes, 10)
		}
		lead = append(lead, strconv.FormatInt(row.TakeBytes, 10), free)
		for _, rec := range resultsCSVRecords(row.Result) {
			recs = append(recs, append(append([]string{}, lead...), rec...))
		}
	}
	return writeCSV(w, append(head, resultsCSVColumns...), recs)
}

// WriteSweepJSON writes a sweep as an indented JSON object: the version
// (results.Version), "kind": "sweep", the header of its first configuration
// (as a run's), the swept parameters in order (snake_case) and one row per
// configuration with its settings by parameter, the take and the device's
// free memory in bytes, and the configuration's result, the same object a
// run's JSON is (WriteJSON): the sweep's document as bench makes it
// (bench.SweepResult.Document).
func WriteSweepJSON(w io.Writer, s bench.SweepResult) error {
	return encodeJSON(w, s.Document())
}

// WriteSweepBenchfmt writes every timed epoch of every configuration of s
// as WriteBenchfmt writes a run's, the configuration's settings added to
// the benchmark name: BenchmarkGpuz/workload=…/scale=S/take=8/win_size=3.
func WriteSweepBenchfmt(w io.Writer, s bench.SweepResult) error {
	if _, err := fmt.Fprintf(w, "%s\n\n", provenance(s.Header().Env)); err != nil {
		return fmt.Errorf("writing benchmark lines: %w", err)
	}
	bw := benchfmt.NewWriter(w)
	cfg := fileConfig(s.Header().Env)
	for _, row := range s.Rows {
		for _, res := range benchResults(row.Result, cfg, settingsSuffix(row.Settings)) {
			if err := bw.Write(res); err != nil {
				return fmt.Errorf("writing benchmark lines: %w", err)
			}
		}
	}
	return nil
}

// settingsSuffix is a sweep configuration's settings as the end of its
// benchmark names: "/take=8/win_size=3". The settings that benchName
// already states from the run's header (headerSettings: recompute,
// precision, attention) are left out, so that a name repeats no key and a
// sweep's row is named as a plain run of its settings is, which compare
// pairs with it.
func settingsSuffix(ss []bench.Setting) string {
	var b strings.Builder
	for _, st := range ss {
		if headerSettings[st.Name] {
			continue
		}
		fmt.Fprintf(&b, "/%s=%s", st.Name, benchValue(namePart(st.Value)))
	}
	return b.String()
}

// headerSettings are the sweep settings that a run's header records and
// benchName names (as recompute, precision, attention and lora parts, each only
// where it is not the default), so that settingsSuffix leaves them out.
var headerSettings = map[string]bool{"recompute": true, "precision": true, "attention": true, "lora": true}

// namePart is a setting's value as a name part: "-" for an empty one.
func namePart(v string) string {
	if v == "" {
		return "-"
	}
	return v
}
