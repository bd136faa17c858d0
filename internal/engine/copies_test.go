package engine_test

import (
	"fmt"
	"testing"

	"gorgonia.org/gorgonia"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/hfconfig"
	"gpuz/internal/levers"
	"gpuz/internal/models"
)

// smallConfigs are the three workloads at the small scale, linear and
// attention with LoRA (frozen weights in every block; attention's head
// and embedding wholly frozen, read-only to the cache), and a tiny Llama
// with LoRA on every linear layer (q, k, v, gate and up are parts of
// packed layers, their B placed by constant inputs).
func smallConfigs(t *testing.T) []models.Config {
	t.Helper()
	var out []models.Config
	for _, w := range []models.Workload{models.Linear, models.Resnet, models.Attention} {
		c, _, err := w.Configure("small", nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	for _, tc := range []struct {
		c models.Config
		l levers.LoRA
	}{{out[0], levers.LoRA{Rank: 4}}, {out[2], levers.LoRA{Rank: 2, Alpha: 8, Targets: levers.AllLinear}}} {
		c, err := models.Apply(tc.c, levers.Set{LoRA: tc.l})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	// Its vocabulary makes the managed tests' third of its pages more
	// than none; its attention is eager, as the timeline test's saved
	// activations assume every one computed before the backward pass
	// (fused attention's log-sum-exp is computed in it).
	cfg, err := hfconfig.Parse([]byte(`{"model_type": "llama", "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
		"num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1024, "max_position_embeddings": 32,
		"rms_norm_eps": 1e-5, "tie_word_embeddings": true, "hidden_act": "silu"}`))
	if err != nil {
		t.Fatal(err)
	}
	return append(out, &models.LLMConfig{Model: hfconfig.Model{Config: cfg, Name: "tiny"}, Layers: 2, SeqLen: 6, Attention: levers.AttentionEager,
		LoRA: levers.LoRA{Rank: 2, Targets: levers.AllLinear}, Feed: models.Feed{Samples: 4, Batch: 2, Epochs: 2}})
}

// TestCopiesMatchARun checks the dry run against the copies a simulated
// device counts over the second epoch of a real run, for every workload,
// training and evaluating, resident and paged under the window policy (1
// and 3 blocks), window-paged (1 block) and the auto policy (sized from free memory, 2 blocks, the
// optimizer on the host).
func TestCopiesMatchARun(t *testing.T) {
	for _, c := range smallConfigs(t) {
		for _, train := range []bool{true, false} {
			for _, pl := range []engine.Placement{
				engine.Resident{},
				engine.Paged{Cache: cache.Config{Policy: cache.Window, Window: 1}},
				engine.Paged{Cache: cache.Config{Policy: cache.Window, Window: 3}},
				engine.Paged{Cache: cache.Config{Policy: cache.WindowPaged, Window: 1}},
				engine.Paged{Cache: cache.Config{Policy: cache.Auto}},
				engine.Paged{Cache: cache.Config{Policy: cache.Auto, Window: 2}},
				engine.Paged{Cache: cache.Config{Policy: cache.Auto, Window: 1, OptimizerOnHost: true}},
			} {
				if !train && cacheOf(pl).OptimizerOnHost {
					continue
				}
				name := fmt.Sprintf("%T/train=%v/paged=%v-%s-%d-host=%v", c, train, isPaged(pl), cacheOf(pl).Policy, cacheOf(pl).Window, cacheOf(pl).OptimizerOnHost)
				t.Run(name, func(t *testing.T) { checkCopies(t, c, train, pl) })
			}
		}
	}
}

func checkCopies(t *testing.T, c models.Config, train bool, pl engine.Placement) {
	feed := models.FeedOf(c)
	batches := feed.Samples / feed.Batch
	dev := device.NewSim(1<<40, nil)
	defer dev.Close()
	m, s, prog := loadModel(t, c, train, dev, pl)
	defer prog.Close()
	data := c.Data(1)
	var before device.Stats
	for epoch := range 2 {
		before = dev.Stats()
		for i := range batches {
			batch := data.Batch(i, feed.Batch)
			for _, n := range []*gorgonia.Node{m.Input, m.Target} {
				if err := prog.SetInput(n, batch); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := prog.Run(); err != nil {
				t.Fatalf("epoch %d batch %d: %v", epoch, i, err)
			}
		}
	}
	after := dev.Stats()
	got, err := s.Copies(pl, prog.Window(), batches, []*gorgonia.Node{m.Input, m.Target})
	if err != nil {
		t.Fatal(err)
	}
	if up, down := after.UploadBytes-before.UploadBytes, after.DownloadBytes-before.DownloadBytes; got.UploadBytes != up || got.DownloadBytes != down {
		t.Errorf("window %d: dry run %d bytes up, %d down; the run copied %d up, %d down", prog.Window(), got.UploadBytes, got.DownloadBytes, up, down)
	}
	if cacheOf(pl).Policy != cache.Auto && got.OverlapBytes != 0 {
		t.Errorf("%d bytes overlap without the auto policy's prefetch", got.OverlapBytes)
	}
	// Every batch uploads its inputs, downloads its output and pages a block
	// in at least, unless some blocks stay resident (a hybrid placement).
	if got.Count < int64(3*batches) && blocksOf(pl) == nil || got.SyncBytes() > got.UploadBytes+got.DownloadBytes {
		t.Errorf("copies %+v", got)
	}
}

// cacheOf is pl's cache configuration, the zero one when it pages nothing.
func cacheOf(pl engine.Placement) cache.Config {
	c, _ := pl.Paging()
	return c
}

// isPaged reports whether pl pages some block.
func isPaged(pl engine.Placement) bool {
	_, ok := pl.Paging()
	return ok
}

// blocksOf is a hybrid placement's blocks, nil for the others.
func blocksOf(pl engine.Placement) []engine.Where {
	if h, ok := pl.(engine.Hybrid); ok {
		return h.Blocks
	}
	return nil
}
