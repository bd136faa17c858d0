// Package bench runs the benchmark matrix: one workload, trained or
// evaluated, in each requested mode, epoch by epoch, with timing, memory
// accounting and the handling of modes that cannot run. It returns results
// and reports progress through a callback; it prints nothing.
package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"gorgonia.org/gorgonia"

	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/hfconfig"
	"gpuz/internal/hostmath"
	"gpuz/internal/hugemem"
	"gpuz/internal/levers"
	"gpuz/internal/models"
	"gpuz/internal/perfmodel"
	"gpuz/internal/results"
	"gpuz/internal/sysinfo"
	"gpuz/internal/units"
)

// Options configures a run.
type Options struct {
	ModelName string
	Scale     string
	// Workload is the workload's config, its levers as its own; the run
	// applies Config's levers to it (models.Apply).
	Workload models.Config
	Task     Task
	// Generate sizes the generate task (TaskGenerate); zero for the
	// others.
	Generate GenerateOptions
	Modes    []Mode
	Samples  int
	Batch    int
	Epochs   int // total epochs, warm-up included
	Warmup   int // leading epochs reported apart
	// Adam is the settings of each block's optimizer: its learning rate,
	// betas and epsilon (DefaultAdam is the reference experiment's).
	Adam hostmath.Adam
	// ClipNorm is the largest Euclidean norm of the gradient over all the
	// parameters; a larger gradient is scaled down to it before Adam's
	// update.
	ClipNorm float64
	Seed     uint64
	// Threads is how many host threads the BLAS and the element-wise
	// kernels use; Run and PlanMemory apply it, and the header reports it.
	Threads int
	// NewGPU returns a fresh device for the cuda and cache modes (a CUDA
	// GPU or a simulated one); nil leaves those modes unavailable. GPUName
	// is the name of the devices it makes.
	NewGPU  func() (device.Device, error)
	GPUName string
	// TakeBytes is the memory the caller holds on a device of NewGPU
	// around the run (Sweep's take), for the header to report.
	TakeBytes int64
	// HostMemory, when set, is the memory of the host a plan or a fit is
	// for (--host-memory): it plans against it instead of what this
	// process can allocate, and a simulated GPU's bytes, which the
	// target's card holds, are not counted in it. Runs ignore it.
	HostMemory int64
	// HostLimit, when its Bytes are set, is the host memory a plan
	// counts as available in place of reading it (device.ReadHostLimit)
	// when the planner opens: a search over many plans (fit's longest
	// sequence) reads it once and plans every step against the same
	// bytes. HostMemory, when set, comes first. Runs ignore it.
	HostLimit device.HostLimit
	// Config is the run configuration: cache mode's paging, the hybrid
	// mode's placement.
	Config
	// LoadWeights, when set, is the GGUF file (--model FILE.gguf
	// --load-weights) whose tensors every mode's parameters take after
	// they are drawn (loadWeights); nil keeps the drawn values.
	LoadWeights *hfconfig.GGUF
	// HostProfile, when set, is the profile the cpu mode's epochs are
	// predicted on (perfmodel.LookupHost, perfmodel.HostProfile). The
	// cuda and cache modes are predicted on their device's own profile,
	// when it has one (device.Caps.Profile), or on a real GPU on one measured
	// on it during the run (perfmodel.Measured).
	HostProfile *perfmodel.Profile
	// measured holds the profiles measured on real GPUs during a run
	// (Run makes it; the plan, which allocates nothing, has none).
	measured *measuredProfiles
	// CommandLine is the command line that started the run, shell-quoted,
	// recorded in the header's Env.
	CommandLine string
	// ProcessStart is when the process that runs the benchmark started
	// (sysinfo.ProcessStart, or the command's own start where the system
	// does not say), which the header's StartToFirstEpoch counts from;
	// zero leaves that figure out.
	ProcessStart time.Time
	// Progress, when set, is called as the run advances.
	Progress func(Event)
	// batchHook, when set, sees each batch's value before the divergence
	// check and returns the value to use; nil in a normal run. Tests set
	// it to make one mode diverge at a chosen batch while the others run
	// as usual.
	batchHook func(mode Mode, epoch, batch int, v float32) float32
	// setThreads, when set, applies a thread count process-wide and
	// returns the count in force, in place of hostmath.SetThreads; nil in
	// a normal run. Tests set it to play a BLAS that accepts fewer
	// threads.
	setThreads func(n int) int
}

