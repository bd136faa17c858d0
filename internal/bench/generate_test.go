package bench

import (
	"context"
	"slices"
	"testing"

	"gpuz/internal/device"
)

// generateOptions is a generation of the tiny Llama-like model (grouped
// kv heads, biases): 2 sequences, a prompt of 5 tokens, 4 generated, 3
// repetitions, the first a warm-up.
func generateOptions(t *testing.T, modes ...Mode) Options {
	t.Helper()
	llm := tinyLLM(t, tinyLlama)
	llm.SeqLen, llm.Samples, llm.Batch = 5, 2, 2
	return Options{ModelName: "llm", Workload: llm, Task: TaskGenerate, Generate: GenerateOptions{Prompt: 5, Tokens: 4},
		Modes: modes, Samples: 2, Batch: 2, Epochs: 3, Warmup: 1, Seed: 3, Threads: 1,
		NewGPU: func() (device.Device, error) { return device.NewSim(64<<20, nil), nil }, GPUName: "sim"}
}

// TestGenerateRun runs a generation in the cpu and cuda modes: the same
// tokens, every repetition's phases counted, and the caches' bytes in the
// header.
func TestGenerateRun(t *testing.T) {
	res, err := Run(context.Background(), generateOptions(t, ModeCPU, ModeCUDA))
	if err != nil {
		t.Fatal(err)
	}
	// 2 layers · 2 kv heads · head dim 6 · 8 positions · 2 sequences,
	// keys and values, float32.
	if want := int64(2 * 2 * 2 * 6 * 8 * 2 * 4); res.Header.KVCacheBytes != want || res.Header.Context != 8 {
		t.Errorf("header: %d cache bytes at context %d, want %d at 8", res.Header.KVCacheBytes, res.Header.Context, want)
	}
	for _, m := range res.Modes {
		if m.Status.Kind != StatusOK {
			t.Fatalf("%s: %v", m.Mode, m.Status)
		}
		if len(m.Epochs) != 3 || len(m.Generated) != 2 || len(m.Generated[0]) != 4 {
			t.Fatalf("%s: %d generations, tokens %v; want 3, 2 sequences of 4", m.Mode, len(m.Epochs), m.Generated)
		}
		for _, e := range m.Epochs {
			if g := e.Generation; g == nil || g.PrefillTokens != 10 || g.DecodeTokens != 6 {
				t.Errorf("%s: generation %+v, want 10 prefill tokens and 6 decoded", m.Mode, g)
			}
		}
	}
	if a, b := res.Modes[0], res.Modes[1]; !slices.EqualFunc(a.Generated, b.Generated, slices.Equal) || a.Epochs[1].Value != b.Epochs[1].Value {
		t.Errorf("cpu generated %v (value %v), cuda %v (%v): want the same", a.Generated, a.Epochs[1].Value, b.Generated, b.Epochs[1].Value)
	}
}

// TestGenerateInterrupted cancels a generation's run after its first
// repetition: that one is kept, the mode is interrupted, and the next
// mode is skipped.
func TestGenerateInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := generateOptions(t, ModeCPU, ModeCUDA)
	opts.Progress = func(e Event) {
		if e.Epoch != nil {
			cancel()
		}
	}
	res, err := Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	cpu, cuda := res.Modes[0], res.Modes[1]
	if cpu.Status.Kind != StatusInterrupted || len(cpu.Epochs) != 1 {
		t.Errorf("cpu: %v with %d generations, want interrupted with 1", cpu.Status, len(cpu.Epochs))
	}
	if cuda.Status.Kind != StatusSkipped {
		t.Errorf("cuda: %v, want skipped", cuda.Status)
	}
}
