package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorgonia.org/gorgonia"

	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/levers"
	"gpuz/internal/models"
	"gpuz/internal/perfmodel"
	"gpuz/internal/results"
)

// GenerateOptions sizes the generate task (TaskGenerate): each of the
// run's Batch sequences takes a prompt of Prompt token ids, runs it
// through the model in one pass (prefill), then generates Tokens tokens
// in all, the first from the prefill and each other from one decode pass,
// greedily (the argmax of the logits). Each epoch of the run is one such
// generation, its first Warmup ones reported apart.
type GenerateOptions struct {
	Prompt, Tokens int
	// Context is the positions each decoder layer's key-value cache
	// holds, allocated whole before the first pass; 0 is what the
	// generation needs, Prompt + Tokens − 1 (the last token is never fed
	// back).
	Context int
	// ContextMax, when set, makes Context the model's maximum positions
	// (max_position_embeddings), as llama.cpp's -c 0 does.
	ContextMax bool
	// PromptIDs, when set, is the prompt of every sequence instead of the
	// run's data: Prompt token ids, each below the vocabulary.
	PromptIDs []int
	// KVDType is how the key-value caches store their keys and values:
	// levers.FP32, BF16 or FP16, whatever the run's precision (a 16-bit
	// cache under fp32 weights, as llama.cpp's -ctk f16); "" is the
	// run's precision's (Options.kvDType).
	KVDType levers.Precision
}

// kvDType returns the type the key-value caches store: Generate.KVDType,
// or the run's precision's.
func (opts Options) kvDType() levers.Precision {
	if opts.Generate.KVDType != "" {
		return opts.Generate.KVDType
	}
	return opts.Precision.Setting()
}

// context returns the positions each cache holds, the model's maximum
// positions being maxPositions: Context, the maximum under ContextMax,
// or what the generation needs.
func (g GenerateOptions) context(maxPositions int) int {
	switch {
	case g.ContextMax:
		return maxPositions
	case g.Context > 0:
		return g.Context
	}
	return g.Prompt + g.Tokens - 1
}

// MaxPositions returns the maximum positions of the run's model (its
// config's max_position_embeddings), 0 for a workload that is not the
// llm workload's.
func (opts Options) MaxPositions() int {
	if llm, ok := opts.Workload.(*models.LLMConfig); ok {
		return llm.Model.Config.MaxPositions
	}
	return 0
}

// generation returns the generation's graph configuration: the llm
// workload's model and layers at the run's batch, prompt and context.
func (opts Options) generation() (models.GenerateConfig, error) {
	w, err := opts.workload()
	if err != nil {
		return models.GenerateConfig{}, err
	}
	llm, ok := w.(*models.LLMConfig)
	if !ok {
		return models.GenerateConfig{}, fmt.Errorf("the generate task is the llm workload's, not %T's", w)
	}
	g := opts.Generate
	c := models.GenerateConfig{Model: llm.Model, Layers: llm.Layers, Batch: opts.Batch, Prompt: g.Prompt,
		Context: g.context(llm.Model.Config.MaxPositions), KVCache: opts.kvDType()}
	switch {
	case g.Tokens <= 0:
		return c, fmt.Errorf("generate: the tokens to generate must be positive, got %d", g.Tokens)
	case g.Prompt+g.Tokens-1 > c.Context:
		return c, fmt.Errorf("generate: a context of %d positions cannot hold a prompt of %d and %d generated tokens (%d positions: the last token is never fed back)", c.Context, g.Prompt, g.Tokens, g.Prompt+g.Tokens-1)
	case g.PromptIDs != nil && len(g.PromptIDs) != g.Prompt:
		return c, fmt.Errorf("generate: %d prompt ids for a prompt of %d", len(g.PromptIDs), g.Prompt)
	}
	if mp := llm.Model.Config.MaxPositions; mp > 0 && c.Context > mp {
		return c, fmt.Errorf("generate: a context of %d positions is beyond the model's %s, %d", c.Context, llm.Model.Config.MaxPositionsKey(), mp)
	}
	for i, id := range g.PromptIDs {
		if id < 0 || id >= llm.Model.Config.Vocab {
			return c, fmt.Errorf("generate: prompt id %d (at %d) is not below the vocabulary of %d", id, i, llm.Model.Config.Vocab)
		}
	}
	return c, c.Validate()
}

// CheckGeneration reports the first setting of the generate task that
// cannot make a generation of the run's model: the tokens, the context
// against the prompt and the generated tokens and against the model's
// maximum positions, the prompt's ids, and the graph's sizes; nil for
// the other tasks.
func (opts Options) CheckGeneration() error {
	if opts.Task != TaskGenerate {
		return nil
	}
	_, err := opts.generation()
	return err
}

