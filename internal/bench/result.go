package bench

import (
	"time"

	"gpuz/internal/results"
)

// Task says whether a run trains the model, only evaluates it, or
// generates tokens with it.
type Task string

// The tasks of a run.
const (
	TaskTrain Task = "train"
	TaskEval  Task = "eval"
	// TaskGenerate is the llm workload's generation: a prompt through the
	// model in one pass, then tokens one at a time with a key-value cache
	// per decoder layer (GenerateOptions).
	TaskGenerate Task = "generate"
)

// StatusKind classifies how a mode's run ended (results.StatusKind).
type StatusKind = results.StatusKind

// How a mode's run can end (results.StatusOK and the rest).
const (
	StatusOK          = results.StatusOK
	StatusUnavailable = results.StatusUnavailable
	StatusOOM         = results.StatusOOM
	StatusSkipped     = results.StatusSkipped
	StatusInterrupted = results.StatusInterrupted
	StatusDiverged    = results.StatusDiverged
	StatusFailed      = results.StatusFailed
)

// Status is how a mode's run ended, with the reason when it is not ok, as
// the results document holds it (results.Status).
type Status = results.Status

// Epoch is one timed pass over the data, as the results document holds
// it (results.Epoch): its time in seconds, its value (results.Float),
// whether it is a warm-up, and its copies for a mode with them.
type Epoch = results.Epoch

// ModeResult is what one mode measured.
type ModeResult struct {
	Mode   Mode
	Device string // the device's name as tables show it: "host", "sim:8GiB", "cuda:0 (…)"
	// Simulated says that the device was a simulated GPU
	// (device.Caps.Simulated): host memory, its times the host's.
	Simulated bool
	// Placement describes a paged mode's policy and window, e.g. "window
	// 3/12" for 3 of 12 blocks resident; empty when every block is resident.
	Placement string
	// PlacementKeys is the benchmark-format keys of the placement, from
	// the placement (engine.Placement.Keys): policy and window for a
	// paged mode; none for a resident one.
	PlacementKeys [][2]string
	// Epochs holds every epoch run, warm-up epochs first.
	Epochs []Epoch
	// Warmup is how many leading epochs are reported apart from the statistics.
	Warmup int
	// PeakDeviceBytes is the most memory the mode held on its device at once.
	PeakDeviceBytes int64
	// Prediction is what the mode's profile could do with one of its
	// epochs in steady state (perfmodel's bound and model time); nil when
	// the mode has no profile: the cpu mode without Options.HostProfile,
	// a GPU mode on a device without a profile (device.Caps.Profile) that
	// is not a real GPU.
	Prediction *Prediction
	// Setup is the mode's setup before its first epoch, phase by phase in
	// the order they ran; a mode that stopped during its setup (OOM, a
	// failure) has the phases it completed, one that got no device none.
	Setup []Phase
	// LossScale is fp16 training's loss scale after the last step (from
	// 2^16, halved at each skipped step, doubled after 2000 good ones); 0
	// for other runs.
	LossScale float64
	// Generated is each sequence's generated token ids, of the last
	// generation run (the generate task only).
	Generated [][]int
	Status    Status
}

// SkippedSteps returns the steps skipped over every epoch, warm-up
// included.
func (r ModeResult) SkippedSteps() int {
	n := 0
	for _, e := range r.Epochs {
		n += e.SkippedSteps
	}
	return n
}

// Phase is a step of a run's setup before its first epoch, timed as it
// ran, as the results document holds it (results.Phase): its name is a
// PhaseName.
type Phase = results.Phase

// phase is the setup phase named name, which took d.
func phase(name PhaseName, d time.Duration) Phase {
	return Phase{Name: string(name), Seconds: d.Seconds()}
}

// PhaseName names a step of a run's setup.
type PhaseName string

// The setup phases, in the order a mode runs those it has
// (ModeResult.Setup); the run's own setup, before any mode's
// (Header.Setup), is PhaseBuild and PhaseData.
const (
	// PhaseCompile is a device's kernels compiled as it opened: a CUDA
	// GPU's, by NVRTC, before its context is made
	// (device.Caps.Compile). A device that compiles nothing has no
	// such phase.
	PhaseCompile PhaseName = "compile"
	// PhaseKernelCache is a device's kernels read from the cache of an
	// earlier compile instead of compiled (a CUDA GPU's; gpu.CachedPTX).
	PhaseKernelCache PhaseName = "kernel cache"
	// PhaseOpen is the mode's device opened, less its kernels' compile:
	// the host for cpu, the simulated GPU and its ledger entry for sim, a
	// CUDA GPU's context, streams, staging buffers, workspace and cuBLAS.
	PhaseOpen PhaseName = "open"
	// PhaseBuild is the workload's model built (its graph) and compiled
	// into the engine's schedule for the task: once, in the run's own
	// setup (Header.Setup), every mode loading that schedule into a
	// program of its own.
	PhaseBuild PhaseName = "build"
	// PhaseMeasure is a real GPU's throughput measured for the
	// predictions (perfmodel.Measured), the first time a run opens it.
	PhaseMeasure PhaseName = "measure"
	// PhaseReserve is the mode's device footprint reserved in one step
	// on a device that reserves ahead (the simulated GPU's ledger).
	PhaseReserve PhaseName = "reserve"
	// PhaseLoad is the program's buffers allocated on its device and on
	// the host, and touched where the device does it as it allocates
	// (engine.Schedule.Load).
	PhaseLoad PhaseName = "load"
	// PhaseInit is the model's initial parameters drawn from the seed.
	// It alternates with PhaseUpload parameter by parameter; the two add
	// up to the initialisation's time.
	PhaseInit PhaseName = "init"
	// PhaseUpload is the initial parameters and the model's constants
	// copied into the program's buffers, on the device or the host. The
	// data is copied batch by batch inside the epochs.
	PhaseUpload PhaseName = "upload"
	// PhasePredict is the mode's epoch predicted on its profile (a mode
	// with a prediction only).
	PhasePredict PhaseName = "predict"
	// PhaseData is the run's data generated from the seed, once for all
	// its modes (Header.Setup only).
	PhaseData PhaseName = "data"
)

// SetupTime returns the sum of the phases' durations.
func SetupTime(phases []Phase) time.Duration {
	var d time.Duration
	for _, p := range phases {
		d += p.Duration()
	}
	return d
}

// Timed returns the epochs after the warm-up.
func (r ModeResult) Timed() []Epoch {
	if len(r.Epochs) <= r.Warmup {
		return nil
	}
	return r.Epochs[r.Warmup:]
}

// Header describes the run as a whole, as the results document holds it
// (results.Header): Options.header fills it as the run starts.
type Header = results.Header

// Result is a whole run: the header and one result per requested mode, in
// the order requested.
type Result struct {
	Header Header
	Modes  []ModeResult
	// PeakRSSBytes is the process's peak resident set size at the end of the run.
	PeakRSSBytes int64
}
