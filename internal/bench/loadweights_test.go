package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gorgonia.org/gorgonia"

	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/gguf"
	"gpuz/internal/hfconfig"
	"gpuz/internal/models"
	"gpuz/internal/quant"
)

// TestLoadWeightsParams writes SmolLM2-135M's first two layers, drawn
// from seed 7, as an F32 GGUF file (llama.cpp's tensors: the queries' and
// keys' rows permuted, q, k and v apart), loads the file into a program
// whose parameters were drawn from seed 99, and reads every parameter
// back: each equals the preset's at seed 7, bit for bit, with the weights
// in float32 and stored in Q8_0 and Q4_K (the file's floats quantized as
// the drawn ones are). It fails with the rows left in the file's order.
func TestLoadWeightsParams(t *testing.T) {
	preset, err := hfconfig.Load("smollm2-135m")
	if err != nil {
		t.Fatal(err)
	}
	const layers = 2
	path := filepath.Join(t.TempDir(), "smollm2.gguf")
	writeGGUF(t, preset, layers, 7, path)
	file, err := hfconfig.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []quant.Kind{quant.F32, quant.Q8_0, quant.Q4_K} {
		t.Run(kind.String(), func(t *testing.T) {
			want := loadedParams(t, preset, layers, kind, 7, nil)
			got := loadedParams(t, file, layers, kind, 99, file.GGUF)
			if len(got) != len(want) {
				t.Fatalf("%d parameters, want %d", len(got), len(want))
			}
			for name, w := range want {
				if !slices.Equal(got[name], w) {
					t.Errorf("%s: loaded from the file, it differs from the preset's at seed 7", name)
				}
			}
		})
	}
}

// TestLoadWeightsStops loads a file under a context already done: the
// load stops before its first parameter with the context's error, so a
// signal during --load-weights stops the run's setup (issue 44 item 5).
// It fails with loadWeights' check of ctx dropped.
func TestLoadWeightsStops(t *testing.T) {
	preset, err := hfconfig.Load("smollm2-135m")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "smollm2.gguf")
	writeGGUF(t, preset, 1, 7, path)
	file, err := hfconfig.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Workload: &models.LLMConfig{Model: file, Layers: 1, SeqLen: 4, Feed: models.Feed{Samples: 1, Batch: 1, Epochs: 1}},
		Task: TaskEval, Batch: 1, LoadWeights: file.GGUF}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := hostRun(t, opts, 99).loadWeights(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("loadWeights under a done context: %v, want %v", err, context.Canceled)
	}
}

// writeGGUF writes m's first layers drawn from seed as an F32 GGUF file at
// path, as gpuz llm export does.
func writeGGUF(t *testing.T, m hfconfig.Model, layers int, seed uint64, path string) {
	t.Helper()
	model, err := models.LLMConfig{Model: m, Layers: layers, SeqLen: 1, Feed: models.Feed{Samples: 1, Batch: 1, Epochs: 1}}.Build()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lw, err := gguf.Llama{Config: m.Config, Layers: layers, Name: "t", Type: gguf.F32}.NewWriter(f)
	if err != nil {
		t.Fatal(err)
	}
	constants := map[*gorgonia.Node]bool{}
	for _, c := range model.Constants {
		constants[c.Node] = true
	}
	if err := model.InitParams(seed, func(p *gorgonia.Node, v []float32) error {
		if constants[p] {
			return nil
		}
		return lw.Param(p.Name(), v)
	}); err != nil {
		t.Fatal(err)
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
}

// loadedParams compiles m's evaluation with its weights in kind on the
// host, draws the parameters from seed, loads file over them when it is
// not nil, and returns every parameter as the program reads it back.
func loadedParams(t *testing.T, m hfconfig.Model, layers int, kind quant.Kind, seed uint64, file *hfconfig.GGUF) map[string][]float32 {
	t.Helper()
	opts := Options{Workload: &models.LLMConfig{Model: m, Layers: layers, SeqLen: 4, Feed: models.Feed{Samples: 1, Batch: 1, Epochs: 1}},
		Task: TaskEval, Batch: 1, LoadWeights: file}
	opts.Weights = kind
	run := hostRun(t, opts, seed)
	if file != nil {
		if err := run.loadWeights(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	model, prog := run.model, run.prog
	out := map[string][]float32{}
	for _, b := range model.Blocks {
		for _, p := range slices.Concat(b.Params, b.Frozen) {
			v, err := prog.Read(p)
			if err != nil {
				t.Fatal(fmt.Errorf("%s: %w", p.Name(), err))
			}
			out[p.Name()] = v
		}
	}
	return out
}

// hostRun compiles opts' model, loads it resident on the host and draws
// its parameters from seed: a mode's run up to its weights' load, its
// program closed when the test ends.
func hostRun(t *testing.T, opts Options, seed uint64) *modeRun {
	t.Helper()
	model, sched, err := opts.compile()
	if err != nil {
		t.Fatal(err)
	}
	prog, err := sched.Load(device.NewHost(), engine.Resident{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	if err := model.InitParams(seed, prog.SetInput); err != nil {
		t.Fatal(err)
	}
	return &modeRun{opts: opts, model: model, prog: prog}
}