// compileGeneration builds the generation's graph and compiles its two
// passes, prefill then decode, under the run's precision, the caches
// stored as kvDType says.
func (opts Options) compileGeneration() (*models.Generation, *engine.Schedule, error) {
	c, err := opts.generation()
	if err != nil {
		return nil, nil, err
	}
	g, err := c.Build()
	if err != nil {
		return nil, nil, err
	}
	spec := g.Spec()
	spec.Precision = opts.Precision
	if spec.Weights, err = g.Model.Weights(opts.Weights, false); err != nil {
		return nil, nil, err
	}
	sched, err := engine.Compile(spec)
	if err != nil {
		return nil, nil, err
	}
	return g, sched, nil
}

// prompts returns every sequence's prompt, batch × Prompt token ids:
// PromptIDs repeated, or the first batch of the run's data (the llm
// workload's uniform ids, its sequences Prompt long).
func (opts Options) prompts(data models.Data) []float32 {
	if ids := opts.Generate.PromptIDs; ids != nil {
		p := make([]float32, 0, opts.Batch*len(ids))
		for range opts.Batch {
			for _, id := range ids {
				p = append(p, float32(id))
			}
		}
		return p
	}
	return data.Batch(0, opts.Batch)
}

// errStopped is a generation stopped between passes by its context.
var errStopped = errors.New("generation stopped")

// generation runs generation e from the prompts (one epoch of the
// generate task): the prefill, timed to the first token, then the decode
// passes; a cancelled ctx stops it at its next pass or step (the
// generations finished are kept). Its value is the mean over the generated
// tokens of each one's logit, the largest of its position's (a figure
// that every mode computes alike, and that is not finite when the
// logits are not).
func (m *modeRun) generation(ctx context.Context, prompt []float32, e int) (Epoch, bool) {
	opts := m.opts
	before := m.dev.Stats()
	runner := &stoppable{ctx: ctx, prog: m.prog}
	start := time.Now()
	var firstToken time.Duration
	sum, n := 0.0, 0
	tokens, err := m.gen.Generate(runner, prompt, opts.Generate.Tokens, func(i int, logits []float32) {
		if i == 0 {
			firstToken = time.Since(start)
		}
		vocab := len(logits) / opts.Batch
		for s := range opts.Batch {
			row := logits[s*vocab : (s+1)*vocab]
			best := row[0]
			for _, v := range row {
				best = max(best, v)
			}
			sum += float64(best)
			n++
		}
	})
	total := time.Since(start)
	switch {
	case err != nil && ctx.Err() != nil: // between passes (errStopped), or in one between two steps
		return Epoch{}, m.interrupted(fmt.Sprintf("after %d of %d generations", len(m.r.Epochs), opts.Epochs))
	case err != nil:
		return Epoch{}, m.fail(errorStatus(err))
	}
	value := sum / float64(n)
	if diverged(float32(value)) {
		m.r.PeakDeviceBytes = m.dev.Stats().PeakBytes
		return Epoch{}, m.fail(Status{Kind: StatusDiverged, Reason: fmt.Sprintf("at generation %d: logits not finite", e)})
	}
	m.r.Generated = tokens
	epoch := Epoch{Index: e, Warmup: e < opts.Warmup, Seconds: total.Seconds(), Value: results.Float(value),
		Generation: &results.Generation{
			PrefillTokens: opts.Batch * opts.Generate.Prompt, PrefillSeconds: firstToken.Seconds(),
			DecodeTokens: opts.Batch * (opts.Generate.Tokens - 1), DecodeSeconds: (total - firstToken).Seconds(),
		}}
	m.copiesSince(&epoch, before)
	if opts.Progress != nil {
		opts.Progress(Event{Mode: m.mode, Device: m.r.Device, Batch: &BatchDone{Epoch: e, Batch: 0, Batches: 1, Epochs: opts.Epochs}})
	}
	return epoch, true
}

// stoppable runs a generation's passes on prog until ctx is cancelled:
// the pass after that fails with errStopped.
type stoppable struct {
	ctx  context.Context
	prog *engine.Program
}

// SetInput sets input n of the program.
func (s *stoppable) SetInput(n *gorgonia.Node, data []float32) error { return s.prog.SetInput(n, data) }

// Read reads value n of the program.
func (s *stoppable) Read(n *gorgonia.Node) ([]float32, error) { return s.prog.Read(n) }

// RunPass runs pass p, unless ctx is done.
func (s *stoppable) RunPass(p int) error {
	if s.ctx.Err() != nil {
		return errStopped
	}
	return s.prog.RunPass(p)
}

