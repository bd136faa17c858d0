package bench

import (
	"runtime"
	"testing"

	"gpuz/internal/device"
	"gpuz/internal/levers"
	"gpuz/internal/models"
)

// planAllocBound is the most a plan of any model in
// TestPlanAllocationBounded may allocate: a plan costs memory in
// proportion to the number of blocks (these have three or four, and a
// plan of them allocates under 1 MiB).
const planAllocBound = 8 << 20

// TestPlanAllocationBounded plans models whose declared sizes are far
// beyond what the plan holds (issue 44 item 1): a sequence of 2²⁴ tokens,
// whose rotary tables are 384 MiB, and a layer 2048 wide under LoRA,
// whose adapters' placements are 144 MiB. The rotary tables and LoRA's
// constants were made to build the graph, so that `gpuz plan` with
// --seq-len 2147483647 died of "fatal error: out of memory" and 2²⁴ took
// half a minute and a gigabyte; a plan (PlanMemory, which a run's
// address-space check calls too, and fit's Planner) allocates less than a
// fixed bound, whatever the sizes it plans.
func TestPlanAllocationBounded(t *testing.T) {
	long := tinyLLM(t, tinyLlama)
	long.SeqLen, long.Samples, long.Batch = 1<<24, 1, 1
	wide := tinyLLM(t, `{"model_type": "llama", "hidden_size": 2048, "intermediate_size": 64, "num_hidden_layers": 1,
		"num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 64, "max_position_embeddings": 64,
		"tie_word_embeddings": true, "hidden_act": "silu"}`)
	wide.Samples, wide.Batch = 1, 1
	for _, tt := range []struct {
		name string
		llm  *models.LLMConfig
		lora levers.LoRA
	}{
		{"sequence of 2^24", long, levers.LoRA{}},
		{"sequence of 2^24 under LoRA", long, levers.LoRA{Rank: 16, Alpha: 32}},
		{"2048 wide under LoRA", wide, levers.LoRA{Rank: 16, Alpha: 32, Targets: levers.AllLinear}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.llm.Validate(); err != nil {
				t.Fatal(err)
			}
			opts := Options{ModelName: "llm", Workload: tt.llm, Task: TaskTrain, Modes: []Mode{ModeCUDA, ModeCache},
				Samples: tt.llm.Samples, Batch: tt.llm.Batch, Epochs: 1, Adam: DefaultAdam(), ClipNorm: 1, Seed: 1, Threads: 1,
				Config: Config{Set: levers.Set{LoRA: tt.lora}},
				NewGPU: func() (device.Device, error) { return device.NewSim(1<<30, nil), nil }}
			for _, plan := range []struct {
				name string
				plan func() error
			}{
				{"PlanMemory (plan, a run's checks)", func() error {
					_, err := PlanMemory(opts, PlanOptions{})
					return err
				}},
				{"Planner (fit)", func() error {
					p, err := NewPlanner(opts)
					if err != nil {
						return err
					}
					defer p.Close()
					_, free, _ := p.GPU()
					_, err = p.Plan(ModeCUDA, opts.Config, free, true)
					return err
				}},
			} {
				if allocated := totalAlloc(t, plan.plan); allocated > planAllocBound {
					t.Errorf("%s of %s allocated %d MiB, want at most %d MiB", plan.name, tt.name, allocated>>20, planAllocBound>>20)
				}
			}
		})
	}
}

// totalAlloc returns the bytes f allocates on the heap, failing the test
// on f's error.
func totalAlloc(t *testing.T, f func() error) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := f()
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	return after.TotalAlloc - before.TotalAlloc
}