// DefaultLR is the reference experiment's Adam learning rate.
const DefaultLR = hostmath.DefaultLR

// DefaultAdam returns the reference experiment's Adam, lr DefaultLR, β
// 0.9/0.999, ε 1e-8, for Options.Adam.
func DefaultAdam() hostmath.Adam { return hostmath.DefaultAdam() }

// Event is a step of a run's progress: a sweep's configuration starting
// (Sweep set), a setup phase starting (Phase set), the run starting
// (Header set), a mode starting (Epoch, Batch, End and Sweep nil, Phase
// empty), a batch done (Batch set), an epoch done (Epoch set) or a mode
// ended (End set).
type Event struct {
	Header *Header
	// Phase is the setup phase that starts, so that a reader can say what
	// a long setup is doing: the run's own (PhaseBuild, PhaseData, Mode
	// empty) before its header, and each mode's after its start (those of
	// PhaseMeasure, PhaseReserve, PhaseLoad, PhaseInit, which
	// the uploads of the initial values interleave with, and
	// PhasePredict that it has), in the order of ModeResult.Setup.
	Phase PhaseName
	Mode  Mode
	// Device is the mode's device; empty for a mode that got none, such
	// as one unavailable in this build.
	Device string
	Epoch  *Epoch
	Warmup bool
	Batch  *BatchDone
	// End is how the mode ended, sent once per requested mode as soon as
	// it ends, skipped and unavailable modes included, so that a reader
	// learns why a mode stopped before the run's table.
	End *Status
	// Config is the index, counted from 0, of the sweep's configuration
	// the event belongs to; 0 in a run that is not a sweep.
	Config int
	// Sweep is set when a configuration of a sweep starts, before its
	// run's events.
	Sweep *SweepStep
}

// BatchDone locates a batch just done within a mode's run: its epoch and
// its index in the epoch, both counted from 0, of Batches per epoch and
// Epochs in all (warm-up included).
type BatchDone struct {
	Epoch, Batch    int
	Batches, Epochs int
}

// Run measures every requested mode in turn and returns what each did. A
// mode that cannot run, fails or diverges (a loss or output that is not a
// finite number) gets a status and the other modes still run. When ctx is
// cancelled the run stops where it is, between two of a setup phase's
// allocations or parameters, or two steps of a batch: the epochs
// completed are kept, the mode is marked interrupted (saying where), its
// device closed, and the modes not started are skipped.
func Run(ctx context.Context, opts Options) (Result, error) {
	threads := opts.applyThreads()
	if opts.measured == nil {
		opts.measured = newMeasuredProfiles(measureGemmN)
	}
	opts.startPhase("", "", PhaseBuild)
	built := time.Now()
	w, err := opts.workload()
	if err != nil {
		return Result{}, err
	}
	model, err := w.Build()
	if err != nil {
		return Result{}, err
	}
	shared := opts.compiled(model)
	setup := []Phase{phase(PhaseBuild, time.Since(built))}
	if res, short := opts.dataShortfall(model, threads); short {
		return res, nil
	}
	opts.startPhase("", "", PhaseData)
	generated := time.Now()
	data := opts.Workload.Data(opts.Seed)
	setup = append(setup, phase(PhaseData, time.Since(generated)))
	res := Result{Header: opts.header(model, data, threads)}
	res.Header.Setup = setup
	if opts.Progress != nil {
		opts.Progress(Event{Header: &res.Header})
	}
	for _, mode := range opts.Modes {
		var r ModeResult
		if ctx.Err() != nil {
			r = ModeResult{Mode: mode, Warmup: opts.Warmup, Status: Status{Kind: StatusSkipped, Reason: "run interrupted"}}
		} else {
			r = runMode(ctx, opts, mode, shared, data, &res.Header)
		}
		res.Modes = append(res.Modes, r)
		if opts.Progress != nil {
			end := r.Status
			opts.Progress(Event{Mode: mode, Device: r.Device, End: &end})
		}
	}
	res.PeakRSSBytes = peakRSS()
	return res, nil
}

// workload is the workload to build: opts.Workload with the model's
// levers of opts.Config set (models.Apply), the one road by which a lever
// reaches a model; under --grad-accum K, built for a micro-batch, which
// only training takes.
func (opts Options) workload() (models.Config, error) {
	if opts.GradAccum.On() && opts.Task != TaskTrain {
		return nil, fmt.Errorf("--grad-accum %d: only training accumulates gradients, not %s", opts.GradAccum, opts.Task)
	}
	return models.Apply(opts.Workload, opts.Set)
}

