package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gorgonia.org/gorgonia"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/levers"
)

// The generation's sizes in the tests: 2 sequences, a prompt of 5 tokens,
// 4 generated, in caches of 9 positions (one more than the passes fill).
const (
	genBatch, genPrompt, genTokens, genContext = 2, 5, 4, 9
)

// generation is one generation's result: the tokens and every pass's
// logits, [batch, vocab] each.
type generation struct {
	tokens [][]int
	logits [][]float32
}

// generate builds tiny config's generation, loads it on dev under pl at
// the given precision, its caches stored as kv says, initialises it from
// seed 1 and generates from a prompt drawn from seed 2.
func generate(t *testing.T, config string, dev device.Device, pl engine.Placement, precision, kv levers.Precision) generation {
	t.Helper()
	llm := tinyLLM(t, config, genContext, genBatch)
	g, err := GenerateConfig{Model: llm.Model, Layers: llm.Layers, Batch: genBatch, Prompt: genPrompt, Context: genContext, KVCache: kv}.Build()
	if err != nil {
		t.Fatal(err)
	}
	spec := g.Spec()
	spec.Precision = precision
	plan, err := engine.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := plan.Load(dev, pl)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if err := g.InitParams(1, prog.SetInput); err != nil {
		t.Fatal(err)
	}
	var out generation
	out.tokens, err = g.Generate(prog, genPromptIDs(llm.Model.Vocab), genTokens, func(_ int, logits []float32) {
		out.logits = append(out.logits, logits)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// genPromptIDs is the tests' prompt: token ids drawn below vocab.
func genPromptIDs(vocab int) []float32 {
	rng := rand.New(rand.NewPCG(2, 0))
	ids := make([]float32, genBatch*genPrompt)
	for i := range ids {
		ids[i] = float32(rng.IntN(vocab))
	}
	return ids
}

// forwardLogits runs the llm workload's forward pass, from seed 1's
// weights, over each sequence's prompt and its generated tokens but the
// last, at the given precision, and returns the logits [batch·seq, vocab].
func forwardLogits(t *testing.T, config string, prompt []float32, tokens [][]int, precision levers.Precision) ([]float32, int) {
	t.Helper()
	seq := genPrompt + genTokens - 1
	c := tinyLLM(t, config, seq, genBatch)
	m, err := c.Build()
	if err != nil {
		t.Fatal(err)
	}
	prog := loadOnHost(t, engine.Spec{Inputs: m.Inputs(), Blocks: m.Blocks, Passes: []*gorgonia.Node{m.Output}, Precision: precision})
	if err := m.InitParams(1, prog.SetInput); err != nil {
		t.Fatal(err)
	}
	ids := make([]float32, 0, genBatch*seq)
	for s := range genBatch {
		ids = append(ids, prompt[s*genPrompt:(s+1)*genPrompt]...)
		for _, tok := range tokens[s][:genTokens-1] {
			ids = append(ids, float32(tok))
		}
	}
	if err := prog.SetInput(m.Input, ids); err != nil {
		t.Fatal(err)
	}
	if err := prog.RunPass(0); err != nil {
		t.Fatal(err)
	}
	logits, err := prog.Read(m.Output)
	if err != nil {
		t.Fatal(err)
	}
	return logits, seq
}

// TestGenerationMatchesForward checks, for each family (GQA, qwen2's
// biases, an untied head with llama3's rope, GPT-2's learned positions),
// that the logits of every generated position equal those of the llm
// workload's forward pass over the same tokens, to float32 rounding (the
// cache's attention sums in another order than the fused attention's),
// and that the greedy tokens are the forward logits' argmax; in bf16 the
// logits equal to its rounding (both store them in 16 bits), where a tie
// at bf16's resolution may pick another token than the argmax.
func TestGenerationMatchesForward(t *testing.T) {
	for _, tc := range tinyLLMs {
		for _, precision := range []levers.Precision{levers.FP32, levers.BF16} {
			t.Run(tc.name+"/"+string(precision), func(t *testing.T) {
				checkMatchesForward(t, tc.config, precision)
			})
		}
	}
}

// checkMatchesForward is TestGenerationMatchesForward for one config and
// precision.
func checkMatchesForward(t *testing.T, config string, precision levers.Precision) {
	got := generate(t, config, device.NewHost(), engine.Resident{}, precision, precision)
	vocab := len(got.logits[0]) / genBatch
	want, seq := forwardLogits(t, config, genPromptIDs(vocab), got.tokens, precision)
	rel := 1e-5
	if precision.Half() {
		rel = 1.0 / 128 // two ulps of bf16 at the largest logit
	}
	for i, logits := range got.logits {
		for s := range genBatch {
			row := want[(s*seq+genPrompt-1+i)*vocab:][:vocab]
			if err := closeLogits(logits[s*vocab:(s+1)*vocab], row, rel); err != nil {
				t.Fatalf("generated token %d of sequence %d: %v", i, s, err)
			}
			if tok := argmax(row); got.tokens[s][i] != tok && !precision.Half() {
				t.Errorf("generated token %d of sequence %d is %d, the forward pass's argmax %d", i, s, got.tokens[s][i], tok)
			}
		}
	}
}

// TestGenerationHalfCache checks, for each family, that a generation
// whose caches store bf16 or fp16 (float32 weights) gives logits near
// those of float32 caches: within four times the keys' and values'
// rounding (2^-9 relative in bf16, with its 8-bit mantissa; 2^-12 in
// fp16) of the largest logit's magnitude (the tiny models stay within
// one). A cache read at the wrong position, or products run in 16 bits
// on float32 operands, are far outside.
func TestGenerationHalfCache(t *testing.T) {
	for _, tc := range tinyLLMs {
		want := generate(t, tc.config, device.NewHost(), engine.Resident{}, levers.FP32, levers.FP32)
		for _, kv := range []struct {
			p   levers.Precision
			rel float64
		}{{levers.BF16, 1.0 / 128}, {levers.FP16, 1.0 / 1024}} {
			t.Run(tc.name+"/kv="+string(kv.p), func(t *testing.T) {
				got := generate(t, tc.config, device.NewHost(), engine.Resident{}, levers.FP32, kv.p)
				vocab := len(want.logits[0]) / genBatch
				for i := range want.logits {
					for s := range genBatch {
						if !slices.Equal(got.tokens[s][:i], want.tokens[s][:i]) {
							return // an earlier token differs: the inputs differ from here
						}
						if err := closeLogits(got.logits[i][s*vocab:(s+1)*vocab], want.logits[i][s*vocab:(s+1)*vocab], kv.rel); err != nil {
							t.Fatalf("generated token %d of sequence %d: %v", i, s, err)
						}
					}
				}
			})
		}
	}
}

// closeLogits reports the first logit of got that differs from want's by
// more than rounding through the model: rel of want's largest magnitude
// (1e-5 in float32), plus 1e-6.
func closeLogits(got, want []float32, rel float64) error {
	var scale float64
	for _, w := range want {
		scale = max(scale, math.Abs(float64(w)))
	}
	tol := rel*scale + 1e-6
	for j := range want {
		if d := math.Abs(float64(got[j] - want[j])); d > tol || math.IsNaN(float64(got[j])) {
			return fmt.Errorf("logit %d is %g, want %g (tolerance %.3g)", j, got[j], want[j], tol)
		}
	}
	return nil
}

// TestGenerationPlacements checks that a generation on the simulated
// device gives the host's logits and tokens bit for bit, every block
// resident, paged through a window smaller than the layers (each policy:
// the caches are written back when their block is evicted), split
// between host, device and cache, and in managed memory, with float32
// caches and with bf16 ones (written back as stored).
func TestGenerationPlacements(t *testing.T) {
	for _, tc := range tinyLLMs {
		for _, kv := range []levers.Precision{levers.FP32, levers.BF16} {
			t.Run(tc.name+"/kv="+string(kv), func(t *testing.T) { checkPlacements(t, tc.config, kv) })
		}
	}
}

// checkPlacements is TestGenerationPlacements for one config and cache
// type.
func checkPlacements(t *testing.T, config string, kv levers.Precision) {
	want := generate(t, config, device.NewHost(), engine.Resident{}, levers.FP32, kv)
	n := tinyLLM(t, config, genContext, genBatch).Layers + 2 // embed, the layers, head
	mixed := slices.Repeat([]engine.Where{engine.InCache}, n)
	mixed[0], mixed[n-1] = engine.OnHost, engine.OnDevice
	for _, pl := range []engine.Placement{
		engine.Resident{},
		engine.Paged{Cache: cache.Config{Policy: cache.Window, Window: 1}},
		engine.Paged{Cache: cache.Config{Policy: cache.WindowPaged, Window: 1}},
		engine.Paged{Cache: cache.Config{Policy: cache.Auto, Window: 2}},
		engine.Hybrid{Blocks: mixed, Cache: cache.Config{Policy: cache.Auto, Window: 1}},
		engine.Managed{PageSize: cache.MinPageSize},
	} {
		dev := device.NewSim(1<<30, nil)
		got := generate(t, config, dev, pl, levers.FP32, kv)
		dev.Close()
		if !slices.EqualFunc(got.tokens, want.tokens, slices.Equal) {
			t.Errorf("%T%+v: tokens %v, on the host %v", pl, pl, got.tokens, want.tokens)
		}
		for i := range want.logits {
			if !slices.Equal(got.logits[i], want.logits[i]) {
				t.Errorf("%T%+v: generated token %d's logits differ from the host's", pl, pl, i)
				break
			}
		}
	}
}

// TestGenerationCopiesAndPeak checks a plan's figures for generation on
// the simulated device: the measured peak equals the footprint computed
// before allocating (the caches counted in their blocks' areas) and every
// point of the timeline (which walks each pass once) sums to it, and the
// copies of one prefill and one decode in steady state (the second
// generation of two tokens) equal the dry run's (Schedule.Copies walks
// each pass once), the caches' write-backs included.
func TestGenerationCopiesAndPeak(t *testing.T) {
	for _, kv := range []levers.Precision{levers.FP32, levers.BF16} {
		t.Run("kv="+string(kv), func(t *testing.T) { checkCopiesAndPeak(t, kv) })
	}
}

// checkCopiesAndPeak is TestGenerationCopiesAndPeak with caches of kv:
// their bytes 4 an element, or 2.
func checkCopiesAndPeak(t *testing.T, kv levers.Precision) {
	llm := tinyLLM(t, tinyLLMs[0].config, genContext, genBatch)
	n := llm.Layers + 2
	mixed := slices.Repeat([]engine.Where{engine.InCache}, n)
	mixed[0], mixed[n-1] = engine.OnHost, engine.OnDevice
	elem := 4
	if kv.Half() {
		elem = 2
	}
	for _, pl := range []engine.Placement{
		engine.Resident{},
		engine.Paged{Cache: cache.Config{Policy: cache.Window, Window: 1}},
		engine.Paged{Cache: cache.Config{Policy: cache.WindowPaged, Window: 2}},
		engine.Paged{Cache: cache.Config{Policy: cache.Auto, Window: 2}},
		engine.Hybrid{Blocks: mixed, Cache: cache.Config{Policy: cache.Auto, Window: 1}},
	} {
		config := GenerateConfig{Model: llm.Model, Layers: llm.Layers, Batch: genBatch, Prompt: genPrompt, Context: genContext, KVCache: kv}
		g, err := config.Build()
		if err != nil {
			t.Fatal(err)
		}
		plan, err := engine.Compile(g.Spec())
		if err != nil {
			t.Fatal(err)
		}
		dev := device.NewSim(1<<30, nil)
		free, _, _ := dev.MemInfo()
		fp := plan.Footprint(pl, free)
		prog, err := plan.Load(dev, pl)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.InitParams(1, prog.SetInput); err != nil {
			t.Fatal(err)
		}
		var before device.Stats
		for range 2 {
			before = dev.Stats()
			if _, err := g.Generate(prog, genPromptIDs(llm.Model.Vocab), 2, nil); err != nil {
				t.Fatal(err)
			}
		}
		after := dev.Stats()
		fed := []*gorgonia.Node{g.Prefill.IDs, g.Prefill.Positions, g.Decode.IDs, g.Decode.Positions}
		copies, err := plan.Copies(pl, prog.Window(), 1, fed)
		if err != nil {
			t.Fatal(err)
		}
		if up, down := after.UploadBytes-before.UploadBytes, after.DownloadBytes-before.DownloadBytes; copies.UploadBytes != up || copies.DownloadBytes != down {
			t.Errorf("%T%+v: dry run %d bytes up, %d down; the run copied %d up, %d down", pl, pl, copies.UploadBytes, copies.DownloadBytes, up, down)
		}
		if after.PeakBytes != fp.Device {
			t.Errorf("%T%+v: measured peak %d bytes, footprint %d", pl, pl, after.PeakBytes, fp.Device)
		}
		tl, err := plan.Timeline(pl, fp.Window)
		if err != nil {
			t.Fatal(err)
		}
		for _, pt := range tl {
			if pt.Total() != fp.Device {
				t.Errorf("%T%+v: the timeline's point at step %d holds %d bytes, the footprint %d", pl, pl, pt.Step, pt.Total(), fp.Device)
				break
			}
		}
		if b := plan.Bytes(); b.State != int64(elem*2*genBatch*llm.Model.KVHeads*genContext*llm.Model.HeadDim*llm.Layers) || b.State != config.CacheBytes() {
			t.Errorf("state of %d bytes, want the caches' 2·batch·kv heads·context·head dim·layers elements of %d bytes, %d", b.State, elem, config.CacheBytes())
		}
		prog.Close()
		dev.Close()
	}
}

// TestGenerationPassCopies checks the dry run of one decode pass
// (engine.Schedule.PassCopies) against a run's: the copies the third
// pass of a generation makes, a decode after a decode, under each
// placement; and that the passes' work, split by side
// (engine.Schedule.PassWork), adds up to the schedule's.
func TestGenerationPassCopies(t *testing.T) {
	llm := tinyLLM(t, tinyLLMs[0].config, genContext, genBatch)
	n := llm.Layers + 2
	mixed := slices.Repeat([]engine.Where{engine.InCache}, n)
	mixed[0], mixed[n-1] = engine.OnHost, engine.OnDevice
	for _, pl := range []engine.Placement{
		engine.Resident{},
		engine.Paged{Cache: cache.Config{Policy: cache.Window, Window: 1}},
		engine.Paged{Cache: cache.Config{Policy: cache.WindowPaged, Window: 2}},
		engine.Paged{Cache: cache.Config{Policy: cache.Auto, Window: 2}},
		engine.Hybrid{Blocks: mixed, Cache: cache.Config{Policy: cache.Auto, Window: 1}},
	} {
		g, err := GenerateConfig{Model: llm.Model, Layers: llm.Layers, Batch: genBatch, Prompt: genPrompt, Context: genContext}.Build()
		if err != nil {
			t.Fatal(err)
		}
		plan, err := engine.Compile(g.Spec())
		if err != nil {
			t.Fatal(err)
		}
		dev := device.NewSim(1<<30, nil)
		prog, err := plan.Load(dev, pl)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.InitParams(1, prog.SetInput); err != nil {
			t.Fatal(err)
		}
		var at [3]device.Stats
		if _, err := g.Generate(prog, genPromptIDs(llm.Model.Vocab), 3, func(i int, _ []float32) { at[i] = dev.Stats() }); err != nil {
			t.Fatal(err)
		}
		prog.Close()
		c, err := plan.PassCopies(pl, prog.Window(), 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if up, down := at[2].UploadBytes-at[1].UploadBytes, at[2].DownloadBytes-at[1].DownloadBytes; c.UploadBytes != up || c.DownloadBytes != down {
			t.Errorf("%T%+v: a decode pass's dry run %d bytes up, %d down; the run's %d up, %d down", pl, pl, c.UploadBytes, c.DownloadBytes, up, down)
		}
		var flops, bytes int64
		for p := range plan.Passes() {
			d, h, err := plan.PassWork(pl, p)
			if err != nil {
				t.Fatal(err)
			}
			flops, bytes = flops+d.FLOPs+h.FLOPs, bytes+d.Bytes+h.Bytes
		}
		if w := plan.Work(); flops != w.FLOPs || bytes != w.Bytes {
			t.Errorf("%T%+v: the passes' work %d FLOPs, %d bytes; the schedule's %d, %d", pl, pl, flops, bytes, w.FLOPs, w.Bytes)
		}
	}
}
