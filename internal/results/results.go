// Package results owns gpuz's results document: the JSON a run (--json)
// or a sweep writes, and that gpuz plot and gpuz compare read back. Its
// types are the document's, field for field, for the writer and the
// readers alike (as golang.org/x/perf's benchfmt shares one Result between
// its reader and its writer): package bench fills a run's Header as it
// starts (bench.Header is Header) and records each mode's Epochs and
// Status as they are here (bench.Epoch is Epoch, bench.Status is
// Status) and makes the rest of the document from its results in one
// place (bench.Result.Document: each Mode's statistics and prediction, the
// Run, a Sweep); package report encodes it; a reader decodes a file into a
// Doc (Decode).
// Durations are in seconds, sizes in bytes, field names snake_case. The
// plan's, fit's and verification's documents, which nothing reads back,
// stay with report, and share Version, Header and Decode with these.
package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"gpuz/internal/termsafe"
)

// Version is the version of the format gpuz writes. It changes when a
// field is renamed, removed or changes meaning, or when a field that
// readers may rely on is added; other added fields leave it be. Version 2
// added header.env, the run's environment (build, machine, GPU, start
// time, command line, seed), present in every document gpuz writes from a
// run or a plan.
const Version = 2

// SweepKind is the "kind" of a sweep's document; a run's document has no
// kind.
const SweepKind = "sweep"

// Doc is a results document as a reader sees it: a run's (Kind "", its
// modes in Run.Modes) or a sweep's (Kind SweepKind, the header in
// Run.Header, its parameters and one row per configuration). gpuz writes a
// run as a Run and a sweep as a Sweep, whose fields these are.
type Doc struct {
	Run
	Kind string `json:"kind"`
	// Parameters and Rows are a sweep's: the swept parameters, in the
	// order given, and one row per combination of their values.
	Parameters []string `json:"parameters"`
	Rows       []Row    `json:"rows"`
}

