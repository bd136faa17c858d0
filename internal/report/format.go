package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"gpuz/internal/bench"
	"gpuz/internal/levers"
	"gpuz/internal/torchplan"
)

// Format is a form the results and the plan are written in.
type Format string

// The formats of --format.
const (
	FormatText     Format = "text"     // the table for people (the default)
	FormatMarkdown Format = "markdown" // the same table as a GitHub table
	FormatCSV      Format = "csv"      // one row per mode, plain numbers in base units
	FormatJSON     Format = "json"     // every epoch (WriteJSON, WritePlanJSON)
)

// Formats lists the formats, in the order help texts name them.
var Formats = []Format{FormatText, FormatMarkdown, FormatCSV, FormatJSON}

// ParseFormat reads a format's name.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return "", fmt.Errorf("unknown format %q (want %s)", s, strings.Join(names, ", "))
}

// Options say how WriteResults and WritePlanAs write: the format, and for
// the text and Markdown tables whether to show every column (Wide) rather
// than those that fit 100 columns.
type Options struct {
	Format Format
	Wide   bool
	// Framework is PyTorch's plan of the same step, printed beside
	// gpuz's by a plan's writers (plan --framework torch); nil for gpuz's
	// alone.
	Framework *torchplan.Plan
}

// WriteAnalyze writes the default Analyze table as text: "Analyze", then
// one row per mode of r, in order (see analyzeTable), then its notes (units,
// the simulated GPU's mark, the reasons of statuses) and the process's peak
// resident set size, when known. Every line fits 100 columns.
func WriteAnalyze(w io.Writer, r bench.Result) error {
	return WriteResults(w, r, Options{Format: FormatText})
}

// WriteResults writes the results of a run in o's format: the Analyze
// table as text or Markdown (every column with o.Wide), the CSV rows of
// writeResultsCSV, or the JSON document of WriteJSON.
func WriteResults(w io.Writer, r bench.Result, o Options) error {
	return writeAs(w, o.Format, tableWriters("Analyze", func() table { return analyzeTable(r, o.Wide) },
		func(b *strings.Builder) error { return writeResultsCSV(b, r) },
		func(w io.Writer) error { return WriteJSON(w, r) }))
}

// formatWriters write one document in each format: text, markdown and csv
// into a buffer, json straight to the writer.
type formatWriters struct {
	text, markdown, csv func(b *strings.Builder) error
	json                func(w io.Writer) error
}

// tableWriters are the formatWriters of a document that is one table: as
// text, its title on a line of its own and then the table, as Markdown the
// table alone; csv and json write the other formats.
func tableWriters(title string, build func() table, csv func(b *strings.Builder) error, json func(w io.Writer) error) formatWriters {
	return formatWriters{
		text: func(b *strings.Builder) error {
			b.WriteString(title + "\n")
			build().writeText(b)
			return nil
		},
		markdown: func(b *strings.Builder) error {
			build().writeMarkdown(b)
			return nil
		},
		csv:  csv,
		json: json,
	}
}

