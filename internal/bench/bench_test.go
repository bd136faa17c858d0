package bench

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/hfconfig"
	"gpuz/internal/hostmath"
	"gpuz/internal/levers"
	"gpuz/internal/models"
)

// smallWorkloads are the workloads at small scale, with their batch sizes.
func smallWorkloads(t *testing.T) map[string]Options {
	t.Helper()
	linear, err := models.LinearPreset(models.ScaleSmall)
	if err != nil {
		t.Fatal(err)
	}
	resnet, err := models.ResnetPreset(models.ScaleSmall)
	if err != nil {
		t.Fatal(err)
	}
	attention, err := models.AttentionPreset(models.ScaleSmall)
	if err != nil {
		t.Fatal(err)
	}
	llama, gpt2 := tinyLLM(t, tinyLlama), tinyLLM(t, tinyGPT2)
	return map[string]Options{
		"linear":    {ModelName: "linear", Workload: &linear, Samples: linear.Samples, Batch: linear.Batch},
		"resnet":    {ModelName: "resnet", Workload: &resnet, Samples: resnet.Samples, Batch: resnet.Batch},
		"attention": {ModelName: "attention", Workload: &attention, Samples: attention.Samples, Batch: attention.Batch},
		"llm-llama": {ModelName: "llm", Workload: llama, Samples: llama.Samples, Batch: llama.Batch},
		"llm-gpt2":  {ModelName: "llm", Workload: gpt2, Samples: gpt2.Samples, Batch: gpt2.Batch},
		// LoRA on every linear layer: frozen weights in every layer's
		// block, the embedding's and the head's blocks read-only (the
		// precision tests run it in bf16 and fp16: frozen weights in 16
		// bits with no master).
		"llm-llama-lora": {ModelName: "llm", Workload: llama, Samples: llama.Samples, Batch: llama.Batch,
			Config: Config{Set: levers.Set{LoRA: levers.LoRA{Rank: 2, Alpha: 4, Targets: levers.AllLinear}}}},
	}
}

// Tiny configurations of the llm workload's two families: a Llama-like
// decoder with grouped-query attention, q/k/v biases (as Qwen2's) and a
// tied embedding, and a GPT-2 with its learned positions, also tied.
const (
	tinyLlama = `{"model_type": "qwen2", "hidden_size": 24, "intermediate_size": 40, "num_hidden_layers": 2,
		"num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 53, "max_position_embeddings": 64,
		"rms_norm_eps": 1e-6, "tie_word_embeddings": true, "hidden_act": "silu"}`
	tinyGPT2 = `{"model_type": "gpt2", "n_embd": 24, "n_layer": 2, "n_head": 3, "n_positions": 16, "vocab_size": 47,
		"resid_pdrop": 0, "embd_pdrop": 0, "attn_pdrop": 0}`
)