// inForce returns the model's levers that the workload runs with under
// opts (models.InForce). Where the workload refuses opts' levers it has
// none in force: the run or the plan that builds it reports the refusal.
func (opts Options) inForce() levers.Set {
	w, err := opts.workload()
	if err != nil {
		return levers.Set{}
	}
	return models.InForce(w)
}

// header describes the run of a built model on its data, with the threads
// in force.
func (opts Options) header(model *models.Model, data models.Data, threads threadCount) Header {
	h := Header{
		Model:     opts.ModelName,
		Task:      string(opts.Task),
		Scale:     opts.Scale,
		Batch:     opts.Batch,
		Samples:   opts.Samples,
		SeqLen:    models.SeqLenOf(opts.Workload),
		BLAS:      hostmath.BLASName(),
		Threads:   threads.n,
		GPU:       opts.GPUName,
		TakeBytes: opts.TakeBytes,
		Recompute: opts.Recompute.String(), Precision: opts.Precision.String(),
	}
	if opts.GradAccum.On() {
		h.GradAccum = int(opts.GradAccum)
	}
	in := opts.inForce()
	if opts.Task != TaskGenerate { // a generation attends through its caches either way
		h.Attention = string(in.Attention)
	}
	if in.LoRA.On() {
		h.LoRA, h.LoRARank = in.LoRA.String(), in.LoRA.Rank
	}
	if opts.Weights.Quantized() {
		h.Weights = opts.Weights.String()
	}
	if threads.warning != "" {
		h.ThreadsRequested, h.ThreadsWarning = opts.Threads, threads.warning
	}
	h.CPUVector, h.BLASWarning = hostmath.CPUVector(), hostmath.BLASWarning()
	env := sysinfo.Collect()
	env.BLAS, env.Threads, env.CommandLine, env.Seed = h.BLAS, h.Threads, opts.CommandLine, opts.Seed
	env.HugePages = hugemem.Status()
	h.Env = EnvDoc(env)
	switch opts.Precision {
	case levers.BF16:
		h.HalfProducts = hostmath.BF16Path()
	case levers.FP16:
		h.HalfProducts = hostmath.FP16Path()
	}
	h.Params = model.ParamCount()
	h.ParamBytes = 4 * h.Params
	if h.LoRA != "" {
		h.TrainedParams = model.TrainedCount()
	}
	h.DataBytes = 4 * int64(len(data.Values)+len(data.Targets))
	if opts.Task == TaskGenerate {
		g := opts.Generate
		h.Context, h.KVCacheBytes = opts.generationSizes()
		h.Prompt, h.Tokens, h.KVCacheType = g.Prompt, g.Tokens, string(opts.kvDType())
	}
	return h
}

// runMode measures one mode on a device of its own, which it closes before
// it returns so that the next mode finds the memory free, timing its setup
// phase by phase (ModeResult.Setup). What the device can do comes from its
// Caps, read once: the first GPU device that describes itself
// (device.Caps.Description) fills h.Env.GPU (where h has an environment), and the first epoch of the
// run h.StartToFirstEpoch. Its steps, each stopping the run with a status
// where it fails: build (the run's model, compiled once: shared), size,
// reserve, load, initialise, predict, then the epochs.
func runMode(ctx context.Context, opts Options, mode Mode, shared runModel, data models.Data, h *Header) (r ModeResult) {
	r = ModeResult{Mode: mode, Warmup: opts.Warmup}
	opening := time.Now()
	dev, placement, status := opts.deviceFor(mode)
	if dev == nil {
		r.Status = status
		return r
	}
	m := &modeRun{opts: opts, mode: mode, r: &r, dev: dev, caps: dev.Caps(), placement: placement}
	r.Setup = openPhases(m.caps, time.Since(opening))
	defer func() {
		if err := dev.Close(); err != nil && r.Status.Kind == StatusOK {
			r.Status = Status{Kind: StatusFailed, Reason: err.Error()}
		}
	}()
	m.describeDevice(h.Env)
	defer releaseHostMemory()

	if !m.build(shared) || m.stopped(ctx, PhaseBuild) {
		return r
	}
	fp, ok := m.size()
	if !ok {
		return r
	}
	release, ok := m.reserve(fp)
	if !ok || m.stopped(ctx, PhaseReserve) {
		return r
	}
	defer release()
	if !m.load(ctx, fp) {
		return r
	}
	defer m.prog.Close()
	if !m.initialise(ctx) || m.stopped(ctx, PhaseInit) || !m.predict() || m.stopped(ctx, PhasePredict) {
		return r
	}
	if m.gen != nil {
		prompt := m.opts.prompts(data)
		m.epochs(h, func(e int) (Epoch, bool) { return m.generation(ctx, prompt, e) })
	} else {
		m.epochs(h, func(e int) (Epoch, bool) { return m.epoch(ctx, data, e) })
	}
	return r
}