// generationSizes returns the context of the generation opts runs and
// the bytes of every decoder layer's key-value cache: 2 (keys and
// values) · layers · kv heads · head dim · context · batch, at 4 bytes an
// element, or 2 for a 16-bit cache (kvDType). Zeros for the other tasks.
func (opts Options) generationSizes() (context int, kvBytes int64) {
	if opts.Task != TaskGenerate {
		return 0, 0
	}
	c, err := opts.generation()
	if err != nil {
		return 0, 0
	}
	return c.Context, c.CacheBytes()
}

// What bounds a generation's decode pass most (GenerationPrediction.DecodeLimit).
const (
	// LimitDeviceMemory is the device's kernels reading their weights and
	// caches from device memory.
	LimitDeviceMemory = "device memory"
	// LimitBus is the copies between host and device: streamed weights
	// and caches, activations crossing between host and device layers.
	LimitBus = "bus"
	// LimitHostMemory is the host's kernels (a hybrid placement's host
	// layers) reading their weights and caches from host memory.
	LimitHostMemory = "host memory"
	// LimitCompute is the kernels' arithmetic.
	LimitCompute = "compute"
	// LimitLaunch is the kernels' fixed costs.
	LimitLaunch = "launches"
)

// GenerationPrediction is what a mode's profiles could do with each pass
// of a generation: the prefill (every sequence's prompt in one pass) and
// a decode pass (one token of every sequence), each the device's kernels
// on the device's profile with the pass's copies, plus any kernels the
// placement runs on the host on the host's profile, the two in turn.
type GenerationPrediction struct {
	// Batch is the sequences, each generating a token a decode pass.
	Batch           int
	Prefill, Decode perfmodel.Prediction
	// DecodeDeviceBytes and DecodeHostBytes are the bytes a decode pass's
	// kernels read and write on the device and on the host;
	// DecodeBusBytes what it copies between them.
	DecodeDeviceBytes, DecodeHostBytes, DecodeBusBytes int64
	// DecodeLimit is the largest part of a decode pass's model time:
	// LimitDeviceMemory, LimitBus, LimitHostMemory, LimitCompute or
	// LimitLaunch.
	DecodeLimit string
}

// DecodeTokensPerSecond is the tokens a second the decode passes
// generate, Batch tokens a pass.
func (g GenerationPrediction) DecodeTokensPerSecond() float64 {
	if g.Decode.Model <= 0 {
		return 0
	}
	return float64(g.Batch) / g.Decode.Model.Seconds()
}

// generationProfiles returns the profiles a generation of mode is
// predicted on: the device's (the host profile for the cpu mode, the
// GPU's own or measured one for the others) and the host profile for the
// steps a placement runs on the host (nil when none was given); false
// when the device has none, and for the managed mode, whose page faults
// the generation's model does not price.
func (opts Options) generationProfiles(mode Mode, dev device.Device, caps device.Caps) (onDevice perfmodel.Profile, host *perfmodel.Profile, ok bool) {
	switch {
	case mode.Migrates():
		return perfmodel.Profile{}, nil, false
	case mode.OnHost():
		if opts.HostProfile == nil {
			return perfmodel.Profile{}, nil, false
		}
		return *opts.HostProfile, nil, true
	case caps.Profile != nil:
		return *caps.Profile, opts.HostProfile, true
	case caps.ComputeCapability != "" && opts.measured != nil:
		p, ok := opts.measured.of(dev)
		return p, opts.HostProfile, ok
	}
	return perfmodel.Profile{}, nil, false
}

// predictGeneration predicts a generation of the run's sizes under pl on
// a window of window blocks: its prefill pass, then Tokens−1 decode
// passes, each at a full cache (CacheAttend's cost is its cache's end).
// The prediction's time is the whole generation's, its kernels and copies
// too; false when a placement runs steps on the host and no host profile
// was given.
func (opts Options) predictGeneration(mode Mode, sched *engine.Schedule, pl engine.Placement, window int, onDevice perfmodel.Profile, host *perfmodel.Profile) (Prediction, bool, error) {
	var (
		passes [2]perfmodel.Prediction
		gp     = GenerationPrediction{Batch: opts.Batch}
		pr     = Prediction{Profile: onDevice.Name}
	)
	decodes := int64(opts.Generate.Tokens - 1)
	for p := range 2 {
		devWork, hostWork, err := sched.PassWork(pl, p)
		if err != nil {
			return Prediction{}, false, err
		}
		copies, err := sched.PassCopies(pl, window, p, nil)
		if err != nil {
			return Prediction{}, false, err
		}
		if len(hostWork.Kernels) > 0 && host == nil {
			return Prediction{}, false, nil
		}
		dev := predictEpoch(devWork, 1, copies, pl, onDevice)
		pass := dev.Prediction
		var onHost perfmodel.Prediction
		if len(hostWork.Kernels) > 0 {
			onHost = perfmodel.Predict(kernelsOf(hostWork, 1), perfmodel.Copies{}, *host, host.Efficiency())
			pass = sumPredictions(pass, onHost)
		}
		passes[p] = pass
		n := int64(1)
		if p == 1 {
			n = decodes
			gp.DecodeDeviceBytes, gp.DecodeHostBytes = devWork.Bytes, hostWork.Bytes
			gp.DecodeBusBytes = copies.UploadBytes + copies.DownloadBytes
			gp.DecodeLimit = decodeLimit(dev.Prediction, onHost, mode.OnHost())
		}
		for _, k := range dev.Kernels {
			k.Launches, k.FLOPs, k.Bytes = n*k.Launches, n*k.FLOPs, n*k.Bytes
			pr.Kernels = append(pr.Kernels, k)
		}
		c := dev.Copies
		pr.Copies.H2DBytes += n * c.H2DBytes
		pr.Copies.D2HBytes += n * c.D2HBytes
		pr.Copies.SyncBytes += n * c.SyncBytes
		pr.Copies.Count += n * c.Count
		pr.Copies.Pageable = c.Pageable
	}
	gp.Prefill, gp.Decode = passes[0], passes[1]
	pr.Prediction = sumPredictions(passes[0], scalePrediction(passes[1], decodes))
	pr.Limiter = passes[0].Limiter
	if decodes > 0 {
		pr.Limiter = passes[1].Limiter
	}
	pr.Generation = &gp
	return pr, true, nil
}

