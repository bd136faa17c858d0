package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"gpuz/internal/bench"
	"gpuz/internal/levers"
)

// JSONVersion is the version of the format WriteJSON and WritePlanJSON
// write. It changes when a field is renamed, removed or changes meaning, or
// when a field that readers may rely on is added; other added fields leave
// it be. Version 2 added header.env, the run's environment (build, machine,
// GPU, start time, command line, seed), present in every document gpuz
// writes from a run or a plan.
const JSONVersion = 2

// The JSON export's documents. Durations are in seconds, sizes in bytes.
type (
	jsonResult struct {
		Version      int        `json:"version"`
		Header       jsonHeader `json:"header"`
		Modes        []jsonMode `json:"modes"`
		PeakRSSBytes int64      `json:"peak_rss_bytes"`
	}
	jsonHeader struct {
		Model      string `json:"model"`
		Task       string `json:"task"`
		Scale      string `json:"scale"`
		DataBytes  int64  `json:"data_bytes"`
		Params     int64  `json:"params"`
		ParamBytes int64  `json:"param_bytes"`
		Batch      int    `json:"batch"`
		Samples    int    `json:"samples"`
		BLAS       string `json:"blas"`
		Threads    int    `json:"threads"` // in force
		// ThreadsRequested is the count asked for, when the BLAS
		// accepted fewer; ThreadsWarning says why.
		ThreadsRequested int    `json:"threads_requested,omitempty"`
		ThreadsWarning   string `json:"threads_warning,omitempty"`
		// CPUVector is the host CPU's widest vector extension;
		// BLASWarning says when OPENBLAS_CORETYPE forces narrower BLAS
		// kernels.
		CPUVector   string `json:"cpu_vector,omitempty"`
		BLASWarning string `json:"blas_warning,omitempty"`
		GPU         string `json:"gpu"`
		// TakeBytes is the memory --take held on the GPU throughout
		// the run; absent when none.
		TakeBytes int64 `json:"take_bytes,omitempty"`
		// Recompute is the recompute lever every mode ran with: none or
		// blocks.
		Recompute string `json:"recompute"`
		// Precision is the storage precision every mode ran with: fp32,
		// bf16 or fp16.
		Precision string `json:"precision"`
		// HalfProducts names the host's 16-bit product path under a
		// 16-bit precision (bench.Header.HalfProducts); absent under fp32.
		HalfProducts string `json:"half_products,omitempty"`
		// Setup is the run's own setup phases before any mode's (the
		// model built, the data generated), and StartToFirstEpoch the
		// time from the process's start to the run's first epoch; both
		// absent where not measured (a plan's header).
		Setup             []jsonPhase `json:"setup,omitempty"`
		StartToFirstEpoch float64     `json:"start_to_first_epoch_seconds,omitempty"`
		// Env is where and how the run was measured; absent only from a
		// header that was never collected.
		Env *jsonEnv `json:"env,omitempty"`
	}
	// jsonPhase is a setup phase: its name (bench.PhaseName) and time.
	jsonPhase struct {
		Name    string  `json:"name"`
		Seconds float64 `json:"seconds"`
	}
	jsonMode struct {
		Mode            string      `json:"mode"`
		Device          string      `json:"device"`
		Status          string      `json:"status"`
		Reason          string      `json:"reason"`
		Warmup          int         `json:"warmup"`
		Placement       string      `json:"placement"`
		PeakDeviceBytes int64       `json:"peak_device_bytes"`
		Epochs          []jsonEpoch `json:"epochs"`
		Stats           jsonStats   `json:"stats"` // of the timed epochs
		// Setup is the mode's setup phases before its first epoch, in the
		// order they ran; empty for a mode that got no device.
		Setup []jsonPhase `json:"setup"`
		// SkippedSteps is the steps fp16 training skipped over every
		// epoch, warm-up included, as their scaled gradients overflowed;
		// 0 for other runs.
		SkippedSteps int `json:"skipped_steps"`
		// LossScale is fp16 training's loss scale after the last step;
		// absent for other runs.
		LossScale float64 `json:"loss_scale,omitempty"`
		// Prediction is one epoch's predicted time on the mode's profile;
		// absent for a mode without one.
		Prediction *jsonPrediction `json:"prediction,omitempty"`
	}
	jsonEpoch struct {
		Index   int      `json:"index"`
		Warmup  bool     `json:"warmup"`
		Seconds float64  `json:"seconds"`
		Value   *float64 `json:"value"` // null when not finite
		// Bytes copied host → device and device → host, and the copies'
		// time; null for the cpu mode, which has no device to copy to.
		UploadBytes   *int64   `json:"upload_bytes"`
		DownloadBytes *int64   `json:"download_bytes"`
		CopySeconds   *float64 `json:"copy_seconds"`
		// RemoteBytes is what the kernels read and wrote in place across
		// the bus (the managed mode with the host advised); absent when 0.
		RemoteBytes int64 `json:"remote_bytes,omitempty"`
		// SkippedSteps is the epoch's steps fp16 training skipped;
		// absent when 0.
		SkippedSteps int `json:"skipped_steps,omitempty"`
	}
	jsonStats struct {
		N             int     `json:"n"`
		MeanSeconds   float64 `json:"mean_seconds"`
		StddevSeconds float64 `json:"stddev_seconds"`
		MedianSeconds float64 `json:"median_seconds"`
		MinSeconds    float64 `json:"min_seconds"`
		MaxSeconds    float64 `json:"max_seconds"`
		// MeanCI is the mean's 95% confidence interval (Student's t), as
		// the Analyze table shows it; absent below 2 timed epochs.
		MeanCI *jsonInterval `json:"mean_ci,omitempty"`
	}
	jsonInterval struct {
		Low  float64 `json:"low_seconds"`
		High float64 `json:"high_seconds"`
	}
)