// modeRun is one mode's run as runMode's steps share it: the device and
// its caps, the placement, and, as the steps make them, the model, its
// schedule and its loaded program. Each step records in r, and reports
// false where the run stops (r.Status says why).
type modeRun struct {
	opts      Options
	mode      Mode
	r         *ModeResult
	dev       device.Device
	caps      device.Caps
	placement engine.Placement
	model     *models.Model
	// gen is the generate task's graph, whose Model is model; nil for
	// the other tasks.
	gen   *models.Generation
	sched *engine.Schedule
	prog  *engine.Program
}

// describeDevice records the device, fills env's GPU from the first GPU
// device that describes itself, and reports that the mode starts on it.
func (m *modeRun) describeDevice(env *results.Env) {
	m.r.Device, m.r.Simulated = m.dev.Name(), m.caps.Simulated
	if env != nil && m.caps.Description != nil && !m.mode.OnHost() && env.GPU == nil {
		env.GPU = m.caps.Description
	}
	if m.opts.Progress != nil {
		m.opts.Progress(Event{Mode: m.mode, Device: m.r.Device})
	}
}

// fail stops the run with status.
func (m *modeRun) fail(status Status) bool {
	m.r.Status = status
	return false
}

// stopped reports whether ctx is done, stopping the run, interrupted in
// its setup at phase (the phase done last, or the one it stopped), where
// it is: a signal in the setup of a large model (tens of seconds of
// loading) stops it there, as one in its epochs stops it after a batch.
func (m *modeRun) stopped(ctx context.Context, phase PhaseName) bool {
	if ctx.Err() == nil {
		return false
	}
	m.interrupted(fmt.Sprintf("in its setup (%s), before its first %s", phase, m.unit()))
	return true
}

// interrupted stops the run as interrupted, saying where.
func (m *modeRun) interrupted(where string) bool {
	m.r.PeakDeviceBytes = m.dev.Stats().PeakBytes
	return m.fail(Status{Kind: StatusInterrupted, Reason: where})
}

// unit is what the run repeats: an epoch, or a generation.
func (m *modeRun) unit() string {
	if m.opts.Task == TaskGenerate {
		return "generation"
	}
	return "epoch"
}

// build takes the run's model and schedule, compiled once for every
// mode (a mode's program is its own; the schedule and the graph are only
// read), or fails as their compile did, and measures a real GPU for its
// predictions before anything is loaded, so that the measurement neither
// finds the memory taken nor counts in the mode's peak.
func (m *modeRun) build(shared runModel) bool {
	if shared.err != nil {
		return m.fail(Status{Kind: StatusFailed, Reason: shared.err.Error()})
	}
	m.model, m.gen, m.sched = shared.model, shared.gen, shared.sched
	if m.caps.ComputeCapability != "" && m.opts.measured != nil {
		m.opts.startPhase(m.mode, m.r.Device, PhaseMeasure)
		measuring := time.Now()
		m.opts.measured.of(m.dev)
		m.dev.ResetPeak()
		m.r.phase(PhaseMeasure, measuring)
	}
	return true
}

// size computes the placement's footprint in the device's free memory
// and records the placement; it stops a run the host cannot hold, or
// the address-space limit (the plan's host need, AddressSpaceNeed's
// rule).
func (m *modeRun) size() (engine.Footprint, bool) {
	free, _, err := m.dev.MemInfo()
	if err != nil {
		return engine.Footprint{}, m.fail(errorStatus(err))
	}
	fp := m.sched.Footprint(m.placement, free)
	m.r.Placement = m.placement.Describe(fp, m.sched.Blocks(), engine.Recorded)
	m.r.PlacementKeys = m.placement.Keys(fp)
	if reason := hostShortfall(m.caps, fp); reason != "" {
		return fp, m.fail(Status{Kind: StatusSkipped, Reason: reason})
	}
	if reason := addressSpaceShortfall(m.opts.dataBytes()+m.opts.plannedHostNeed(m.caps, fp), m.opts.Threads); reason != "" {
		return fp, m.fail(Status{Kind: StatusSkipped, Reason: reason})
	}
	return fp, true
}