// The run's document (--json) and its parts.
type (
	// Run is a run's document: the version (Version), the header, every
	// mode and the process's peak RSS.
	Run struct {
		Version      int    `json:"version"`
		Header       Header `json:"header"`
		Modes        []Mode `json:"modes"`
		PeakRSSBytes int64  `json:"peak_rss_bytes"`
	}
	// Header describes a run as a whole (or a plan's run): the workload,
	// its sizes, the host's threads and BLAS, the levers and the
	// environment. bench fills it as the run starts; every document gpuz
	// writes from a run or a plan holds it as it is.
	Header struct {
		Model      string `json:"model"`       // "linear", "resnet", "llm smollm2-135m", …
		Task       string `json:"task"`        // bench.Task: "train", "eval" or "generate"
		Scale      string `json:"scale"`       // "full", "small" or "custom"
		DataBytes  int64  `json:"data_bytes"`  // bytes of input and target data
		Params     int64  `json:"params"`      // number of parameters, trained and frozen
		ParamBytes int64  `json:"param_bytes"` // bytes of the parameters in float32
		Batch      int    `json:"batch"`
		Samples    int    `json:"samples"`
		// SeqLen is the tokens per sequence of a workload of sequences
		// (llm, attention; a generation's is its Prompt); absent for the
		// others.
		SeqLen int    `json:"seq_len,omitempty"`
		BLAS   string `json:"blas"` // host BLAS in use
		// Threads is the host threads in force for the BLAS and the
		// element-wise kernels: the count asked for, or fewer where the
		// BLAS accepts fewer; ThreadsRequested is then the count asked
		// for and ThreadsWarning says why (both absent otherwise).
		Threads          int    `json:"threads"`
		ThreadsRequested int    `json:"threads_requested,omitempty"`
		ThreadsWarning   string `json:"threads_warning,omitempty"`
		// CPUVector is the host CPU's widest vector extension
		// (hostmath.CPUVector); BLASWarning says when OPENBLAS_CORETYPE
		// forces the BLAS to narrower kernels than it.
		CPUVector   string `json:"cpu_vector,omitempty"`
		BLASWarning string `json:"blas_warning,omitempty"`
		// GPU names the device of the GPU modes; empty when they have
		// none.
		GPU string `json:"gpu"`
		// TakeBytes is the memory --take held on the GPU throughout
		// the run (as gpuz take-mem would in a second shell); absent when
		// none.
		TakeBytes int64 `json:"take_bytes,omitempty"`
		// Recompute is the recompute lever every mode ran with: none or
		// blocks.
		Recompute string `json:"recompute"`
		// Precision is the storage precision every mode ran with: fp32,
		// bf16 or fp16.
		Precision string `json:"precision"`
		// GradAccum is the micro-batches of each training step when
		// --grad-accum accumulated the gradients of more than one (a
		// micro-batch is Batch/GradAccum samples); absent otherwise.
		GradAccum int `json:"grad_accum,omitempty"`
		// Weights is the storage of the frozen weights when a quantized
		// kind stored them (--weights): q8_0, q4_0, q4_k or nf4; absent
		// when they are floats of the precision.
		Weights string `json:"weights,omitempty"`
		// Attention is how the model computed attention: eager or fused;
		// absent for a workload without attention layers.
		Attention string `json:"attention,omitempty"`
		// LoRA is the run's LoRA as levers.LoRA.String writes it, its
		// targets resolved: "R=16 α=16 q_proj,v_proj"; LoRARank its
		// rank and TrainedParams the parameters training changes (the
		// adapters); all three absent when LoRA is off (training then
		// changes all Params).
		LoRA          string `json:"lora,omitempty"`
		LoRARank      int    `json:"lora_rank,omitempty"`
		TrainedParams int64  `json:"trained_params,omitempty"`
		// HalfProducts names the path the host's (and the simulated
		// GPU's) 16-bit products take under a 16-bit precision:
		// "AVX512_BF16 kernel", "convert + OpenBLAS 0.3.21 (Haswell
		// kernels)", …; absent under fp32. A CUDA GPU runs them through
		// cuBLAS's GemmEx.
		HalfProducts string `json:"half_products,omitempty"`
		// Prompt, Tokens and Context are the generate task's sizes: the
		// prompt's token ids per sequence, the tokens generated per
		// sequence and the positions each key-value cache holds;
		// KVCacheBytes is every decoder layer's cache together and
		// KVCacheType the type the caches store their keys and values
		// in, fp32, bf16 or fp16 (all four absent for the other tasks).
		Prompt       int    `json:"prompt,omitempty"`
		Tokens       int    `json:"tokens,omitempty"`
		Context      int    `json:"context,omitempty"`
		KVCacheBytes int64  `json:"kv_cache_bytes,omitempty"`
		KVCacheType  string `json:"kv_cache_type,omitempty"`
		// HostMemory is the host memory a plan or a fit planned against,
		// and HostMemorySource where it comes from: "--host-memory" (the
		// target host's, given), or the limit that binds this process
		// ("MemAvailable", a cgroup's, an rlimit); absent in a run's.
		HostMemory       int64  `json:"host_memory,omitempty"`
		HostMemorySource string `json:"host_memory_source,omitempty"`
		// Setup is the run's own setup before any mode's, in order: the
		// model built and the data generated; absent where not measured
		// (a plan's header).
		Setup []Phase `json:"setup,omitempty"`
		// StartToFirstEpoch is the seconds from the process's start to
		// the start of the run's first epoch, warm-up or timed, of the
		// first mode that ran one: the process's start-up and the
		// command's, Setup, and the setup of every mode up to that epoch.
		// Absent (0) when no process start was given or no mode ran an
		// epoch.
		StartToFirstEpoch float64 `json:"start_to_first_epoch_seconds,omitempty"`
		// Env is where and how the run was measured; nil only for a
		// header that was never collected (one built by hand).
		Env *Env `json:"env,omitempty"`
	}
	// Phase is a step of a run's setup, timed as it ran: its name
	// (bench.PhaseName) and its time in seconds.
	Phase struct {
		Name    string  `json:"name"`
		Seconds float64 `json:"seconds"`
	}
	// Mode is one mode of a run: its device, status, placement, peak,
	// epochs, the statistics of its timed epochs, its setup and its
	// prediction. Its status is embedded, so that the document holds
	// "status" and "reason" flat in the mode; Mode's String, promoted
	// from it, is the status as tables show it.
	Mode struct {
		Mode   string `json:"mode"`
		Device string `json:"device"`
		Status
		Warmup int `json:"warmup"`
		// Placement is the placement as a run records it ("lru 3/12",
		// "40/76 pages of 2 MiB"; "" for a resident one), for tables.
		Placement string `json:"placement"`
		// PlacementKeys is the benchmark-format keys that tell the
		// placement apart, in order ([["policy", "lru"], ["window",
		// "3"]]), from the placement itself (engine.Placement.Keys);
		// absent for a placement without keys, and in files written
		// before it was recorded, whose keys a reader takes from
		// Placement (engine.RecordedKeys).
		PlacementKeys   [][2]string `json:"placement_keys,omitempty"`
		PeakDeviceBytes int64       `json:"peak_device_bytes"`
		Epochs          []Epoch     `json:"epochs"`
		// Stats is of the timed epochs, computed from Epochs as the
		// document is made (bench.ModeResult.Document).
		Stats Stats `json:"stats"`
		// Setup is the mode's setup phases before its first epoch, in the
		// order they ran; empty for a mode that got no device.
		Setup []Phase `json:"setup"`
		// SkippedSteps is the steps fp16 training skipped over every
		// epoch, warm-up included, as their scaled gradients overflowed;
		// 0 for other runs.
		SkippedSteps int `json:"skipped_steps"`
		// LossScale is fp16 training's loss scale after the last step;
		// absent for other runs.
		LossScale float64 `json:"loss_scale,omitempty"`
		// Prediction is one epoch's predicted time on the mode's profile;
		// absent for a mode without one.
		Prediction *Prediction `json:"prediction,omitempty"`
		// Generated is each sequence's generated token ids, of the
		// mode's last repetition (the generate task only: greedy, so the
		// same in every repetition and every mode); absent otherwise.
		Generated [][]int `json:"generated,omitempty"`
	}
	// Epoch is one timed pass over the data of a mode, warm-up
	// included, as bench measured it (bench.Epoch is Epoch).
	Epoch struct {
		Index int `json:"index"`
		// Warmup says that the epoch is one of the mode's leading
		// Mode.Warmup, reported apart from the statistics.
		Warmup bool `json:"warmup"`
		// Seconds is the epoch's time (Duration).
		Seconds float64 `json:"seconds"`
		// Value is the epoch's mean over its samples of the loss when
		// training, or of the model's output when evaluating: each
		// batch's value weighted by its samples, so it does not depend
		// on the batch size; null when not finite.
		Value Float `json:"value"`
		// UploadBytes and DownloadBytes are the bytes copied host →
		// device and device → host during the epoch, CopySeconds the
		// time those copies took (Copied); nil (null) for a mode
		// without copies (the cpu mode, which has no device to copy
		// to), set for every epoch of a mode with them.
		UploadBytes   *int64   `json:"upload_bytes"`
		DownloadBytes *int64   `json:"download_bytes"`
		CopySeconds   *float64 `json:"copy_seconds"`
		// RemoteBytes is what the kernels read and wrote in place across
		// the bus (the managed mode with the host advised); absent when 0.
		RemoteBytes int64 `json:"remote_bytes,omitempty"`
		// SkippedSteps is the epoch's steps whose fp16 gradients
		// overflowed under the loss scale, which their blocks skipped
		// (fp16 training only); absent when 0.
		SkippedSteps int `json:"skipped_steps,omitempty"`
		// Generation is a generation's phases, whose sum is Seconds (the
		// generate task only; absent otherwise).
		Generation *Generation `json:"generation,omitempty"`
	}
	// Generation is one repetition of a generation (one epoch of the
	// generate task) in its two phases: the prompt's tokens through the
	// model in one pass (prefill), which ends with the first generated
	// token, then each further token one pass at a time (decode). Tokens
	// count every sequence's.
	Generation struct {
		PrefillTokens  int     `json:"prefill_tokens"`
		PrefillSeconds float64 `json:"prefill_seconds"`
		DecodeTokens   int     `json:"decode_tokens"`
		DecodeSeconds  float64 `json:"decode_seconds"`
	}
	// Stats summarises a mode's timed epochs.
	Stats struct {
		N             int     `json:"n"`
		MeanSeconds   float64 `json:"mean_seconds"`
		StddevSeconds float64 `json:"stddev_seconds"`
		MedianSeconds float64 `json:"median_seconds"`
		MinSeconds    float64 `json:"min_seconds"`
		MaxSeconds    float64 `json:"max_seconds"`
		// MeanCI is the mean's 95% confidence interval (Student's t), as
		// the Analyze table shows it; absent below 2 timed epochs.
		MeanCI *Interval `json:"mean_ci,omitempty"`
	}
	// Interval is a confidence interval in seconds.
	Interval struct {
		Low  float64 `json:"low_seconds"`
		High float64 `json:"high_seconds"`
	}
)