// toJSONHeader converts a run's header for the JSON documents.
func toJSONHeader(h bench.Header) jsonHeader {
	j := jsonHeader{
		Model: h.Model, Task: string(h.Task), Scale: h.Scale,
		DataBytes: h.DataBytes, Params: h.Params, ParamBytes: h.ParamBytes,
		Batch: h.Batch, Samples: h.Samples, BLAS: h.BLAS, Threads: h.Threads, GPU: h.GPU,
		CPUVector: h.CPUVector, BLASWarning: h.BLASWarning,
		TakeBytes: h.TakeBytes, Recompute: levers.Recompute(h.Recompute).String(),
		Precision: precisionOf(h).String(), HalfProducts: h.HalfProducts, Env: toJSONEnv(h.Env),
		StartToFirstEpoch: h.StartToFirstEpoch.Seconds(),
	}
	if len(h.Setup) > 0 {
		j.Setup = toJSONPhases(h.Setup)
	}
	if h.ThreadsWarning != "" {
		j.ThreadsRequested, j.ThreadsWarning = h.ThreadsRequested, h.ThreadsWarning
	}
	return j
}

// toJSONPhases converts setup phases for the JSON documents: a list,
// empty for none.
func toJSONPhases(phases []bench.Phase) []jsonPhase {
	j := make([]jsonPhase, len(phases))
	for i, p := range phases {
		j[i] = jsonPhase{Name: string(p.Name), Seconds: p.Duration.Seconds()}
	}
	return j
}