// reserve reserves the footprint's device bytes ahead on a device that
// reserves (device.Caps.Reserver), returning what releases them.
func (m *modeRun) reserve(fp engine.Footprint) (release func(), ok bool) {
	if m.caps.Reserver != nil {
		m.opts.startPhase(m.mode, m.r.Device, PhaseReserve)
	}
	reserving := time.Now()
	release, refused := reserveAhead(m.caps.Reserver, fp.Device)
	if refused != nil {
		return nil, m.fail(*refused)
	}
	if m.caps.Reserver != nil {
		m.r.phase(PhaseReserve, reserving)
	}
	return release, true
}

// load loads the schedule under the placement; a device out of memory is
// quoted with what is free once the load has released what it took.
func (m *modeRun) load(ctx context.Context, fp engine.Footprint) bool {
	m.opts.startPhase(m.mode, m.r.Device, PhaseLoad)
	loading := time.Now()
	var err error
	if m.prog, err = m.sched.LoadContext(ctx, m.dev, m.placement); err != nil {
		if ctx.Err() != nil {
			return !m.stopped(ctx, PhaseLoad)
		}
		status := errorStatus(err)
		var oom *device.OutOfMemoryError
		if errors.As(err, &oom) {
			// Quote what is free now that the load failed (and released
			// what it had taken), not what was free before it: another
			// process may have taken memory meanwhile.
			now, _, err := m.dev.MemInfo()
			if err != nil {
				now = oom.Free
			}
			status.Reason = fmt.Sprintf("needs %s, %s of %s free", units.Bytes(max(fp.Device, oom.Requested)), units.Bytes(now), units.Bytes(oom.Total))
		}
		return m.fail(status)
	}
	m.r.phase(PhaseLoad, loading)
	return true
}

// initialise draws and uploads the initial values parameter by
// parameter: the uploads are timed as they go, the drawing is the rest;
// then a GGUF file's weights (--load-weights) one parameter at a time. It
// stops at the next parameter once ctx is done.
func (m *modeRun) initialise(ctx context.Context) bool {
	m.opts.startPhase(m.mode, m.r.Device, PhaseInit)
	initialising, upload := time.Now(), time.Duration(0)
	err := m.model.InitParams(m.opts.Seed, func(param *gorgonia.Node, values []float32) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		uploading := time.Now()
		defer func() { upload += time.Since(uploading) }()
		return m.prog.SetInput(param, values)
	})
	if err == nil && m.opts.LoadWeights != nil {
		err = m.loadWeights(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			return !m.stopped(ctx, PhaseInit)
		}
		return m.fail(errorStatus(err))
	}
	m.r.Setup = append(m.r.Setup, phase(PhaseInit, time.Since(initialising)-upload), phase(PhaseUpload, upload))
	return true
}

// predict predicts an epoch on the mode's profile, where it has one (a
// generation: one repetition, on its profiles, predictGeneration).
func (m *modeRun) predict() bool {
	if m.gen != nil {
		return m.predictGeneration()
	}
	p, ok := m.opts.profileFor(m.mode, m.dev, m.caps)
	if !ok {
		return true
	}
	m.opts.startPhase(m.mode, m.r.Device, PhasePredict)
	predicting := time.Now()
	batches := m.opts.Samples / m.opts.Batch
	copies, err := m.sched.Copies(m.placement, m.prog.Window(), batches, []*gorgonia.Node{m.model.Input, m.model.Target})
	if err != nil {
		return m.fail(Status{Kind: StatusFailed, Reason: fmt.Sprintf("predicting on %s: %v", p.Name, err)})
	}
	pr := predictEpoch(m.sched.Work(), batches, copies, m.placement, p)
	m.r.Prediction = &pr
	m.r.phase(PhasePredict, predicting)
	return true
}