// kernelsOf converts work for perfmodel, n times over.
func kernelsOf(work engine.Work, n int64) []perfmodel.Kernel {
	kernels := make([]perfmodel.Kernel, len(work.Kernels))
	for i, k := range work.Kernels {
		kernels[i] = perfmodel.Kernel{Name: k.Name, Launches: n * k.Launches, FLOPs: n * k.FLOPs, Bytes: n * k.Bytes, Half: k.Half}
	}
	return kernels
}

// sumPredictions is two predictions of work done one after the other:
// each time added, the limiter the larger part's.
func sumPredictions(a, b perfmodel.Prediction) perfmodel.Prediction {
	s := perfmodel.Prediction{Bound: a.Bound + b.Bound, Model: a.Model + b.Model, Compute: a.Compute + b.Compute,
		Memory: a.Memory + b.Memory, Launch: a.Launch + b.Launch, Copy: a.Copy + b.Copy, Limiter: a.Limiter}
	if b.Model > a.Model {
		s.Limiter = b.Limiter
	}
	return s
}

// scalePrediction is p's work done n times in a row.
func scalePrediction(p perfmodel.Prediction, n int64) perfmodel.Prediction {
	d := time.Duration(n)
	return perfmodel.Prediction{Bound: d * p.Bound, Model: d * p.Model, Compute: d * p.Compute, Memory: d * p.Memory,
		Launch: d * p.Launch, Copy: d * p.Copy, Limiter: p.Limiter}
}

// decodeLimit names the largest part of a decode pass's model time: the
// device's kernels' memory (the host's, when the device is the host) or
// compute, the copies, the host's kernels, or the launches.
func decodeLimit(dev, host perfmodel.Prediction, deviceIsHost bool) string {
	memory := LimitDeviceMemory
	if deviceIsHost {
		memory = LimitHostMemory
	}
	parts := []struct {
		name string
		d    time.Duration
	}{
		{memory, dev.Memory}, {LimitCompute, dev.Compute}, {LimitBus, dev.Copy},
		{LimitHostMemory, host.Memory}, {LimitCompute, host.Compute}, {LimitLaunch, dev.Launch + host.Launch},
	}
	best, limit := time.Duration(0), ""
	for _, p := range parts {
		if p.d > best {
			best, limit = p.d, p.name
		}
	}
	return limit
}

// sizeGeneration fills a generation's copies and prediction in mp, the
// plan of a mode on dev (caps) under its placement and window: the whole
// generation's copies (its prefill's and Tokens−1 decode passes') and
// its prediction, where the mode's profiles predict it.
func (opts Options) sizeGeneration(mp *ModePlan, dev device.Device, caps device.Caps, sched *engine.Schedule) error {
	onDevice, host, ok := opts.generationProfiles(mp.Mode, dev, caps)
	if !ok {
		return nil
	}
	pr, ok, err := opts.predictGeneration(mp.Mode, sched, mp.Placement, mp.Footprint.Window, onDevice, host)
	if err != nil || !ok {
		return err
	}
	mp.Prediction = &pr
	if mp.Mode.Copies() {
		c := pr.Copies
		mp.Copies = engine.Copies{UploadBytes: c.H2DBytes, DownloadBytes: c.D2HBytes, Count: c.Count, OverlapBytes: c.H2DBytes + c.D2HBytes - c.SyncBytes}
	}
	return nil
}
