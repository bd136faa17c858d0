package fit

import (
	"testing"

	"gpuz/internal/bench"
	"gpuz/internal/hfconfig"
	"gpuz/internal/levers"
	"gpuz/internal/models"
)

// TestDeviceBoundIsBelowTheNeed checks what the search's bound assumes:
// no hybrid split needs less of the device than the areas of the blocks
// it keeps there (deviceBound), so that a split whose bound is over the
// budget cannot fit and is ruled out unplanned. Every split of each
// setting of the levers, training and evaluation.
func TestDeviceBoundIsBelowTheNeed(t *testing.T) {
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
		{"llm train", models.LLMOf(m), bench.TaskTrain},
		{"llm eval", models.LLMOf(m), bench.TaskEval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := smallPlanner(t, tc.w, tc.task)
			_, free, _ := p.GPU()
			bound := deviceBound{p: p, areas: map[string][]int64{}}
			splits := 0
			for _, c := range Candidates(p.Blocks(), p.MinWindow(), tc.task == bench.TaskTrain, true, levers.Attention(p.Header().Attention), nil, nil) {
				least, err := bound.of(c)
				if err != nil {
					t.Fatal(err)
				}
				if c.Mode != bench.ModeHybrid {
					if least != 0 {
						t.Errorf("%s: bound %d, want 0 (only splits are bounded)", c, least)
					}
					continue
				}
				splits++
				mp, err := p.Plan(c.Mode, c.Config, free, false)
				if err != nil {
					t.Fatal(err)
				}
				if least <= 0 || least > mp.Footprint.Device {
					t.Errorf("%s: bound %d, need %d; want a bound in (0, need]", c, least, mp.Footprint.Device)
				}
			}
			if splits == 0 {
				t.Fatal("no hybrid split searched")
			}
		})
	}
}

// TestSplitsRuledOutUnplanned searches with a budget under every block's
// area, and every cache window's need (issue 44 item 6: a config of 500 layers 65,536 wide planned its
// 35,000 splits for minutes before "nothing fits"): no hybrid split is
// planned, each of them keeping a block on the device. What is planned
// is counted: every candidate but the splits and the larger windows of
// each cache family (ruled out by its smallest window over the budget).
func TestSplitsRuledOutUnplanned(t *testing.T) {
	opts, p := smallPlanner(t, models.Linear, bench.TaskTrain)
	_, free, _ := p.GPU()
	cs := Candidates(p.Blocks(), p.MinWindow(), true, true, levers.Attention(p.Header().Attention), nil, GradAccums(true, opts.Bench.Batch))
	// The budget: a byte under every block's area and every cache
	// window's need (a window holding the parameters alone, the optimizer
	// on the host, needs less than a block's area).
	least := free
	for _, c := range cs {
		areas, err := p.BlockBytes(c.Config)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range areas {
			least = min(least, n)
		}
		if _, paged := c.Mode.WindowFamily(c.Config); paged {
			mp, err := p.Plan(c.Mode, c.Config, free, false)
			if err != nil {
				t.Fatal(err)
			}
			least = min(least, mp.Footprint.Device)
		}
	}
	want, families := 0, map[string]bool{}
	for _, c := range cs {
		without, paged := c.Mode.WindowFamily(c.Config)
		f := c
		f.Config = without
		switch {
		case c.Mode == bench.ModeHybrid:
		case paged && families[f.String()]: // a larger window of a family over the budget
		default:
			families[f.String()] = paged
			want++
		}
	}
	opts.MarginPercent, opts.TakeBytes = 0, free-(least-1)
	res, err := search(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Budget != least-1 {
		t.Fatalf("budget %d, want %d", res.Budget, least-1)
	}
	if res.Searched != len(cs) || res.Planned != want {
		t.Errorf("searched %d, planned %d; want %d and %d (no split)", res.Searched, res.Planned, len(cs), want)
	}
}
