package main

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"gpuz/internal/bench"
	"gpuz/internal/cache"
	"gpuz/internal/levers"
	"gpuz/internal/models"
	"gpuz/internal/perfmodel"
)

// planSmall plans workload's task (the llm workload of model when model
// is not "") at --scale small in the cpu mode under both recompute
// settings and precision, and returns the names of its schedules' kernels
// (engine.Schedule.Work), as the performance model sees them.
func planSmall(t *testing.T, workload models.Workload, model string, attention levers.Attention, task bench.Task, precision levers.Precision) []string {
	t.Helper()
	o := &WorkloadOptions{IO: newIOStreams(&bytes.Buffer{}, &bytes.Buffer{}), Workload: workload, Model: model, Task: task,
		Modes: []bench.Mode{bench.ModeCPU}, Scale: models.ScaleSmall, Sizes: map[string]int{}, Warmup: 1, LR: bench.DefaultLR,
		Seed: 1, Threads: 1, Device: "cpu", Cache: cache.Config{Policy: cache.Window, Window: 3}, Precision: precision,
		Attention: attention}
	if err := o.resolveModel(context.Background()); err != nil {
		t.Fatal(err)
	}
	opts, err := o.check()
	if err != nil {
		t.Fatal(err)
	}
	p, err := bench.PlanMemory(opts, bench.PlanOptions{Recomputes: []levers.Recompute{levers.RecomputeNone, levers.RecomputeBlocks}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range p.Schedules {
		for _, k := range s.Work.Kernels {
			if !slices.Contains(names, k.Name) {
				names = append(names, k.Name)
			}
		}
	}
	return names
}

// TestEveryKernelHasAClass plans every workload at --scale small, both
// tasks, in fp32 and bf16 (its conversions), under both recompute
// settings, the llm workload for both its families (smollm2-135m for the
// Llama family's, gpt2 for GPT-2's), and fails on any kernel of their
// schedules that the performance model has no class for
// (perfmodel.ClassOf): a kernel a class does not name is priced as
// element-wise, which a product or a normalisation is not. The llm plans
// must run the kernels of their family, so that a plan that lost them
// does not pass unseen.
func TestEveryKernelHasAClass(t *testing.T) {
	if testing.Short() {
		t.Skip("plans every workload")
	}
	for _, tc := range []struct {
		workload  models.Workload
		model     string
		attention levers.Attention
		has       []string // kernels the training plan must run
	}{
		{models.Linear, "", "", []string{"Linear", "LinearWeightGrad", "LeakyReLU"}},
		{models.Attention, "", "", []string{"AttentionProbs", "LayerNorm", "Embedding"}},
		{models.Attention, "", levers.AttentionFused, []string{"FusedAttention", "FusedAttentionLSE", "FusedAttentionGrad"}},
		{models.Resnet, "", "", []string{"Conv2d", "Conv2dBiasGrad"}},
		{models.LLM, "smollm2-135m", levers.AttentionEager, []string{"TokenEmbedding", "Projection", "RMSNorm", "RMSNormInputGrad", "RMSNormWeightGrad",
			"Rotary", "RotaryGrad", "SwiGLU", "SwiGLUGrad", "AttentionMix", "EmbeddingGrad"}},
		{models.LLM, "smollm2-135m", levers.AttentionFused, []string{"FusedAttention", "FusedAttentionLSE", "FusedAttentionGrad"}},
		{models.LLM, "gpt2", "", []string{"TokenEmbedding", "AddPositions", "PositionsGrad", "Conv1D", "Conv1DInputGrad",
			"Conv1DWeightGrad", "GELUTanh", "GELUTanhGrad", "LayerNorm", "Projection"}},
	} {
		name := tc.workload.Name + " " + tc.model + " " + string(tc.attention)
		for _, task := range []bench.Task{bench.TaskTrain, bench.TaskEval} {
			for _, precision := range []levers.Precision{levers.FP32, levers.BF16} {
				kernels := planSmall(t, tc.workload, tc.model, tc.attention, task, precision)
				for _, k := range kernels {
					if _, ok := perfmodel.ClassOf(k); !ok {
						t.Errorf("%s %s %s: kernel %s is in no class of the performance model", name, task, precision, k)
					}
				}
				if task != bench.TaskTrain {
					continue
				}
				for _, k := range tc.has {
					if !slices.Contains(kernels, k) {
						t.Errorf("%s %s %s: no kernel %s among %v", name, task, precision, k, kernels)
					}
				}
			}
		}
	}
}

// TestLLMPlanProductsDominate plans the training of llama-3.2-1b on
// sequences of 1024 in the cuda mode of sim:rtx4060-laptop (the uncalibrated
// profile): the products class takes the largest part of the kernels'
// model time, more than half of it, as a 1B model's products do (6 FLOPs
// a parameter a token); each class's part is the model time of its
// kernels alone.
func TestLLMPlanProductsDominate(t *testing.T) {
	privateLedger(t)
	o := &WorkloadOptions{IO: newIOStreams(&bytes.Buffer{}, &bytes.Buffer{}), Workload: models.LLM, Model: "llama-3.2-1b",
		Task: bench.TaskTrain, Modes: []bench.Mode{bench.ModeCUDA}, Scale: models.ScaleFull,
		Sizes: map[string]int{"seq-len": 1024, "batch": 1}, Warmup: 1, LR: bench.DefaultLR, Seed: 1, Threads: 1,
		Device: "sim:rtx4060-laptop", Cache: cache.Config{Policy: cache.Window, Window: 3}}
	if err := o.resolveModel(context.Background()); err != nil {
		t.Fatal(err)
	}
	opts, err := o.benchOptions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p, err := bench.PlanMemory(opts, bench.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Modes) != 1 || p.Modes[0].Prediction == nil {
		t.Fatalf("plan modes %+v, want the cuda mode predicted", p.Modes)
	}
	pr := p.Modes[0].Prediction
	profile, err := perfmodel.Lookup(pr.Profile)
	if err != nil {
		t.Fatal(err)
	}
	byClass := map[string][]perfmodel.Kernel{}
	for _, k := range pr.Kernels {
		class, ok := perfmodel.ClassOf(k.Name)
		if !ok {
			t.Errorf("kernel %s is in no class", k.Name)
		}
		byClass[class] = append(byClass[class], k)
	}
	parts := map[string]time.Duration{}
	var total time.Duration
	for class, kernels := range byClass {
		parts[class] = perfmodel.Predict(kernels, perfmodel.Copies{}, profile, profile.Efficiency()).Model
		total += parts[class]
	}
	for class, d := range parts {
		if class != perfmodel.ClassProducts && d >= parts[perfmodel.ClassProducts] {
			t.Errorf("class %s takes %v, the products %v: want the products largest (%v)", class, d, parts[perfmodel.ClassProducts], parts)
		}
	}
	if 2*parts[perfmodel.ClassProducts] <= total {
		t.Errorf("the products take %v of the kernels' %v, want more than half (%v)", parts[perfmodel.ClassProducts], total, parts)
	}
	t.Logf("kernels' model time by class on %s: %v of %v", profile.Name, parts, total)
}