// tinyLLM returns the llm workload of config with its two layers, sequences
// of 8 tokens, 4 samples in batches of 2.
func tinyLLM(t *testing.T, config string) *models.LLMConfig {
	t.Helper()
	cfg, err := hfconfig.Parse([]byte(config))
	if err != nil {
		t.Fatal(err)
	}
	c := &models.LLMConfig{Model: hfconfig.Model{Config: cfg, Name: "tiny"}, Layers: cfg.Layers, SeqLen: 8,
		Feed: models.Feed{Samples: 4, Batch: 2, Epochs: 3}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// trained is what a few training steps leave behind.
type trained struct {
	losses []float32
	params [][]float32
	peak   int64
	plan   engine.Footprint
}

// checkSame fails t unless got has want's losses and parameters, bit for
// bit; label names want in the losses' message and owner in the
// parameters' ("cuda mode", "cuda mode's").
func (got trained) checkSame(t *testing.T, want trained, label, owner string) {
	t.Helper()
	if !slices.Equal(got.losses, want.losses) {
		t.Errorf("losses %v, %s %v", got.losses, label, want.losses)
	}
	for i := range want.params {
		if !slices.Equal(got.params[i], want.params[i]) {
			t.Fatalf("parameter %d differs from %s", i, owner)
		}
	}
}

// trainOn runs steps batches of a workload on a fresh simulated device under
// a placement and reads back every parameter.
func trainOn(t *testing.T, opts Options, task Task, pl engine.Placement, steps int) trained {
	t.Helper()
	return trainOnDevice(t, opts, task, pl, steps, device.NewSim(64<<20, nil))
}

// trainOnDevice is trainOn on a given device.
func trainOnDevice(t *testing.T, opts Options, task Task, pl engine.Placement, steps int, dev device.Device) trained {
	t.Helper()
	opts.Task, opts.Seed = task, 5
	if opts.Adam == (hostmath.Adam{}) { // the reference's, unless the test sets its own
		opts.Adam, opts.ClipNorm = DefaultAdam(), 1
	}
	model, sched, err := opts.compile()
	if err != nil {
		t.Fatal(err)
	}
	free, _, _ := dev.MemInfo()
	var r trained
	r.plan = sched.Footprint(pl, free)
	prog, err := sched.Load(dev, pl)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if err := model.InitParams(opts.Seed, prog.SetInput); err != nil {
		t.Fatal(err)
	}
	data := opts.Workload.Data(opts.Seed)
	batches := opts.Samples / opts.Batch
	for i := range steps {
		v, err := runBatch(prog, model, data, i%batches, opts.Batch, opts.GradAccum)
		if err != nil {
			t.Fatal(err)
		}
		r.losses = append(r.losses, v)
	}
	for _, b := range model.Blocks {
		for _, p := range b.Params {
			v, err := prog.Read(p)
			if err != nil {
				t.Fatal(err)
			}
			r.params = append(r.params, v)
		}
	}
	r.peak = dev.Stats().PeakBytes
	if total := dev.Stats().TotalBytes; total > 0 && r.peak > total {
		t.Errorf("the device held %d bytes at its peak, over its capacity %d", r.peak, dev.Stats().TotalBytes)
	}
	return r
}

// TestCacheMatchesCUDA trains and evaluates every workload at small scale on
// the simulated device with every block resident (cuda mode) and paged
// (cache mode) under both policies, with windows of 1, 2, 3 and more blocks
// than the model has: losses and final weights must be bit-identical, and
// the device's measured peak must equal the plan's.
func TestCacheMatchesCUDA(t *testing.T) {
	for name, opts := range smallWorkloads(t) {
		for _, task := range []Task{TaskTrain, TaskEval} {
			want := trainOn(t, opts, task, engine.Resident{}, 3)
			if want.peak != want.plan.Device {
				t.Errorf("%s %s cuda: measured peak %d, plan %d", name, task, want.peak, want.plan.Device)
			}
			var placements []engine.Placement
			for _, policy := range []cache.Policy{cache.Window, cache.Auto} {
				for _, w := range []int{1, 2, 3, 100} {
					placements = append(placements, engine.Paged{Cache: cache.Config{Policy: policy, Window: w}})
				}
			}
			if task == TaskTrain {
				placements = append(placements, engine.Paged{Cache: cache.Config{Policy: cache.Auto, OptimizerOnHost: true}})
			}
			for _, pl := range placements {
				t.Run(fmt.Sprintf("%s/%s/%s-%d/host-optimizer=%v", name, task, cacheOf(pl).Policy, cacheOf(pl).Window, cacheOf(pl).OptimizerOnHost), func(t *testing.T) {
					got := trainOn(t, opts, task, pl, 3)
					got.checkSame(t, want, "cuda mode", "cuda mode's")
					if got.peak != got.plan.Device {
						t.Errorf("measured peak %d, plan %d", got.peak, got.plan.Device)
					}
				})
			}
		}
	}
}

// TestManagedUnavailable: without a GPU (--device cpu), or on a device that
// cannot allocate managed memory, the managed mode is an unavailable row
// saying why; on the simulated device it runs and completes.
func TestManagedUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		newGPU func() (device.Device, error)
		want   StatusKind
		reason string
	}{
		{"no GPU", nil, StatusUnavailable, "no GPU device given"},
		{"no managed memory", func() (device.Device, error) { return device.NewHost(), nil }, StatusUnavailable, "host cannot allocate managed memory"},
		{"sim", func() (device.Device, error) { return device.NewSim(64<<20, nil), nil }, StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := smallLinearRun(t, TaskTrain, ModeManaged)
			opts.Epochs, opts.NewGPU = 2, tc.newGPU
			m := run(t, opts).Modes[0]
			if m.Status.Kind != tc.want || !strings.Contains(m.Status.Reason, tc.reason) {
				t.Errorf("managed: %s, want %s with %q", m.Status, tc.want, tc.reason)
			}
		})
	}
}

// cacheOf is pl's cache configuration, the zero one when it pages nothing.
func cacheOf(pl engine.Placement) cache.Config {
	c, _ := pl.Paging()
	return c
}