// StatusKind classifies how a mode's run ended.
type StatusKind string

// How a mode's run can end. A diverged mode's reason names the epoch and
// the batch, both counted from 0 as the epoch lines count them.
const (
	StatusOK          StatusKind = "ok"
	StatusUnavailable StatusKind = "unavailable" // the mode cannot run in this build or on this machine
	StatusOOM         StatusKind = "OOM"         // the device ran out of memory
	StatusSkipped     StatusKind = "skipped"     // not started, e.g. its plan does not fit the host
	StatusInterrupted StatusKind = "interrupted" // stopped by the user; the epochs done are kept
	StatusDiverged    StatusKind = "diverged"    // a loss (train) or output (eval) not finite; the epochs before it are kept
	StatusFailed      StatusKind = "failed"      // any other error
)

// Status is how a mode's run ended, with the reason when it is not ok:
// the mode's "status" and "reason" in the document.
type Status struct {
	Kind   StatusKind `json:"status"`
	Reason string     `json:"reason"`
}

// String renders the status as the Analyze table shows it: the kind,
// then ": " and the reason where there is one.
func (s Status) String() string {
	if s.Reason == "" {
		return string(s.Kind)
	}
	return string(s.Kind) + ": " + s.Reason
}

// Env is the environment of a run in the documents (sysinfo.Env):
// what was measured where, with which build, started how and when.
type Env struct {
	GpuzVersion string `json:"gpuz_version"`
	Revision    string `json:"revision"`   // "unknown" when the build has no VCS stamp
	BuildTime   string `json:"build_time"` // the revision's commit time, RFC 3339, or "unknown"
	Modified    string `json:"modified"`   // "true" for a dirty tree, "false", or "unknown"
	GoVersion   string `json:"go_version"`
	OS          string `json:"os"`
	Kernel      string `json:"kernel"`
	CPU         string `json:"cpu"`
	Cores       int    `json:"cores"`
	MemoryBytes int64  `json:"memory_bytes"`
	BLAS        string `json:"blas"`
	Threads     int    `json:"threads"`
	// HugePages is whether large host buffers use transparent huge pages,
	// as "madvise: used" or "never: not available" (sysinfo.Env.HugePages).
	HugePages string `json:"huge_pages"`
	// GPU is the GPU's own description (device.Caps.Description); null when no
	// mode ran on one.
	GPU         map[string]string `json:"gpu"`
	Start       string            `json:"start"` // RFC 3339
	CommandLine string            `json:"command_line"`
	Seed        uint64            `json:"seed"`
}

