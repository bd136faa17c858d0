package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorgonia.org/gorgonia"

	"gpuz/internal/engine"
	"gpuz/internal/levers"
	"gpuz/internal/models"
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

// context returns the positions each cache holds: Context, or what the
// generation needs.
func (g GenerateOptions) context() int {
	if g.Context > 0 {
		return g.Context
	}
	return g.Prompt + g.Tokens - 1
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
	c := models.GenerateConfig{Model: llm.Model, Layers: llm.Layers, Batch: opts.Batch, Prompt: g.Prompt, Context: g.context(),
		KVCache: opts.kvDType()}
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

// generations runs every epoch of the generate task, each one generation
// from the same prompts, recording each with its phases, the tokens
// generated, and the peak and status at the end; h.StartToFirstEpoch is
// set at the first. A cancelled ctx stops the generation under way at its
// next pass: the repetitions finished are kept.
func (m *modeRun) generations(ctx context.Context, data models.Data, h *Header) {
	prompt := m.opts.prompts(data)
	for e := range m.opts.Epochs {
		if h.StartToFirstEpoch == 0 && !m.opts.ProcessStart.IsZero() {
			h.StartToFirstEpoch = time.Since(m.opts.ProcessStart).Seconds()
		}
		epoch, ok := m.generation(ctx, prompt, e)
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

// errStopped is a generation stopped between passes by its context.
var errStopped = errors.New("generation stopped")

// generation runs generation e: the prefill, timed to the first token,
// then the decode passes. Its value is the mean over the generated
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
	case errors.Is(err, errStopped):
		m.r.PeakDeviceBytes = m.dev.Stats().PeakBytes
		return Epoch{}, m.fail(Status{Kind: StatusInterrupted, Reason: fmt.Sprintf("after %d of %d generations", len(m.r.Epochs), opts.Epochs)})
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
	if m.mode.Copies() {
		after := m.dev.Stats()
		up, down, took := after.UploadBytes-before.UploadBytes, after.DownloadBytes-before.DownloadBytes, (after.CopyTime - before.CopyTime).Seconds()
		epoch.UploadBytes, epoch.DownloadBytes, epoch.CopySeconds = &up, &down, &took
		epoch.RemoteBytes = after.RemoteBytes - before.RemoteBytes
	}
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

// kvCacheBytes returns the bytes of every decoder layer's key-value
// cache of the generation opts runs: 2 (keys and values) · layers · kv
// heads · head dim · context · batch, at 4 bytes an element, or 2 for a
// 16-bit cache (kvDType). Zero for the other tasks.
func (opts Options) kvCacheBytes() int64 {
	if opts.Task != TaskGenerate {
		return 0
	}
	c, err := opts.generation()
	if err != nil {
		return 0
	}
	return c.CacheBytes()
}