// writeAs writes a document in format f with its writer in fw ("" is
// text): a text, Markdown or CSV one whole once it is complete, so that an
// error leaves nothing half written; a JSON one as WriteJSON writes it.
func writeAs(w io.Writer, f Format, fw formatWriters) error {
	var b strings.Builder
	var err error
	switch f {
	case FormatText, "":
		err = fw.text(&b)
	case FormatMarkdown:
		err = fw.markdown(&b)
	case FormatCSV:
		err = fw.csv(&b)
	case FormatJSON:
		return fw.json(w)
	default:
		return fmt.Errorf("unknown format %q", f)
	}
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// resultsCSVColumns head the results' CSV columns; a name's suffix gives
// its unit: _s seconds, _bytes bytes, _bytes_per_s bytes per second. The
// prediction's columns come last (predictionCSVColumns).
var resultsCSVColumns = append([]string{
	"mode", "device", "placement", "simulated", "status", "reason", "epochs",
	"median_s", "median_ci_low_s", "median_ci_high_s", "mean_s", "stddev_s", "min_s", "max_s", "cold_s",
	"speedup", "peak_device_bytes", "h2d_bytes_per_epoch", "d2h_bytes_per_epoch", "copy_bytes_per_s",
}, append(predictionCSVColumns, "remote_bytes_per_epoch", "mean_ci_low_s", "mean_ci_high_s", "recompute", "setup_s", "precision", "skipped_steps", "loss_scale")...)

// writeResultsCSV writes one CSV row per mode under a heading row, every
// figure of the wide table as a plain number in base units (seconds,
// bytes); an empty cell where a figure does not apply, as in the table's
// "-" (the interval's bounds too when there are too few epochs for one).
func writeResultsCSV(w io.Writer, r bench.Result) error {
	return writeCSV(w, resultsCSVColumns, resultsCSVRecords(r))
}

// writeCSV writes a CSV heading row and the records under it.
func writeCSV(w io.Writer, head []string, recs [][]string) error {
	cw := csv.NewWriter(w)
	cw.Write(head)
	for _, rec := range recs {
		cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}

// resultsCSVRecords returns the CSV record of each mode of r, under
// resultsCSVColumns.
func resultsCSVRecords(r bench.Result) [][]string {
	var recs [][]string
	for _, f := range figuresOf(r) {
		epochs, median, lo, hi, mean, stddev, fastest, slowest := "", "", "", "", "", "", "", ""
		if f.ran {
			epochs = strconv.Itoa(f.n)
		}
		if f.n > 0 {
			median, lo, hi = secs(f.median.Center), secs(f.median.Lo), secs(f.median.Hi)
			mean, fastest, slowest = secs(f.stats.Mean.Seconds()), secs(f.stats.Min.Seconds()), secs(f.stats.Max.Seconds())
		}
		if f.n > 1 {
			stddev = secs(f.stats.Stddev.Seconds())
		}
		peak, up, down := "", "", ""
		if f.ran && f.m.PeakDeviceBytes > 0 {
			peak = strconv.FormatInt(f.m.PeakDeviceBytes, 10)
		}
		if f.copies {
			up, down = strconv.FormatInt(f.up, 10), strconv.FormatInt(f.down, 10)
		}
		remote := ""
		if f.copies {
			remote = strconv.FormatInt(f.remote, 10)
		}
		rec := append([]string{
			string(f.m.Mode), f.m.Device, f.m.Placement, strconv.FormatBool(f.sim), string(f.m.Status.Kind), f.m.Status.Reason, epochs,
			median, lo, hi, mean, stddev, fastest, slowest, secs(f.cold),
			number(f.speedup), peak, up, down, number(f.rate),
		}, predictionCSV(f.pred)...)
		meanLo, meanHi := "", ""
		if f.n > 1 {
			meanLo, meanHi = secs(f.mean.Lo), secs(f.mean.Hi)
		}
		setup := ""
		if len(f.m.Setup) > 0 {
			setup = secs(bench.SetupTime(f.m.Setup).Seconds())
		}
		skipped, scale := "", ""
		if f.ran {
			skipped = strconv.Itoa(f.m.SkippedSteps())
		}
		if lossScaled(r.Header) && f.ran {
			scale = number(f.m.LossScale)
		}
		recs = append(recs, append(rec, remote, meanLo, meanHi, levers.Recompute(r.Header.Recompute).String(), setup,
			precisionOf(r.Header).String(), skipped, scale))
	}
	return recs
}

// number formats v for CSV as the shortest decimal that reads back to it,
// or "" when it does not apply (NaN) or is not finite.
func number(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// secs formats seconds for CSV to the nanosecond, the resolution of the
// times measured ("4.265", not the float noise "4.265000000000001"), or ""
// as number does.
func secs(v float64) string { return number(math.Round(v*1e9) / 1e9) }
