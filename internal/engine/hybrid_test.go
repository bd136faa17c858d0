package engine_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"

	"gpuz/internal/cache"
	"gpuz/internal/device"
	"gpuz/internal/engine"
	"gpuz/internal/models"
)

// hybridRun is what a few batches of a workload on one device and
// placement gave: each batch's value, every parameter after them, the
// device's copies over the last batch, its stats before each batch and
// after the last, and the program's window.
type hybridRun struct {
	values  []float32
	params  map[string][]float32
	lastUp  int64
	lastDn  int64
	peak    int64
	stats   []device.Stats
	window  int
	program *engine.Program
}

// runPlaced runs batches batches of c on dev under pl.
func runPlaced(t *testing.T, c models.Config, train bool, dev device.Device, pl engine.Placement, batches int) (hybridRun, *engine.Schedule, *models.Model) {
	t.Helper()
	m, s, prog := loadModel(t, c, train, dev, pl)
	defer prog.Close()
	feed := models.FeedOf(c)
	data := c.Data(1)
	var r hybridRun
	for i := range batches {
		before := dev.Stats()
		batch := data.Batch(i%(feed.Samples/feed.Batch), feed.Batch)
		for _, n := range []*gorgonia.Node{m.Input, m.Target} {
			if err := prog.SetInput(n, batch); err != nil {
				t.Fatal(err)
			}
		}
		v, err := prog.Run()
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		after := dev.Stats()
		r.stats = append(r.stats, before)
		r.values = append(r.values, v)
		r.lastUp, r.lastDn = after.UploadBytes-before.UploadBytes, after.DownloadBytes-before.DownloadBytes
	}
	r.peak, r.window = dev.Stats().PeakBytes, prog.Window()
	r.stats = append(r.stats, dev.Stats())
	r.params = map[string][]float32{}
	for _, b := range m.Blocks {
		for _, n := range b.Params {
			values, err := prog.Read(n)
			if err != nil {
				t.Fatal(err)
			}
			r.params[n.Name()] = values
		}
	}
	return r, s, m
}

// hostEnds places the first and last blocks on the host and every other
// block on the device, alternating with the host in the middle when there
// are enough blocks, so that activations cross in both directions more
// than once.
func hostEnds(n int) []engine.Where {
	w := make([]engine.Where, n)
	w[0], w[n-1] = engine.OnHost, engine.OnHost
	if n > 4 {
		w[n/2] = engine.OnHost
	}
	return w
}

// hostCudaCache places block 0 on the host, the last block resident on
// the device and the blocks between paged (cache), but the middle one on
// the host when there are more than four: every place is used, and with
// four blocks or more the cache pages between two blocks or more.
func hostCudaCache(n int) []engine.Where {
	w := make([]engine.Where, n)
	for b := 1; b < n-1; b++ {
		w[b] = engine.InCache
	}
	w[0], w[n-1] = engine.OnHost, engine.OnDevice
	if n > 4 {
		w[n/2] = engine.OnHost
	}
	return w
}

// hybridPlacements are the placements TestHybridMatchesHost runs for a
// model of n blocks: host and cuda blocks, then host, cuda and cache
// blocks under each cache policy (a window of one block, and the auto
// policy with a window of two, its optimizer on the host when training).
func hybridPlacements(n int, train bool) []engine.Placement {
	mixed := hostCudaCache(n)
	return []engine.Placement{
		engine.Hybrid{Blocks: hostEnds(n)},
		engine.Hybrid{Blocks: mixed, Cache: cache.Config{Policy: cache.Window, Window: 1}},
		engine.Hybrid{Blocks: mixed, Cache: cache.Config{Policy: cache.WindowPaged, Window: 1}},
		engine.Hybrid{Blocks: mixed, Cache: cache.Config{Policy: cache.Auto, Window: 2, OptimizerOnHost: train}},
	}
}

// TestHybridMatchesHost checks, for every workload at the small scale,
// training and evaluating, that hybrid placements on the simulated
// device, with host and cuda blocks and with host, cuda and cache blocks,
// give losses and weights bit-identical to the all-host run (the same
// host kernels in the same order), that their device footprint is the
// device's measured peak, and that the dry run of Copies counts the
// copies the device made.
func TestHybridMatchesHost(t *testing.T) {
	const batches = 3
	for _, c := range smallConfigs(t) {
		m, err := c.Build()
		if err != nil {
			t.Fatal(err)
		}
		for _, train := range []bool{true, false} {
			want, _, _ := runPlaced(t, c, train, device.NewHost(), engine.Resident{}, batches)
			for _, pl := range hybridPlacements(len(m.Blocks), train) {
				name := fmt.Sprintf("%T/train=%v/%s", c, train, engine.PlaceText(blocksOf(pl)))
				if isPaged(pl) {
					name += fmt.Sprintf("/%s-%d-host=%v", cacheOf(pl).Policy, cacheOf(pl).Window, cacheOf(pl).OptimizerOnHost)
				}
				t.Run(name, func(t *testing.T) { checkHybrid(t, c, train, pl, want, batches) })
			}
		}
	}
}

