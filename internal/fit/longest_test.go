package fit

import (
	"testing"

	"gpuz/internal/bench"
	"gpuz/internal/hfconfig"
	"gpuz/internal/levers"
	"gpuz/internal/models"
)

// TestLongestSequences checks LongestSequences against the brute force
// it saves: for each mode on the device, the longest sequence of every
// one of the mode's configurations that fit, each searched on its own,
// and the longest of them. A small Llama-family model (SmolLM2-135M's
// shapes at the small scale: 2 layers) trains sequences of one token at
// batch 1 on the laptop card with all but 1 GiB taken, so that no
// mode reaches the model's maximum positions except through the host.
func TestLongestSequences(t *testing.T) {
	m, err := hfconfig.Load("smollm2-135m")
	if err != nil {
		t.Fatal(err)
	}
	opts := options(t, models.LLMOf(m), models.ScaleSmall, bench.TaskTrain)
	for name, v := range map[string]int{"seq-len": 1, "batch": 1} {
		if opts.Bench.Workload, err = models.WithSize(opts.Bench.Workload, name, v); err != nil {
			t.Fatal(err)
		}
	}
	opts.Bench.Batch, opts.Bench.HostMemory = 1, 2<<30
	opts.TakeBytes = 8<<30 - 1<<30
	res, err := Search(opts)
	if err != nil {
		t.Fatal(err)
	}
	limit := m.Config.MaxPositions
	got, err := LongestSequences(opts, res, limit)
	if err != nil {
		t.Fatal(err)
	}
	at := func(n int) (bench.Options, error) {
		o, err := opts.AtSeqLen(res, n)
		return o.Bench, err
	}
	want := map[bench.Mode]int{}
	for _, e := range append(res.Ranked, res.Unranked...) {
		if e.Mode.OnHost() || e.Mode.PlacesBlocks() {
			continue
		}
		n, err := longest(at, e.Candidate, res.Budget, 1, limit)
		if err != nil {
			t.Fatal(err)
		}
		want[e.Mode] = max(want[e.Mode], n)
	}
	if len(got) != len(want) || len(got) < 3 {
		t.Fatalf("the longest sequences of %d modes (%v), want the %d of %v, at least cuda, cache and managed", len(got), got, len(want), want)
	}
	for i, l := range got {
		if l.Tokens != want[l.Mode] {
			t.Errorf("%s: %d tokens (%s), want %d", l.Mode, l.Tokens, l.Candidate, want[l.Mode])
		}
		if l.Candidate.Mode != l.Mode {
			t.Errorf("%s: the configuration %s is another mode's", l.Mode, l.Candidate)
		}
		if i > 0 && l.Tokens > got[i-1].Tokens {
			t.Errorf("%s's %d tokens after %s's %d: want the longest first", l.Mode, l.Tokens, got[i-1].Mode, got[i-1].Tokens)
		}
	}
	t.Logf("%v", got)
}

// TestWindowNeedGrows checks what the search's pruning assumes: within
// a family of cache configurations (one policy, optimizer place and
// levers), a larger window never needs less of the device, so that once
// a window is over the budget every larger one is too and is ruled out
// unplanned.
func TestWindowNeedGrows(t *testing.T) {
	m, err := hfconfig.Load("smollm2-135m")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		w    models.Workload
		task bench.Task
	}{
		{"linear train", models.Linear, bench.TaskTrain},
		{"attention train", models.Attention, bench.TaskTrain},
		{"llm train", models.LLMOf(m), bench.TaskTrain},
		{"llm eval", models.LLMOf(m), bench.TaskEval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := smallPlanner(t, tc.w, tc.task)
			_, budget, _ := p.GPU() // the auto policy sizes its plan to the budget
			attention := levers.Attention(p.Header().Attention)
			last := map[string]int64{}
			for _, c := range Candidates(p.Blocks(), p.MinWindow(), tc.task == bench.TaskTrain, true, attention, nil, nil) {
				without, ok := c.Mode.WindowFamily(c.Config)
				if !ok {
					continue
				}
				mp, err := p.Plan(c.Mode, c.Config, budget, false)
				if err != nil {
					t.Fatal(err)
				}
				f := c
				f.Config = without
				need := mp.Footprint.Device
				if prev, ok := last[f.String()]; ok && need < prev {
					t.Errorf("%s needs %d bytes, less than the window before it (%d)", c, need, prev)
				}
				last[f.String()] = need
			}
			if len(last) == 0 {
				t.Fatal("no cache configuration searched")
			}
		})
	}
}