// predictGeneration predicts a repetition of the generation on the
// mode's profiles, where it has them.
func (m *modeRun) predictGeneration() bool {
	onDevice, host, ok := m.opts.generationProfiles(m.mode, m.dev, m.caps)
	if !ok {
		return true
	}
	m.opts.startPhase(m.mode, m.r.Device, PhasePredict)
	predicting := time.Now()
	pr, ok, err := m.opts.predictGeneration(m.mode, m.sched, m.placement, m.prog.Window(), onDevice, host)
	if err != nil {
		return m.fail(Status{Kind: StatusFailed, Reason: fmt.Sprintf("predicting on %s: %v", onDevice.Name, err)})
	}
	if ok {
		m.r.Prediction = &pr
		m.r.phase(PhasePredict, predicting)
	}
	return true
}

// epochs runs every epoch with run (an epoch over the data, or one
// generation), recording each, and the peak and status at the end;
// h.StartToFirstEpoch is set at the first. run reports false where the
// run stops, having set the status.
func (m *modeRun) epochs(h *Header, run func(e int) (Epoch, bool)) {
	for e := range m.opts.Epochs {
		if h.StartToFirstEpoch == 0 && !m.opts.ProcessStart.IsZero() {
			h.StartToFirstEpoch = time.Since(m.opts.ProcessStart).Seconds()
		}
		epoch, ok := run(e)
		if !ok {
			return
		}
		m.r.Epochs = append(m.r.Epochs, epoch)
		if m.opts.Progress != nil {
			m.opts.Progress(Event{Mode: m.mode, Device: m.r.Device, Epoch: &epoch, Warmup: e < m.opts.Warmup})
		}
	}
	m.r.PeakDeviceBytes = m.dev.Stats().PeakBytes
	m.r.Status = Status{Kind: StatusOK}
}

// epoch runs epoch e's batches: its value is the mean over samples, and
// its copies the device's counts across it. It stops the run when ctx
// is cancelled, a batch fails or the value diverges.
func (m *modeRun) epoch(ctx context.Context, data models.Data, e int) (Epoch, bool) {
	opts, prog, batches := m.opts, m.prog, m.opts.Samples/m.opts.Batch
	before := m.dev.Stats()
	start := time.Now()
	// sum adds each batch's value weighted by its samples, so that the
	// epoch's value is the mean over samples whatever the batch size.
	sum, samples := 0.0, 0
	skippedBefore := prog.LossScale().Skipped
	for i := range batches {
		var v float32
		err := ctx.Err()
		if err == nil {
			v, err = m.batch(data, i)
		}
		if err != nil && ctx.Err() != nil { // before the batch, or in it between two steps
			return Epoch{}, m.interrupted(fmt.Sprintf("after %d of %d epochs", len(m.r.Epochs), opts.Epochs))
		}
		if err != nil {
			return Epoch{}, m.fail(errorStatus(err))
		}
		if opts.batchHook != nil {
			v = opts.batchHook(m.mode, e, i, v)
		}
		if diverged(v) {
			m.r.PeakDeviceBytes = m.dev.Stats().PeakBytes
			return Epoch{}, m.fail(Status{Kind: StatusDiverged, Reason: fmt.Sprintf("at epoch %d, batch %d", e, i)})
		}
		sum += float64(v) * float64(opts.Batch)
		samples += opts.Batch
		if opts.Progress != nil {
			opts.Progress(Event{Mode: m.mode, Device: m.r.Device, Batch: &BatchDone{Epoch: e, Batch: i, Batches: batches, Epochs: opts.Epochs}})
		}
	}
	epoch := Epoch{Index: e, Warmup: e < opts.Warmup, Seconds: time.Since(start).Seconds(), Value: results.Float(sum / float64(samples)),
		SkippedSteps: prog.LossScale().Skipped - skippedBefore}
	m.r.LossScale = prog.LossScale().Scale
	m.copiesSince(&epoch, before)
	return epoch, true
}

// copiesSince records in epoch, for a mode that copies, the copies its
// device made since its stats were before.
func (m *modeRun) copiesSince(epoch *Epoch, before device.Stats) {
	if !m.mode.Copies() {
		return
	}
	after := m.dev.Stats()
	up, down, took := after.UploadBytes-before.UploadBytes, after.DownloadBytes-before.DownloadBytes, (after.CopyTime - before.CopyTime).Seconds()
	epoch.UploadBytes, epoch.DownloadBytes, epoch.CopySeconds = &up, &down, &took
	epoch.RemoteBytes = after.RemoteBytes - before.RemoteBytes
}