func checkHybrid(t *testing.T, c models.Config, train bool, pl engine.Placement, want hybridRun, batches int) {
	t.Helper()
	dev := device.NewSim(1<<40, nil)
	defer dev.Close()
	got, s, model := runPlaced(t, c, train, dev, pl, batches)
	for i := range want.values {
		if math.Float32bits(got.values[i]) != math.Float32bits(want.values[i]) {
			t.Errorf("batch %d: hybrid %v, host %v", i, got.values[i], want.values[i])
		}
	}
	for name, w := range want.params {
		for j := range w {
			if math.Float32bits(got.params[name][j]) != math.Float32bits(w[j]) {
				t.Errorf("%s[%d]: hybrid %v, host %v", name, j, got.params[name][j], w[j])
				break
			}
		}
	}
	free, _, _ := dev.MemInfo()
	fp := s.Footprint(pl, free)
	if got.peak != fp.Device {
		t.Errorf("device peak %d bytes, footprint %d", got.peak, fp.Device)
	}
	if fp.Host == 0 {
		t.Errorf("hybrid footprint %+v: nothing on the host", fp)
	}
	if got.lastUp == 0 || got.lastDn == 0 {
		t.Errorf("no activations crossed: %d up, %d down", got.lastUp, got.lastDn)
	}
	if isPaged(pl) { // the dry run counts an epoch in steady state
		checkCopies(t, c, train, pl)
		return
	}
	copies, err := s.Copies(pl, fp.Window, 1, []*gorgonia.Node{model.Input, model.Target})
	if err != nil {
		t.Fatal(err)
	}
	if copies.UploadBytes != got.lastUp || copies.DownloadBytes != got.lastDn {
		t.Errorf("dry run %d bytes up, %d down per batch; the run copied %d up, %d down",
			copies.UploadBytes, copies.DownloadBytes, got.lastUp, got.lastDn)
	}
}

// TestAttentionReportPlacement runs the reference report's recommendation
// on small attention: the embedding (block 1) and the final linear, the
// head (block 0), on the host, the decoder layers on the device. Per
// batch exactly the activations into the first decoder layer and out of
// the last cross: forward, the embedding's output goes up and the last
// layer's output comes down; training, their gradients cross back the
// other way. The device holds only the decoders.
func TestAttentionReportPlacement(t *testing.T) {
	c, _, err := models.Attention.Configure("small", nil)
	if err != nil {
		t.Fatal(err)
	}
	ac := c.(*models.AttentionConfig)
	m, err := c.Build()
	if err != nil {
		t.Fatal(err)
	}
	if m.Blocks[0].Name != "head" || m.Blocks[1].Name != "embed" {
		t.Fatalf("blocks 0 and 1 are %s and %s, want head and embed", m.Blocks[0].Name, m.Blocks[1].Name)
	}
	place := make([]engine.Where, len(m.Blocks))
	place[0], place[1] = engine.OnHost, engine.OnHost
	pl := engine.Hybrid{Blocks: place}
	if got, want := engine.PlaceText(place), fmt.Sprintf("host:0-1,cuda:2-%d", len(m.Blocks)-1); got != want {
		t.Errorf("PlaceText %q, want %q", got, want)
	}
	activation := 4 * int64(ac.Batch*ac.SeqLen*ac.DModel) // one [tokens, d] activation
	for _, train := range []bool{true, false} {
		dev := device.NewSim(1<<40, nil)
		r, s, _ := runPlaced(t, c, train, dev, pl, 2)
		dev.Close()
		crossings := int64(1)
		if train {
			crossings = 2 // the activation and its gradient
		}
		if r.lastUp != crossings*activation || r.lastDn != crossings*activation {
			t.Errorf("train=%v: %d bytes up and %d down per batch, want %d each (%d activations of %d bytes)",
				train, r.lastUp, r.lastDn, crossings*activation, crossings, activation)
		}
		fp, all := s.Footprint(pl, 1<<40), s.Footprint(engine.Resident{}, 1<<40)
		if fp.Device >= all.Device || fp.Host == 0 {
			t.Errorf("train=%v: footprint %+v, all on the device %+v", train, fp, all)
		}
	}
}

// TestHybridValidate checks that a hybrid placement is refused when it
// names no block, or when some block is paged and the cache blocks'
// configuration cannot be used; with no block paged the configuration is
// unused and not checked (issue 44 item 23: the cache part unchecked
// passed every test, cache.New refusing it later).
func TestHybridValidate(t *testing.T) {
	paged := []engine.Where{engine.OnHost, engine.InCache, engine.OnDevice}
	split := []engine.Where{engine.OnHost, engine.OnDevice}
	for _, tc := range []struct {
		name    string
		h       engine.Hybrid
		wantErr string // "" when valid
	}{
		{"no block", engine.Hybrid{Cache: cache.Config{Policy: cache.Auto}}, "names no block"},
		{"paged, auto", engine.Hybrid{Blocks: paged, Cache: cache.Config{Policy: cache.Auto}}, ""},
		{"paged, window 2", engine.Hybrid{Blocks: paged, Cache: cache.Config{Policy: cache.Window, Window: 2}}, ""},
		{"paged, unknown policy", engine.Hybrid{Blocks: paged, Cache: cache.Config{Policy: "lru"}}, `unknown cache policy "lru"`},
		{"paged, negative window", engine.Hybrid{Blocks: paged, Cache: cache.Config{Policy: cache.Auto, Window: -1}}, "negative window -1"},
		{"paged, window of 0", engine.Hybrid{Blocks: paged, Cache: cache.Config{Policy: cache.Window}}, "at least one block"},
		{"paged, host optimizer on the window", engine.Hybrid{Blocks: paged,
			Cache: cache.Config{Policy: cache.WindowPaged, Window: 2, OptimizerOnHost: true}}, "auto-policy option"},
		{"nothing paged, cache unused", engine.Hybrid{Blocks: split, Cache: cache.Config{Policy: "lru", Window: -1}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.h.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate: %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Validate: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