// WriteJSON writes r as an indented JSON object for programs to read: the
// version of the format (JSONVersion), the header, every mode with all its
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
func toJSONResult(r bench.Result) jsonResult {
	doc := jsonResult{
		Version:      JSONVersion,
		Header:       toJSONHeader(r.Header),
		Modes:        make([]jsonMode, 0, len(r.Modes)),
		PeakRSSBytes: r.PeakRSSBytes,
	}
	for _, m := range r.Modes {
		jm := jsonMode{
			Mode:            string(m.Mode),
			Device:          m.Device,
			Status:          string(m.Status.Kind),
			Reason:          m.Status.Reason,
			Warmup:          m.Warmup,
			Placement:       m.Placement,
			PeakDeviceBytes: m.PeakDeviceBytes,
			Setup:           toJSONPhases(m.Setup),
			Epochs:          make([]jsonEpoch, len(m.Epochs)),
			Prediction:      toJSONPrediction(m.Prediction),
			SkippedSteps:    m.SkippedSteps(),
			LossScale:       m.LossScale,
		}
		for i, e := range m.Epochs {
			jm.Epochs[i] = jsonEpoch{Index: e.Index, Warmup: i < m.Warmup, Seconds: e.Duration.Seconds(), RemoteBytes: e.RemoteBytes, SkippedSteps: e.SkippedSteps}
			if m.Mode.Copies() {
				copySeconds := e.CopyTime.Seconds()
				jm.Epochs[i].UploadBytes, jm.Epochs[i].DownloadBytes, jm.Epochs[i].CopySeconds = &e.UploadBytes, &e.DownloadBytes, &copySeconds
			}
			if !math.IsNaN(e.Value) && !math.IsInf(e.Value, 0) {
				jm.Epochs[i].Value = &e.Value
			}
		}
		s := Summarize(durations(m.Timed()))
		jm.Stats = jsonStats{
			N:             s.N,
			MeanSeconds:   s.Mean.Seconds(),
			StddevSeconds: s.Stddev.Seconds(),
			MedianSeconds: s.Median.Seconds(),
			MinSeconds:    s.Min.Seconds(),
			MaxSeconds:    s.Max.Seconds(),
		}
		if ci := meanCI(seconds(m.Timed())); !math.IsInf(ci.Lo, 0) && !math.IsNaN(ci.Lo) {
			jm.Stats.MeanCI = &jsonInterval{Low: ci.Lo, High: ci.Hi}
		}
		doc.Modes = append(doc.Modes, jm)
	}
	return doc
}

// DecodeJSON reads data, a gpuz JSON document named name in errors, into
// doc, a pointer to the struct of the fields the caller reads (the rest
// are ignored). Data that is not a JSON object, a document without a
// version or of a newer version than this gpuz writes, and one whose
// "kind" is not among kinds ("" is a run's, SweepKind a sweep's) are
// errors.
func DecodeJSON(name string, data []byte, doc any, kinds ...string) error {
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("%s: not a gpuz JSON file (no JSON object)", name)
	}
	var head struct {
		Version int    `json:"version"`
		Kind    string `json:"kind"`
	}
	unmarshal := func(v any) error {
		err := json.Unmarshal(data, v)
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return fmt.Errorf("%s: not a gpuz JSON file: %w at byte %d", name, err, syn.Offset)
		} else if err != nil {
			return fmt.Errorf("%s: not a gpuz JSON file: %w", name, err)
		}
		return nil
	}
	if err := unmarshal(&head); err != nil {
		return err
	}
	switch {
	case head.Version == 0:
		return fmt.Errorf("%s: not a gpuz JSON file: no version", name)
	case head.Version > JSONVersion:
		return fmt.Errorf("%s: gpuz JSON version %d, this gpuz reads version %d", name, head.Version, JSONVersion)
	case !slices.Contains(kinds, head.Kind):
		want := make([]string, len(kinds))
		for i, k := range kinds {
			want[i] = kindName(k)
		}
		return fmt.Errorf("%s: unknown kind %q of gpuz JSON (want %s)", name, head.Kind, strings.Join(want, " or "))
	}
	return unmarshal(doc)
}

// kindName names a document kind in an error: "a run's" for "", else the
// kind quoted.
func kindName(kind string) string {
	if kind == "" {
		return "a run's"
	}
	return fmt.Sprintf("%q", kind)
}