// batch runs batch i of data, returning its loss or output value
// (runBatch).
func (m *modeRun) batch(data models.Data, i int) (float32, error) {
	return runBatch(m.prog, m.model, data, i, m.opts.Batch, m.opts.GradAccum)
}

// runBatch sets batch i of data, of batch samples, as the program's input
// and target and runs it, returning its loss or output value. Under
// gradient accumulation (k > 1) the batch runs as k micro-batches of
// batch/k samples, the same rows in order, each a Run of the program
// (which updates after the last), and the value is the mean of theirs:
// the mean over the batch's samples, as one Run of the whole batch gives.
func runBatch(prog *engine.Program, model *models.Model, data models.Data, i, batch int, k levers.GradAccum) (float32, error) {
	micro, err := k.MicroBatch(batch)
	if err != nil {
		return 0, err
	}
	n := int(k.Setting())
	sum := 0.0
	for j := range n {
		if err := prog.SetInput(model.Input, data.Batch(i*n+j, micro)); err != nil {
			return 0, err
		}
		if err := prog.SetInput(model.Target, data.TargetBatch(i*n+j, micro)); err != nil {
			return 0, err
		}
		v, err := prog.Run()
		if err != nil || n == 1 {
			return v, err
		}
		sum += float64(v)
	}
	return float32(sum / float64(n)), nil
}

// startPhase reports that setup phase name of mode on device starts
// (mode "" for the run's own).
func (opts Options) startPhase(mode Mode, device string, name PhaseName) {
	if opts.Progress != nil {
		opts.Progress(Event{Mode: mode, Device: device, Phase: name})
	}
}

// phase appends to r's setup the phase name, which began at start and has
// just ended.
func (r *ModeResult) phase(name PhaseName, start time.Time) {
	r.Setup = append(r.Setup, phase(name, time.Since(start)))
}

// openPhases are the setup phases of opening a device of caps, which took
// d: the kernels' compile or their cache's read first, for a device that
// says (device.Caps.Compile), then the rest of the opening.
func openPhases(caps device.Caps, d time.Duration) []Phase {
	c := caps.Compile
	if c == nil {
		return []Phase{phase(PhaseOpen, d)}
	}
	name := PhaseCompile
	if c.Cached {
		name = PhaseKernelCache
	}
	return []Phase{phase(name, c.Duration), phase(PhaseOpen, d-c.Duration)}
}

// reserveAhead reserves a mode's planned device footprint before it loads,
// so that two processes that each fit alone do not both fail holding part
// of the memory each: the second fails at once instead. It returns the
// release, or the mode's status when the footprint does not fit ("needs X,
// Y of Z free", quoting the free memory at that moment) or the reservation
// fails otherwise. A device that cannot reserve ahead (nil r: a CUDA GPU,
// whose real allocations are the truth) gets a release that does nothing.
func reserveAhead(r device.AheadReserver, footprint int64) (func(), *Status) {
	if r == nil {
		return func() {}, nil
	}
	release, err := r.ReserveAhead(footprint)
	if err == nil {
		return release, nil
	}
	var oom *device.OutOfMemoryError
	if errors.As(err, &oom) {
		reason := fmt.Sprintf("needs %s, %s of %s free", units.Bytes(footprint), units.Bytes(oom.Free), units.Bytes(oom.Total))
		if h := oom.HeldBy(); h != "" {
			reason += "; " + h
		}
		return nil, &Status{Kind: StatusOOM, Reason: reason}
	}
	return nil, &Status{Kind: StatusFailed, Reason: fmt.Sprintf("reserving %s ahead: %v", units.Bytes(footprint), err)}
}

// diverged reports whether a batch's loss or output is not a finite
// number: training has diverged (or the data holds one), and the epochs
// that follow would only carry it on.
func diverged(v float32) bool {
	f := float64(v)
	return math.IsNaN(f) || math.IsInf(f, 0)
}

// deviceFor returns the device and placement of a mode (its row of
// modes), or nil and the reason the mode cannot run: no GPU given, or one
// that cannot hold the placement (Placement.Usable).
func (opts Options) deviceFor(mode Mode) (device.Device, engine.Placement, Status) {
	row, ok := rowOf(mode)
	if !ok {
		return nil, nil, Status{Kind: StatusFailed, Reason: fmt.Sprintf("unknown mode %q", mode)}
	}
	pl := mode.Placement(opts.Config)
	if !row.gpu {
		return device.NewHost(), pl, Status{}
	}
	if opts.NewGPU == nil {
		return nil, nil, Status{Kind: StatusUnavailable, Reason: "no GPU device given (--device cpu)"}
	}
	dev, err := opts.NewGPU()
	if err != nil {
		return nil, nil, Status{Kind: StatusUnavailable, Reason: err.Error()}
	}
	if err := pl.Usable(dev); err != nil {
		_ = dev.Close()
		return nil, nil, Status{Kind: StatusUnavailable, Reason: err.Error()}
	}
	return dev, pl, Status{}
}

