package report

import (
	"encoding/json"
	"io"
	"math"

	"gpuz/internal/bench"
	"gpuz/internal/results"
)

// setupList is a mode's setup phases as the document lists them: empty,
// not null, for none.
func setupList(phases []results.Phase) []results.Phase {
	if phases == nil {
		return []results.Phase{}
	}
	return phases
}

// epochList is a mode's epochs as the document lists them: empty, not
// null, for none.
func epochList(epochs []results.Epoch) []results.Epoch {
	if epochs == nil {
		return []results.Epoch{}
	}
	return epochs
}

// WriteJSON writes r as an indented JSON object for programs to read: the
// version of the format (results.Version), the header, every mode with all its
// epochs and the Stats of its timed epochs, and the peak RSS. Field names are
// snake_case; durations are float seconds, sizes are bytes. An epoch's value
// that is not a finite number, such as a diverged loss, is written as null,
// and so are the cpu mode's copies, which do not apply to it.
func WriteJSON(w io.Writer, r bench.Result) error {
	return encodeJSON(w, toJSONResult(r))
}

// encodeJSON writes doc indented, without escaping HTML characters.
func encodeJSON(w io.Writer, doc any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(doc)
}

// toJSONResult converts a run's results for the JSON documents.
func toJSONResult(r bench.Result) results.Run {
	doc := results.Run{
		Version:      results.Version,
		Header:       r.Header,
		Modes:        make([]results.Mode, 0, len(r.Modes)),
		PeakRSSBytes: r.PeakRSSBytes,
	}
	for _, m := range r.Modes {
		jm := results.Mode{
			Mode:            string(m.Mode),
			Device:          m.Device,
			Status:          m.Status,
			Warmup:          m.Warmup,
			Placement:       m.Placement,
			PlacementKeys:   m.PlacementKeys,
			PeakDeviceBytes: m.PeakDeviceBytes,
			Setup:           setupList(m.Setup),
			Epochs:          epochList(m.Epochs),
			Prediction:      toJSONPrediction(m.Prediction),
			SkippedSteps:    m.SkippedSteps(),
			LossScale:       m.LossScale,
			Generated:       m.Generated,
		}
		s := Summarize(durations(m.Timed()))
		jm.Stats = results.Stats{
			N:             s.N,
			MeanSeconds:   s.Mean.Seconds(),
			StddevSeconds: s.Stddev.Seconds(),
			MedianSeconds: s.Median.Seconds(),
			MinSeconds:    s.Min.Seconds(),
			MaxSeconds:    s.Max.Seconds(),
		}
		if ci := meanCI(seconds(m.Timed())); !math.IsInf(ci.Lo, 0) && !math.IsNaN(ci.Lo) {
			jm.Stats.MeanCI = &results.Interval{Low: ci.Lo, High: ci.Hi}
		}
		doc.Modes = append(doc.Modes, jm)
	}
	return doc
}
