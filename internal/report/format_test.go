package report

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"gpuz/internal/bench"
	"gpuz/internal/report/reporttest"
)

// TestWriteResultsFormats renders results in every format and width
// against golden files.
func TestWriteResultsFormats(t *testing.T) {
	tests := []struct {
		golden string
		in     bench.Result
		opts   Options
	}{
		{"analyze_interrupted_wide.golden", interruptedResult, Options{Format: FormatText, Wide: true}},
		{"analyze_interrupted.md.golden", interruptedResult, Options{Format: FormatMarkdown}},
		{"analyze_interrupted_wide.md.golden", interruptedResult, Options{Format: FormatMarkdown, Wide: true}},
		{"analyze_interrupted.csv.golden", interruptedResult, Options{Format: FormatCSV}},
		{"analyze_failed.csv.golden", failedResult, Options{Format: FormatCSV}},
		{"json_interrupted.golden", withEnv(interruptedResult), Options{Format: FormatJSON}},
		{"analyze_oom.golden", oomResult, Options{Format: FormatText}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			golden(t, tt.golden, written(t, func(w io.Writer) error { return WriteResults(w, tt.in, tt.opts) }))
		})
	}
}

// TestWritePlanFormats renders the plan in every format and width against
// golden files.
func TestWritePlanFormats(t *testing.T) {
	tests := []struct {
		golden string
		opts   Options
	}{
		{"plan_linear.golden", Options{Format: FormatText}},
		{"plan_linear_wide.golden", Options{Format: FormatText, Wide: true}},
		{"plan_linear.md.golden", Options{Format: FormatMarkdown}},
		{"plan_linear.csv.golden", Options{Format: FormatCSV}},
		{"plan_linear_json.golden", Options{Format: FormatJSON}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			golden(t, tt.golden, written(t, func(w io.Writer) error { return WritePlanAs(w, linearPlan, tt.opts) }))
		})
	}
}

// TestDefaultTablesFit checks that every line of the default text tables,
// notes included, fits maxWidth columns: the three modes of the full-scale
// linear run (on the simulated GPU, cache interrupted), a GPU with a long
// name, modes that never ran, a long OOM reason, and the plans: on a
// simulated device (sim:8GiB) and on a profiled one (sim:rtx4060-laptop),
// each with a "no: device" row.
func TestDefaultTablesFit(t *testing.T) {
	tests := map[string]func(io.Writer) error{
		"linear, three modes": func(w io.Writer) error { return WriteAnalyze(w, interruptedResult) },
		"long GPU name":       func(w io.Writer) error { return WriteAnalyze(w, evalResult) },
		"no mode ran":         func(w io.Writer) error { return WriteAnalyze(w, failedResult) },
		"long OOM reason":     func(w io.Writer) error { return WriteAnalyze(w, oomResult) },
		"no GPU":              func(w io.Writer) error { return WriteAnalyze(w, fullResult) },
		"plan":                func(w io.Writer) error { return WritePlan(w, linearPlan) },
		"plan, sim:PROFILE":   func(w io.Writer) error { return WritePlan(w, predictedPlan) },
	}
	for name, write := range tests {
		t.Run(name, func(t *testing.T) {
			for i, line := range strings.Split(written(t, write), "\n") {
				if n := utf8.RuneCountInString(line); n > maxWidth {
					t.Errorf("line %d is %d columns wide, more than %d:\n%s", i+1, n, maxWidth, line)
				}
			}
		})
	}
}

// TestLongReasonIsANote checks that a long OOM reason is not in the table
// but in a numbered note below it, the cell pointing to it.
func TestLongReasonIsANote(t *testing.T) {
	out := written(t, func(w io.Writer) error { return WriteAnalyze(w, oomResult) })
	reason := oomResult.Modes[1].Status.Reason
	row := reporttest.TableRows(out)["cuda"]
	if !strings.HasSuffix(row, "OOM [1]") {
		t.Errorf("cuda row %q does not end with OOM [1]", row)
	}
	joined := strings.Join(strings.Fields(out), " ") // the note may wrap
	if !strings.Contains(joined, "[1] cuda: OOM: "+reason) {
		t.Errorf("no note [1] with the reason in\n%s", out)
	}
}

// TestResultsCSVParses reads the CSV back: one row per mode under the
// heading, as many cells as headings, and every cell of a column whose
// name gives a unit either empty or a number.
func TestResultsCSVParses(t *testing.T) {
	for _, r := range []bench.Result{interruptedResult, evalResult, failedResult, fullResult} {
		recs, err := csv.NewReader(strings.NewReader(written(t, func(w io.Writer) error {
			return WriteResults(w, r, Options{Format: FormatCSV})
		}))).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1+len(r.Modes) {
			t.Fatalf("%d records for %d modes", len(recs), len(r.Modes))
		}
		for _, rec := range recs[1:] {
			for i, name := range recs[0] {
				numeric := strings.HasSuffix(name, "_s") || strings.HasSuffix(name, "_bytes") || strings.HasSuffix(name, "_per_epoch") || name == "speedup" || name == "epochs"
				if _, err := strconv.ParseFloat(rec[i], 64); numeric && rec[i] != "" && err != nil {
					t.Errorf("%s = %q is not a number", name, rec[i])
				}
			}
		}
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range Formats {
		if got, err := ParseFormat(string(f)); got != f || err != nil {
			t.Errorf("ParseFormat(%q) = %q, %v", f, got, err)
		}
	}
	if _, err := ParseFormat("html"); err == nil || !strings.Contains(err.Error(), "text, markdown, csv, json") {
		t.Errorf("ParseFormat(html) gave %v", err)
	}
}