// threadCount is the host threads in force and, when they are fewer than
// asked, a warning that says why.
type threadCount struct {
	n       int
	warning string
}

// applyThreads sets the host threads of the BLAS and the element-wise
// kernels to opts.Threads and returns the count in force, which the BLAS
// may cap. The setting is process-wide, as the BLAS's is; this is the one
// place gpuz makes it.
func (opts Options) applyThreads() threadCount {
	set := hostmath.SetThreads
	if opts.setThreads != nil {
		set = opts.setThreads
	}
	n := set(opts.Threads)
	if opts.Threads > 0 && n < opts.Threads {
		return threadCount{n, fmt.Sprintf("%d threads requested, %d in force: the BLAS (%s) accepts at most %d", opts.Threads, n, hostmath.BLASName(), n)}
	}
	return threadCount{n: n}
}

// runModel is a run's model compiled for its task, once, for every mode:
// the model and its schedule, and for the generate task its graph (gen,
// whose Model is model; nil for the other tasks); err is why it could not
// be compiled, each mode's failure.
type runModel struct {
	model *models.Model
	gen   *models.Generation
	sched *engine.Schedule
	err   error
}

// compiled compiles model, built from the workload, for the run's task;
// the generate task builds and compiles its generation's graph instead.
func (opts Options) compiled(model *models.Model) runModel {
	if opts.Task == TaskGenerate {
		g, sched, err := opts.compileGeneration()
		if err != nil {
			return runModel{err: err}
		}
		return runModel{model: g.Model, gen: g, sched: sched}
	}
	sched, err := opts.compileModel(model)
	return runModel{model: model, sched: sched, err: err}
}

// compile builds the workload's graph with the levers and compiles it
// for the task: the model's levers reach the graph through models.Apply,
// the schedule's engine.Spec.
func (opts Options) compile() (*models.Model, *engine.Schedule, error) {
	if opts.Task == TaskGenerate {
		g, sched, err := opts.compileGeneration()
		if err != nil {
			return nil, nil, err
		}
		return g.Model, sched, nil
	}
	w, err := opts.workload()
	if err != nil {
		return nil, nil, err
	}
	model, err := w.Build()
	if err != nil {
		return nil, nil, err
	}
	sched, err := opts.compileModel(model)
	if err != nil {
		return nil, nil, err
	}
	return model, sched, nil
}

// compileModel compiles model, built from the workload, for the task
// (training or evaluation): engine.Compile adds the gradients to its
// graph, so a model is compiled once.
func (opts Options) compileModel(model *models.Model) (*engine.Schedule, error) {
	output := model.OutputMean
	if opts.Task == TaskTrain {
		output = model.Loss
	}
	weights, err := model.Weights(opts.Weights, opts.Task == TaskTrain)
	if err != nil {
		return nil, err
	}
	return engine.Compile(engine.Spec{
		Inputs: model.Inputs(), Blocks: model.Blocks, Output: output,
		Train: opts.Task == TaskTrain, Optimizer: opts.Adam, ClipNorm: opts.ClipNorm,
		Recompute: opts.Recompute, Precision: opts.Precision, Weights: weights, Accumulate: int(opts.GradAccum),
	})
}

// errorStatus classifies an error that stopped a mode.
func errorStatus(err error) Status {
	var oom *device.OutOfMemoryError
	if errors.As(err, &oom) {
		return Status{Kind: StatusOOM, Reason: fmt.Sprintf("%s more needed, %s of %s free", units.Bytes(oom.Requested), units.Bytes(oom.Free), units.Bytes(oom.Total))}
	}
	return Status{Kind: StatusFailed, Reason: err.Error()}
}

// releaseHostMemory returns a finished mode's host memory to the system
// before the next mode allocates its own.
func releaseHostMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// peakRSS returns the process's peak resident set size in bytes.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024 // Linux reports kilobytes
}
