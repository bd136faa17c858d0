package bench

import (
	"math"

	"gpuz/internal/results"
	"gpuz/internal/stats"
)

// This file is the one place where what bench measured becomes the
// results document (package results): a run's Result, each of its modes,
// a prediction and a sweep, field for field. Header, Epoch, Phase and
// Status are the document's own types already; what is made here is the
// rest: the timed epochs' statistics, the skipped steps' total, the
// prediction in seconds (its perfmodel kernels, which results may not
// import, left out) and a sweep's rows.

// Document is the run's results document (--json): the version
// (results.Version), the header, every mode (ModeResult.Document) and the
// process's peak RSS.
func (r Result) Document() results.Run {
	doc := results.Run{
		Version:      results.Version,
		Header:       r.Header,
		Modes:        make([]results.Mode, 0, len(r.Modes)),
		PeakRSSBytes: r.PeakRSSBytes,
	}
	for _, m := range r.Modes {
		doc.Modes = append(doc.Modes, m.Document())
	}
	return doc
}

// Document is the mode as the results document holds it: every epoch,
// the statistics of the timed ones (timedStats), the setup phases and the
// epochs as empty lists, not null, for none, and the prediction in
// seconds.
func (r ModeResult) Document() results.Mode {
	return results.Mode{
		Mode:            string(r.Mode),
		Device:          r.Device,
		Status:          r.Status,
		Warmup:          r.Warmup,
		Placement:       r.Placement,
		PlacementKeys:   r.PlacementKeys,
		PeakDeviceBytes: r.PeakDeviceBytes,
		Epochs:          emptyIfNil(r.Epochs),
		Stats:           r.timedStats(),
		Setup:           emptyIfNil(r.Setup),
		SkippedSteps:    r.SkippedSteps(),
		LossScale:       r.LossScale,
		Prediction:      r.Prediction.Document(),
		Generated:       r.Generated,
	}
}

// timedStats is the statistics of the mode's timed epochs as the document
// holds them: stats.Summarize's figures in seconds, and the mean's
// interval (stats.MeanCI) where it is finite, from 2 timed epochs on.
func (r ModeResult) timedStats() results.Stats {
	timed := r.Timed()
	s := stats.Summarize(results.Durations(timed))
	doc := results.Stats{
		N:             s.N,
		MeanSeconds:   s.Mean.Seconds(),
		StddevSeconds: s.Stddev.Seconds(),
		MedianSeconds: s.Median.Seconds(),
		MinSeconds:    s.Min.Seconds(),
		MaxSeconds:    s.Max.Seconds(),
	}
	if ci := stats.MeanCI(results.Seconds(timed)); !math.IsInf(ci.Lo, 0) && !math.IsNaN(ci.Lo) {
		doc.MeanCI = &results.Interval{Low: ci.Lo, High: ci.Hi}
	}
	return doc
}

// emptyIfNil is list, or an empty list where it is nil, so that the
// document writes [] rather than null.
func emptyIfNil[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

// Document is the prediction as the results documents hold it, in
// seconds, without the kernels and copies it was made from; nil for a
// nil p (the field is then left out).
func (p *Prediction) Document() *results.Prediction {
	if p == nil {
		return nil
	}
	doc := &results.Prediction{
		Profile: p.Profile, ModelSeconds: p.Model.Seconds(), BoundSeconds: p.Bound.Seconds(),
		ComputeSeconds: p.Compute.Seconds(), MemorySeconds: p.Memory.Seconds(), LaunchSeconds: p.Launch.Seconds(),
		CopySeconds: p.Copy.Seconds(), Limiter: p.Limiter,
	}
	if g := p.Generation; g != nil {
		doc.Generation = &results.GenerationPrediction{
			PrefillSeconds: g.Prefill.Model.Seconds(), DecodeSeconds: g.Decode.Model.Seconds(),
			DecodeTokensPerSecond: g.DecodeTokensPerSecond(),
			DecodeDeviceBytes:     g.DecodeDeviceBytes, DecodeHostBytes: g.DecodeHostBytes, DecodeBusBytes: g.DecodeBusBytes,
			DecodeLimit: g.DecodeLimit,
		}
	}
	return doc
}

// Document is the sweep's results document: the version, "kind":
// "sweep", the header of its first configuration (SweepResult.Header),
// the swept parameters in order and one row per configuration, with its
// settings by parameter, its take, its device's free memory (null where
// unknown) and its result, a run's document (Result.Document).
func (s SweepResult) Document() results.Sweep {
	doc := results.Sweep{
		Version: results.Version, Kind: results.SweepKind, Header: s.Header(),
		Parameters: append([]string{}, s.Parameters...), Rows: make([]results.Row, 0, len(s.Rows)),
	}
	for _, row := range s.Rows {
		r := results.Row{Settings: map[string]string{}, TakeBytes: row.TakeBytes, Result: row.Result.Document()}
		for _, st := range row.Settings {
			r.Settings[st.Name] = st.Value
		}
		if row.DeviceFreeBytes >= 0 {
			free := row.DeviceFreeBytes
			r.DeviceFreeBytes = &free
		}
		doc.Rows = append(doc.Rows, r)
	}
	return doc
}