// Prediction is a mode's prediction of one epoch (bench.Prediction), in
// seconds.
type Prediction struct {
	Profile        string  `json:"profile"`
	ModelSeconds   float64 `json:"model_seconds"`
	BoundSeconds   float64 `json:"bound_seconds"`
	ComputeSeconds float64 `json:"compute_seconds"`
	MemorySeconds  float64 `json:"memory_seconds"`
	LaunchSeconds  float64 `json:"launch_seconds"`
	CopySeconds    float64 `json:"copy_seconds"`
	Limiter        string  `json:"limiter"`
	// Generation is a generation's passes predicted apart (the generate
	// task only): the figures above are the whole generation's.
	Generation *GenerationPrediction `json:"generation,omitempty"`
}

// GenerationPrediction is a generation's passes as predicted: the prompt's
// pass (to the first token), one decode pass (a token of every sequence,
// at a full cache) and the decode tokens a second, the bytes a decode
// pass's kernels read and write on the device and the host and copy
// between them, and what bounds it most ("device memory", "bus", "host
// memory", "compute" or "launches").
type GenerationPrediction struct {
	PrefillSeconds        float64 `json:"prefill_seconds"`
	DecodeSeconds         float64 `json:"decode_seconds"`
	DecodeTokensPerSecond float64 `json:"decode_tokens_per_second"`
	DecodeDeviceBytes     int64   `json:"decode_device_bytes"`
	DecodeHostBytes       int64   `json:"decode_host_bytes"`
	DecodeBusBytes        int64   `json:"decode_bus_bytes"`
	DecodeLimit           string  `json:"decode_limit"`
}

// The sweep's document.
type (
	// Sweep is a sweep's document: the version, "kind": "sweep", the
	// header of its first configuration, the swept parameters in order
	// and one row per configuration.
	Sweep struct {
		Version    int      `json:"version"`
		Kind       string   `json:"kind"` // SweepKind
		Header     Header   `json:"header"`
		Parameters []string `json:"parameters"`
		Rows       []Row    `json:"rows"`
	}
	// Row is one configuration of a sweep: its settings by parameter,
	// the memory taken on the device, the device's free memory, and its
	// result, a run's document.
	Row struct {
		Settings  map[string]string `json:"settings"`
		TakeBytes int64             `json:"take_bytes"`
		// DeviceFreeBytes is null when the run had no GPU device.
		DeviceFreeBytes *int64 `json:"device_free_bytes"`
		Result          Run    `json:"result"`
	}
)

