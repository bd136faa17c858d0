// Package plot draws gpuz results: a run's epoch times as bars per mode, a
// sweep's as lines against free device memory or the cache window. It reads
// the JSON that gpuz writes (report.WriteJSON, and the sweep document), turns
// it into a Chart (the series: points, error bars, bands, failed points, in
// the chart's units) and renders that with gonum.org/v1/plot as SVG or PNG.
package plot

import (
	"fmt"
	"strings"

	"gpuz/internal/report"
)

// The parts of gpuz's JSON documents that a plot reads; the rest is ignored.
type (
	// Doc is a gpuz JSON document: a single run's (Kind "") or a sweep's.
	Doc struct {
		Version int    `json:"version"`
		Kind    string `json:"kind"`
		Header  Header `json:"header"`
		// Modes are a run's modes.
		Modes []Mode `json:"modes"`
		// Parameters and Rows are a sweep's: the swept parameters, in the
		// order given, and one row per combination of their values.
		Parameters []string `json:"parameters"`
		Rows       []Row    `json:"rows"`
	}
	// Header is a run's header.
	Header struct {
		Model string `json:"model"`
		Task  string `json:"task"`
		Scale string `json:"scale"`
		GPU   string `json:"gpu"`
		// Recompute is the run's recompute lever: none, blocks, or ""
		// in a file from before the lever.
		Recompute string `json:"recompute"`
		// Precision is the run's storage precision: fp32, bf16, fp16, or
		// "" (fp32) in a file from before the lever.
		Precision string `json:"precision"`
		Env       *Env   `json:"env"`
	}
	// Env is the run's environment; only the build is read.
	Env struct {
		Revision string `json:"revision"`
		Modified string `json:"modified"`
	}
	// Mode is one mode of a run.
	Mode struct {
		Mode   string  `json:"mode"`
		Device string  `json:"device"`
		Status string  `json:"status"`
		Reason string  `json:"reason"`
		Epochs []Epoch `json:"epochs"`
	}
	// Epoch is one epoch of a mode.
	Epoch struct {
		Warmup  bool    `json:"warmup"`
		Seconds float64 `json:"seconds"`
	}
	// Row is one point of a sweep: the settings of the swept parameters,
	// the device memory taken before the run and free when it started, and
	// the run's result.
	Row struct {
		Settings        map[string]string `json:"settings"`
		TakeBytes       int64             `json:"take_bytes"`
		DeviceFreeBytes int64             `json:"device_free_bytes"`
		Result          Doc               `json:"result"`
	}
)

// timed returns the seconds of the mode's timed (not warm-up) epochs.
func (m Mode) timed() []float64 {
	var s []float64
	for _, e := range m.Epochs {
		if !e.Warmup {
			s = append(s, e.Seconds)
		}
	}
	return s
}

// ReadFile reads the gpuz JSON file at path (Parse).
func ReadFile(path string) (Doc, error) {
	data, err := report.ReadResults(path)
	if err != nil {
		return Doc{}, err
	}
	return Parse(path, data)
}

// Parse reads data, a gpuz JSON document named name in errors: a run's, as
// --json writes it, or a sweep's. A document of another kind or of a newer
// version than this gpuz writes is an error (report.DecodeJSON), and so is
// an epoch time that report.CheckEpochSeconds refuses (negative, beyond its
// maximum), named by its row, mode and epoch.
func Parse(name string, data []byte) (Doc, error) {
	var doc Doc
	if err := report.DecodeJSON(name, data, &doc, "", report.SweepKind); err != nil {
		return Doc{}, err
	}
	if err := checkEpochs(doc.Modes); err != nil {
		return Doc{}, fmt.Errorf("%s: %w", name, err)
	}
	for i, r := range doc.Rows {
		if err := checkEpochs(r.Result.Modes); err != nil {
			return Doc{}, fmt.Errorf("%s: row %d (%s), %w", name, i, r.label(doc.Parameters), err)
		}
	}
	return doc, nil
}

// checkEpochs checks every epoch time of modes, the warm-up's included;
// the error names the mode and the epoch, counted from 0.
func checkEpochs(modes []Mode) error {
	for _, m := range modes {
		for i, e := range m.Epochs {
			if err := report.CheckEpochSeconds(e.Seconds); err != nil {
				return fmt.Errorf("mode %s, epoch %d: %w", m.Mode, i, err)
			}
		}
	}
	return nil
}

// label names the row by its settings in the order of params:
// "take=8 win_size=3".
func (r Row) label(params []string) string {
	parts := make([]string, len(params))
	for i, p := range params {
		parts[i] = p + "=" + r.Settings[p]
	}
	return strings.Join(parts, " ")
}
