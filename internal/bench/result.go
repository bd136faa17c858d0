package bench

import (
	"time"

	"gpuz/internal/sysinfo"
)

// Mode names a placement of the model: every block on the GPU ("cuda"),
// blocks paged through a window on the GPU ("cache"), the host ("cpu"), or
// each block on the GPU, on the host or paged through the GPU as
// Options.Place says ("hybrid").
type Mode string

// The modes gpuz measures.
const (
	ModeCUDA  Mode = "cuda"
	ModeCache Mode = "cache"
	ModeCPU   Mode = "cpu"
	// ModeHybrid keeps each block resident on the GPU or on the host, where
	// it is computed (DictCache's dvs_nets), or pages it through the GPU
	// under Options.Cache's policy, as Options.Place says.
	ModeHybrid Mode = "hybrid"
	// ModeManaged keeps every block resident in managed (unified) memory
	// and runs as cuda does; when the device's free memory cannot hold it
	// all, pages migrate between host and device as kernels touch them
	// (the driver's paging, which the reference's Windows driver did by
	// itself), instead of the run failing.
	ModeManaged Mode = "managed"
)

// Copies reports whether copies between host and device apply to the
// mode: not to cpu, whose device is the host itself, so its epochs record
// no copies and tables show those figures as not applying.
func (m Mode) Copies() bool { return m != ModeCPU }

// Task says whether a run trains the model or only evaluates it.
type Task string

// The tasks of a run.
const (
	TaskTrain Task = "train"
	TaskEval  Task = "eval"
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

// Status is how a mode's run ended, with the reason when it is not ok.
type Status struct {
	Kind   StatusKind
	Reason string
}

// String renders the status as the Analyze table shows it.
func (s Status) String() string {
	if s.Reason == "" {
		return string(s.Kind)
	}
	return string(s.Kind) + ": " + s.Reason
}

// Epoch is one timed pass over the data.
type Epoch struct {
	Index    int
	Duration time.Duration
	// Value is the epoch's mean over its samples of the loss when
	// training, or of the model's output when evaluating: each batch's
	// value weighted by its samples, so it does not depend on the batch
	// size.
	Value float64
	// UploadBytes and DownloadBytes are the bytes copied host → device and
	// device → host during the epoch, CopyTime the time those copies took;
	// all zero for a mode without copies (Mode.Copies).
	UploadBytes, DownloadBytes int64
	CopyTime                   time.Duration
	// RemoteBytes is what the managed mode's kernels read and wrote in
	// place across the bus (--managed-advise host); zero otherwise.
	RemoteBytes int64
}

// ModeResult is what one mode measured.
type ModeResult struct {
	Mode   Mode
	Device string // the device's name as tables show it: "host", "sim:8GiB", "cuda:0 (…)"
	// Placement describes a paged mode's policy and window, e.g. "window
	// 3/12" for 3 of 12 blocks resident; empty when every block is resident.
	Placement string
	// Epochs holds every epoch run, warm-up epochs first.
	Epochs []Epoch
	// Warmup is how many leading epochs are reported apart from the statistics.
	Warmup int
	// PeakDeviceBytes is the most memory the mode held on its device at once.
	PeakDeviceBytes int64
	// Prediction is what the mode's profile could do with one of its
	// epochs in steady state (perfmodel's bound and model time); nil when
	// the mode has no profile: the cpu mode without Options.HostProfile,
	// a GPU mode on a device that is not device.Profiled.
	Prediction *Prediction
	Status     Status
}

// Timed returns the epochs after the warm-up.
func (r ModeResult) Timed() []Epoch {
	if len(r.Epochs) <= r.Warmup {
		return nil
	}
	return r.Epochs[r.Warmup:]
}

// Header describes the run as a whole.
type Header struct {
	Model      string // "linear", "resnet", "attention"
	Task       Task
	Scale      string // "full", "small" or "custom"
	DataBytes  int64  // bytes of input and target data
	Params     int64  // number of trainable parameters
	ParamBytes int64  // bytes of trainable parameters
	Batch      int
	Samples    int
	BLAS       string // host BLAS in use
	// Threads is the host threads in force for the BLAS and the
	// element-wise kernels: ThreadsRequested, or fewer where the BLAS
	// accepts fewer, which ThreadsWarning then says.
	Threads          int
	ThreadsRequested int
	ThreadsWarning   string
	// CPUVector is the widest vector extension of the host CPU
	// (hostmath.CPUVector); BLASWarning says when OPENBLAS_CORETYPE
	// forces the BLAS to narrower kernels than it ("" otherwise).
	CPUVector   string
	BLASWarning string
	// GPU names the device of the cuda and cache modes; empty when they
	// have none.
	GPU string
	// TakeBytes is the memory held on GPU's device throughout the run
	// (--take, as gpuz take-mem would in a second shell); 0 when none.
	TakeBytes int64
	// Recompute is the run's recompute lever (--recompute), which every
	// mode applies: "none" or "blocks".
	Recompute string
	// Env is the environment of the run: the build, the machine, the GPU's
	// description (filled when a mode opens the GPU), the start time, the
	// command line and the seed.
	Env sysinfo.Env
}

// Result is a whole run: the header and one result per requested mode, in
// the order requested.
type Result struct {
	Header Header
	Modes  []ModeResult
	// PeakRSSBytes is the process's peak resident set size at the end of the run.
	PeakRSSBytes int64
}
