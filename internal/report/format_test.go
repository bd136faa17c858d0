package report

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"
	"testing"

	"gpuz/internal/bench"
	"gpuz/internal/report/reporttest"
)

// TestWriteFormats renders results, the plan and a sweep in every format
// and width against golden files; a default text table fits maxWidth
// columns.
func TestWriteFormats(t *testing.T) {
	results := func(r bench.Result, o Options) func(w io.Writer) error {
		return func(w io.Writer) error { return WriteResults(w, r, o) }
	}
	plan := func(o Options) func(w io.Writer) error {
		return func(w io.Writer) error { return WritePlanAs(w, linearPlan, o) }
	}
	sweep := func(o Options) func(w io.Writer) error {
		return func(w io.Writer) error { return WriteSweep(w, sweepResult, o) }
	}
	text, wide := Options{Format: FormatText}, Options{Format: FormatText, Wide: true}
	md, csv := Options{Format: FormatMarkdown}, Options{Format: FormatCSV}
	checkGoldens(t, []goldenCase{
		{"analyze_interrupted_wide.golden", results(interruptedResult, wide)},
		{"analyze_interrupted.md.golden", results(interruptedResult, md)},
		{"analyze_interrupted_wide.md.golden", results(interruptedResult, Options{Format: FormatMarkdown, Wide: true})},
		{"analyze_interrupted.csv.golden", results(interruptedResult, csv)},
		{"analyze_failed.csv.golden", results(failedResult, csv)},
		{"json_interrupted.golden", results(withEnv(interruptedResult), Options{Format: FormatJSON})},
		{"analyze_oom.golden", results(oomResult, text)},
		{"analyze_bf16.golden", results(bf16Result, text)},
		{"analyze_fp16.golden", results(fp16Result, text)},
		{"analyze_fp16_wide.golden", results(fp16Result, wide)},
		{"analyze_fp16.md.golden", results(fp16Result, md)},
		{"analyze_fp16.csv.golden", results(fp16Result, csv)},
		{"json_fp16.golden", results(withEnv(fp16Result), Options{Format: FormatJSON})},
		{"plan_linear.golden", plan(text)},
		{"plan_linear_wide.golden", plan(wide)},
		{"plan_linear.md.golden", plan(md)},
		{"plan_linear.csv.golden", plan(csv)},
		{"plan_linear_json.golden", plan(Options{Format: FormatJSON})},
		{"sweep.golden", sweep(text)},
		{"sweep_wide.golden", sweep(wide)},
		{"sweep.md.golden", sweep(md)},
		{"sweep.csv.golden", sweep(csv)},
	})
}

// goldenCase is a golden file and what writes it.
type goldenCase struct {
	golden string
	write  func(w io.Writer) error
}

// checkGoldens compares what each case writes with its golden file, and
// checks that a default text table fits maxWidth columns.
func checkGoldens(t *testing.T, cases []goldenCase) {
	for _, tt := range cases {
		t.Run(tt.golden, func(t *testing.T) {
			got := written(t, tt.write)
			golden(t, tt.golden, got)
			if defaultText(tt.golden) {
				checkFits(t, got)
			}
		})
	}
}

// defaultText reports whether a golden file holds a default text table
// (not wide, Markdown, CSV or JSON).
func defaultText(golden string) bool {
	for _, s := range []string{"wide", ".md", ".csv", "json"} {
		if strings.Contains(golden, s) {
			return false
		}
	}
	return true
}

// checkFits fails the test for every line of text wider than maxWidth
// columns.
func checkFits(t *testing.T, text string) {
	t.Helper()
	for i, line := range strings.Split(text, "\n") {
		if width(line) > maxWidth {
			t.Errorf("line %d is %d columns wide, more than %d:\n%s", i+1, width(line), maxWidth, line)
		}
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
		t.Run(name, func(t *testing.T) { checkFits(t, written(t, write)) })
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
	for _, r := range []bench.Result{interruptedResult, evalResult, failedResult, fullResult, fp16Result} {
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
