// Package plot draws gpuz results: a run's epoch times as bars per mode, a
// sweep's as lines against free device memory or the cache window. It reads
// the JSON that gpuz writes (package results' documents), turns
// it into a Chart (the series: points, error bars, bands, failed points, in
// the chart's units) and renders that with gonum.org/v1/plot as SVG or PNG.
package plot

import (
	"fmt"
	"strings"

	"gpuz/internal/report"
	"gpuz/internal/results"
	"gpuz/internal/termsafe"
)

// timedSeconds returns the seconds of the mode's timed (not warm-up) epochs.
func timedSeconds(m results.Mode) []float64 {
	var s []float64
	for _, e := range m.Epochs {
		if !e.Warmup {
			s = append(s, e.Seconds)
		}
	}
	return s
}

// ReadFile reads the gpuz JSON file at path (Parse).
func ReadFile(path string) (results.Doc, error) {
	data, err := report.ReadResults(path)
	if err != nil {
		return results.Doc{}, err
	}
	return Parse(path, data)
}

// Parse reads data, a gpuz JSON document named name in errors: a run's, as
// --json writes it, or a sweep's. A document of another kind or of a newer
// version than this gpuz writes is an error (results.Decode), and so is
// an epoch time that results.Run.CheckEpochs refuses (negative, beyond its
// maximum), named by its row, mode and epoch.
func Parse(name string, data []byte) (results.Doc, error) {
	var doc results.Doc
	if err := results.Decode(name, data, &doc, "", results.SweepKind); err != nil {
		return results.Doc{}, err
	}
	if err := doc.CheckEpochs(); err != nil {
		return results.Doc{}, fmt.Errorf("%s: %w", name, err)
	}
	for i, r := range doc.Rows {
		if err := r.Result.CheckEpochs(); err != nil {
			return results.Doc{}, fmt.Errorf("%s: row %d (%s), %w", name, i, rowLabel(r, doc.Parameters), err)
		}
	}
	return doc, nil
}

// rowLabel names a sweep's row by its settings in the order of params,
// their control characters escaped (they come from the file):
// "take=8 win_size=3".
func rowLabel(r results.Row, params []string) string {
	parts := make([]string, len(params))
	for i, p := range params {
		parts[i] = p + "=" + r.Settings[p]
	}
	return termsafe.String(strings.Join(parts, " "))
}