// Decode reads data, a gpuz JSON document named name in errors, into
// doc, a pointer to the struct of the fields the caller reads (the rest
// are ignored). Data that is not a JSON object, a document without a
// version or of a newer version than this gpuz writes, and one whose
// "kind" is not among kinds ("" is a run's, SweepKind a sweep's) are
// errors.
func Decode(name string, data []byte, doc any, kinds ...string) error {
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
	case head.Version > Version:
		return fmt.Errorf("%s: gpuz JSON version %d, this gpuz reads version %d", name, head.Version, Version)
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

// MaxEpochSeconds is the longest epoch time gpuz compare and gpuz plot read
// from a results file: 10⁹ s, about 32 years. No run measures an epoch
// that long, so a larger time (1e308, +Inf) comes from a corrupt or
// hand-made file; refusing it also keeps every time these commands print
// to at most ten integer digits.
const MaxEpochSeconds = 1e9

// CheckEpochSeconds returns why s cannot be an epoch time read from a
// results file: it is NaN, negative, or beyond MaxEpochSeconds (+Inf
// included). A time from 0 to MaxEpochSeconds is nil.
func CheckEpochSeconds(s float64) error {
	switch {
	case math.IsNaN(s):
		return fmt.Errorf("epoch time %g s is not a number", s)
	case s < 0:
		return fmt.Errorf("epoch time %g s is negative", s)
	case s > MaxEpochSeconds:
		return fmt.Errorf("epoch time %g s is beyond %g s (about 32 years), the most gpuz reads", s, MaxEpochSeconds)
	}
	return nil
}

// CheckEpochs checks every epoch time of r's modes, the warm-up's included
// (CheckEpochSeconds); the error names the mode, its control characters
// escaped (it comes from a file), and the epoch, counted from 0 as the
// epoch lines count them.
func (r Run) CheckEpochs() error {
	for _, m := range r.Modes {
		for i, e := range m.Epochs {
			if err := CheckEpochSeconds(e.Seconds); err != nil {
				return fmt.Errorf("mode %s, epoch %d: %w", termsafe.String(m.Mode), i, err)
			}
		}
	}
	return nil
}

// Duration is a time the document holds in seconds, to the nearest
// nanosecond: the time.Duration it was written from, for any time
// shorter than about 100 days.
func Duration(seconds float64) time.Duration {
	return time.Duration(math.Round(seconds * float64(time.Second)))
}

// Duration is the epoch's time (Duration).
func (e Epoch) Duration() time.Duration { return Duration(e.Seconds) }

// Durations returns the epochs' times (Epoch.Duration), in order.
func Durations(epochs []Epoch) []time.Duration {
	ds := make([]time.Duration, len(epochs))
	for i, e := range epochs {
		ds[i] = e.Duration()
	}
	return ds
}

// Seconds returns the epochs' times in seconds, in order.
func Seconds(epochs []Epoch) []float64 {
	s := make([]float64, len(epochs))
	for i, e := range epochs {
		s[i] = e.Seconds
	}
	return s
}

// Copied returns the epoch's bytes copied host → device and device →
// host and the copies' time: zeros for a mode without copies.
func (e Epoch) Copied() (up, down int64, took time.Duration) {
	if e.UploadBytes != nil {
		up = *e.UploadBytes
	}
	if e.DownloadBytes != nil {
		down = *e.DownloadBytes
	}
	if e.CopySeconds != nil {
		took = Duration(*e.CopySeconds)
	}
	return up, down, took
}

// Float is a number that the document writes as null when it is not
// finite (NaN, ±Inf), as a diverged epoch's value; null reads back as
// NaN.
type Float float64

// MarshalJSON writes f as encoding/json writes a float64, or null when f
// is not finite.
func (f Float) MarshalJSON() ([]byte, error) {
	if v := float64(f); !math.IsNaN(v) && !math.IsInf(v, 0) {
		return json.Marshal(v)
	}
	return []byte("null"), nil
}

// UnmarshalJSON reads a number, or null as NaN.
func (f *Float) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		*f = Float(math.NaN())
		return nil
	}
	var v float64
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*f = Float(v)
	return nil
}

// Duration is the phase's time (Duration).
func (p Phase) Duration() time.Duration { return Duration(p.Seconds) }
